#!/bin/bash
export CUDA_VISIBLE_DEVICES=0,1
torchrun --nproc_per_node 4 train.py
