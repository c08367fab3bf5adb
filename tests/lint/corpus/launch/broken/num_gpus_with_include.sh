#!/bin/bash
deepspeed --num_gpus 2 --include worker-0:0,1 train.py
