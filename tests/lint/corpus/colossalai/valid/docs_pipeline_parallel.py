# https://github.com/hpcaitech/ColossalAI/blob/main/docs/source/en/features/pipeline_parallel.md
from colossalai.booster import Booster
from colossalai.booster.plugin import HybridParallelPlugin

plugin = HybridParallelPlugin(tp_size=1,
                              pp_size=2,
                              num_microbatches=None,
                              microbatch_size=1,
                              enable_all_optimization=True,
                              zero_stage=1,
                              precision='fp16',
                              initial_scale=1)
booster = Booster(plugin=plugin)
