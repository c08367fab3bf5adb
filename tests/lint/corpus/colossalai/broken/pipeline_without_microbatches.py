# handmade
from colossalai.booster import Booster
from colossalai.booster.plugin import HybridParallelPlugin

plugin = HybridParallelPlugin(tp_size=1, pp_size=2)
booster = Booster(plugin=plugin)
