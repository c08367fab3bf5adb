#!/bin/bash
#SBATCH --nodes=2
srun --nodes=2 --ntasks-per-node=4 python train.py
