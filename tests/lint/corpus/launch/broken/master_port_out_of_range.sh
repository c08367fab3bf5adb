#!/bin/bash
torchrun --nproc_per_node 8 --master_port 70000 train.py
