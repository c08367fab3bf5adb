# handmade
from colossalai.booster import Booster
from colossalai.booster.plugin import HybridParallelPlugin

plugin = HybridParallelPlugin(tp_size=4, pp_size=3, num_microbatches=4)
booster = Booster(plugin=plugin)
