#!/bin/bash
deepspeed --hostfile hostfile --include worker-9:0 train.py
