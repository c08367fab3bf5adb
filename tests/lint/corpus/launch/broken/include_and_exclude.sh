#!/bin/bash
deepspeed --include worker-0 --exclude worker-1:0 train.py
