# handmade
from colossalai.booster import Booster
from colossalai.booster.plugin import HybridParallelPlugin

plugin = HybridParallelPlugin(tp_size=2, pp_size=1, zero_stage=3)
booster = Booster(plugin=plugin)
