"""What accelerate 1.15.0 itself makes of an accelerate config, without starting a process: the config is
loaded (``load_config_from_file``), checked as ``accelerate launch --config_file FILE train.py`` checks it
(``_validate_launch_command``), turned into the launcher's environment (``utils/launch.py``), and the DeepSpeed or
FSDP plugin is built from that environment, as each rank builds it (and DeepSpeed validates the ZeRO section the
DeepSpeed plugin hands it). The FSDP plugin is told the rank has GPU 0, which is all it asks of the device. Returns None when all of it passes, else
the error accelerate raises, as text."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from unittest import mock


def accelerate_verdict(config: Path, *launch_args: str) -> str | None:
    from accelerate.commands.launch import _validate_launch_command, launch_command_parser
    from accelerate.utils import launch as launchers

    args = launch_command_parser().parse_args(["--config_file", str(config), *launch_args, "train.py"])
    try:
        with contextlib.chdir(config.parent):  # a deepspeed_config_file is read from the working directory
            args, defaults, mp_from_config = _validate_launch_command(args)
            if args.use_deepspeed:  # launch.py launch_command
                fields = list(defaults.deepspeed_config) + (["mixed_precision"] if mp_from_config else [])
                args.deepspeed_fields_from_accelerate_config = ",".join(fields)
                _, env = launchers.prepare_deepspeed_cmd_env(args)
                with mock.patch.dict(os.environ, env):
                    from accelerate.utils import DeepSpeedPlugin

                    plugin = DeepSpeedPlugin()
                from deepspeed.runtime.zero.config import DeepSpeedZeroConfig

                DeepSpeedZeroConfig(**plugin.deepspeed_config["zero_optimization"])  # what deepspeed.initialize reads
            elif args.use_fsdp or args.multi_gpu:
                env = launchers.prepare_multi_gpu_env(args)
                if args.use_fsdp:
                    import torch

                    # the plugin asks the rank's GPU for its index (sync_module_states); this machine may have none
                    with mock.patch.dict(os.environ, env), \
                            mock.patch("accelerate.utils.dataclasses.is_cuda_available", return_value=True), \
                            mock.patch.object(torch.cuda, "current_device", return_value=0):
                        from accelerate.utils import FullyShardedDataParallelPlugin

                        FullyShardedDataParallelPlugin()
            else:
                launchers.prepare_simple_launcher_cmd_env(args)
    except Exception as e:  # noqa: BLE001 - any error accelerate raises is its verdict
        return f"{type(e).__name__}: {e}"
    return None
