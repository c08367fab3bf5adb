#!/bin/bash
# https://colossalai.org/docs/basics/launch_colossalai
colossalai run --nproc_per_node 4 --master_port 29505 train.py
