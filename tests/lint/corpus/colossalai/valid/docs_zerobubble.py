# https://github.com/hpcaitech/ColossalAI/blob/main/docs/source/en/features/zerobubble_pipeline_parallelism.md
from colossalai.booster import Booster
from colossalai.booster.plugin import HybridParallelPlugin

zbv_schedule = None  # built by the tutorial's scheduler graph
plugin = HybridParallelPlugin(
    pp_size=4,
    num_microbatches=4,
    tp_size=1,
    sp_size=1,
    zero_stage=1,
    initial_scale=1,
    find_unused_parameters=True,
    pp_style="zbv",
    scheduler_nodes=zbv_schedule,
    num_model_chunks=2,
)
booster = Booster(plugin=plugin)
