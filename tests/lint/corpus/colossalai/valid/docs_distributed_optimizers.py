# https://github.com/hpcaitech/ColossalAI/blob/main/docs/source/en/features/distributed_optimizers.md
from colossalai.booster import Booster
from colossalai.booster.plugin import HybridParallelPlugin

plugin = HybridParallelPlugin(tp_size=2, zero_stage=2, pp_size=1, enable_all_optimization=True)
booster = Booster(plugin=plugin)
