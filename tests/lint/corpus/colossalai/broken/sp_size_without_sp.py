# handmade
from colossalai.booster import Booster
from colossalai.booster.plugin import HybridParallelPlugin

TP = 2
plugin = HybridParallelPlugin(tp_size=TP, pp_size=1, sp_size=2)
booster = Booster(plugin=plugin)
