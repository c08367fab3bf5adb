#!/bin/bash
torchrun --nnodes 2 --node_rank 2 --nproc_per_node 8 --master_addr node0 train.py
