# https://github.com/hpcaitech/ColossalAI/blob/main/docs/source/en/advanced_tutorials/train_vit_with_hybrid_parallelism.md
from colossalai.booster import Booster
from colossalai.booster.plugin import HybridParallelPlugin

plugin = HybridParallelPlugin(
    tp_size=4,
    pp_size=1,
    enable_all_optimization=True,
)
booster = Booster(plugin=plugin)
