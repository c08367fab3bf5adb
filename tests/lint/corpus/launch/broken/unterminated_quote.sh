#!/bin/bash
deepspeed --include "worker-0:0,1 train.py
