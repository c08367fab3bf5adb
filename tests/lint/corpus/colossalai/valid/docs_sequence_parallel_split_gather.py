# https://github.com/hpcaitech/ColossalAI/blob/main/docs/source/en/features/sequence_parallelism.md
from colossalai.booster import Booster
from colossalai.booster.plugin import HybridParallelPlugin

plugin = HybridParallelPlugin(
    tp_size=4,
    pp_size=1,
    sp_size=1,
    enable_all_optimization=True,
    enable_sequence_parallelism=True,
    sequence_parallelism_mode="split_gather",
)
booster = Booster(plugin=plugin)
