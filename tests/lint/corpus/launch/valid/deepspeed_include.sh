#!/bin/bash
# https://www.deepspeed.ai/getting-started/#resource-configuration-multi-node
deepspeed --include="worker-2:0,1" train.py --deepspeed --deepspeed_config ds_config.json
