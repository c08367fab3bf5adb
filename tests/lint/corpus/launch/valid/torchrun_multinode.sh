#!/bin/bash
# https://pytorch.org/docs/stable/elastic/run.html (multi-node, static rendezvous)
torchrun --nnodes=2 --nproc-per-node=8 --node-rank=1 --master-addr=node0 --master-port=29500 train.py --epochs 3
