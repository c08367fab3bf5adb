# https://github.com/hpcaitech/ColossalAI/blob/main/docs/source/en/advanced_tutorials/train_vit_with_hybrid_parallelism.md
from colossalai.booster import Booster
from colossalai.booster.plugin import HybridParallelPlugin

plugin = HybridParallelPlugin(
    tp_size=2,
    pp_size=1,
    zero_stage=0,
    precision="fp16",
    initial_scale=1,
)
booster = Booster(plugin=plugin)
