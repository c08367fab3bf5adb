#!/bin/bash
GPUS_PER_NODE=8
NNODES=1
TP=2
torchrun --nproc_per_node $GPUS_PER_NODE --nnodes $NNODES pretrain_gpt.py \
    --tensor-model-parallel-size $TP \
    --num-layers 24 \
    --hidden-size 2048 \
    --num-attention-heads 16 \
    --seq-length 4096 \
    --max-position-embeddings 2048 \
    --micro-batch-size 2 \
    --global-batch-size 64 \
    --bf16
