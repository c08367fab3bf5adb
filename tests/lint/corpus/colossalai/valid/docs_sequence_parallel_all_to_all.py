# https://github.com/hpcaitech/ColossalAI/blob/main/docs/source/en/features/sequence_parallelism.md
from colossalai.booster import Booster
from colossalai.booster.plugin import HybridParallelPlugin

plugin = HybridParallelPlugin(
    tp_size=2,
    pp_size=1,
    sp_size=2,
    enable_all_optimization=True,
    enable_sequence_parallelism=True,
    sequence_parallelism_mode="all_to_all",
)
booster = Booster(plugin=plugin)
