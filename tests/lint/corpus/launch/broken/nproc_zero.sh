#!/bin/bash
torchrun --nproc_per_node 0 train.py
