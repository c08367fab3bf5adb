"""Checks of an accelerate config file (the ``LINT-ACC-*`` rules): the YAML (or JSON) that ``accelerate config``
writes to ``default_config.yaml`` and ``accelerate launch --config_file`` reads.

What accelerate accepts is data derived from the installed accelerate by ``tests/lint/gen_accelerate_schema.py``
into ``accelerate_schema.yaml`` (the keys of ``ClusterConfig``, the launch arguments each section is copied onto,
the enums values are converted with, ``to-fsdp2``'s mapping). The cross-field checks are written here after
accelerate 1.15.0's own code, cited per check: ``commands/config/config_args.py`` (loading), ``commands/launch.py``
(``_validate_launch_command``), ``utils/launch.py`` (the environment each launcher gets) and ``utils/dataclasses.py``
(``DeepSpeedPlugin``, ``FullyShardedDataParallelPlugin``).
"""

from __future__ import annotations

import difflib
from functools import lru_cache

import yaml

from distdx.lint.models import Hit
from distdx.lint.source import Parsed
from distdx.yamlio import bundled_yaml

# launch.py:1229-1243: the distributed types `accelerate launch` runs with its multi-GPU launcher (args.multi_gpu)
MULTI_DEVICE = ("MULTI_GPU", "MULTI_NPU", "MULTI_MLU", "MULTI_SDAA", "MULTI_MUSA", "MULTI_XPU", "MULTI_HPU",
                "MULTI_NEURON")
# utils/launch.py prepare_multi_gpu_env / prepare_deepspeed_cmd_env: the launches that go through torchrun's
# rendezvous, which needs main_process_ip on more than one machine
TORCHRUN_TYPES = (*MULTI_DEVICE, "FSDP", "MEGATRON_LM")
# keys that mark a mapping as an accelerate config when distributed_type itself is missing or misspelt
_TYPICAL = frozenset({"num_processes", "num_machines", "machine_rank", "main_training_function", "main_process_ip",
                      "main_process_port", "rdzv_backend", "same_network", "use_cpu", "downcast_bf16", "gpu_ids",
                      "deepspeed_config", "fsdp_config", "megatron_lm_config", "dynamo_config", "fp8_config",
                      "tpu_env", "tpu_use_cluster", "enable_cpu_affinity"})


@lru_cache(maxsize=1)
def schema() -> dict:
    return bundled_yaml("distdx.lint", "accelerate_schema.yaml")


@lru_cache(maxsize=1)
def history() -> dict:
    """Keys older releases read (``accelerate_removed.yaml``): ``renamed`` by dotted path, ``removed``."""
    return bundled_yaml("distdx.lint", "accelerate_removed.yaml")


def looks_like_accelerate(data: object) -> bool:
    """A mapping with ``distributed_type`` or ``compute_environment`` at the top, or two keys only accelerate
    configs have (so a config whose ``distributed_type`` is missing or misspelt is still recognised)."""
    if not isinstance(data, dict):
        return False
    keys = {str(k) for k in data}
    return bool(keys & {"distributed_type", "compute_environment"}) or len(keys & _TYPICAL) >= 2


def deepspeed_config_file(data: object) -> str | None:
    """The DeepSpeed JSON an accelerate config hands to DeepSpeed (``deepspeed_config.deepspeed_config_file``)."""
    section = data.get("deepspeed_config") if isinstance(data, dict) else None
    path = section.get("deepspeed_config_file") if isinstance(section, dict) else None
    return path if isinstance(path, str) and path.strip() and path != "none" else None


def num_processes(data: object) -> int | None:
    value = data.get("num_processes") if isinstance(data, dict) else None
    return value if _int(value) and value > 0 else None


def _int(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def section_key(section: str, key: str) -> str:
    """The launch argument a section key lands on (launch.py:1269-1275 adds the prefix when it is missing)."""
    prefix = schema()["sections"].get(section, {}).get("prefix", "")
    return key if not prefix or key.startswith(prefix) else prefix + key


def written_key(data: dict, section: str, name: str) -> str | None:
    """The key as written in ``section`` that lands on the launch argument ``name`` (None when absent)."""
    block = data.get(section)
    if not isinstance(block, dict):
        return None
    return next((str(k) for k in block if section_key(section, str(k)) == name), None)


def fsdp_version(data: dict) -> int:
    key = written_key(data, "fsdp_config", "fsdp_version")
    value = data["fsdp_config"][key] if key else 1
    return int(value) if str(value).strip().isdigit() else 1


def accepted(spec: dict, value: object) -> bool:
    """Whether accelerate converts ``value`` with the enum ``spec`` (``case``: how it normalises a string first;
    ``numbered``: it also takes the 1-based index, as int(...) of the string)."""
    values = spec["values"]
    if spec.get("numbered") and (_int(value) or isinstance(value, str) and value.isdigit()):
        return 1 <= int(value) <= len(values)
    if _int(value) and all(_int(v) for v in values):
        return value in values
    if not isinstance(value, str):
        return False
    if all(_int(v) for v in values):
        return value.strip().isdigit() and int(value) in values
    case = spec.get("case")
    return (value.upper() if case == "upper" else value.lower() if case == "lower" else value) in values


def nearest_choice(spec: dict, value: object) -> object | None:
    """The one accepted value ``value`` was meant to be: YAML's ``NO``/``no`` read as false, the same word in
    another case, or the single close spelling; None when there is no such value or more than one."""
    values = [v for v in spec["values"] if isinstance(v, str)]
    if value is False:
        return next((v for v in values if v.lower() == "no"), None)
    if not isinstance(value, str) or not values:
        return None
    same = [v for v in values if v.lower() == value.lower()]
    if len(same) == 1:
        return same[0]
    close = difflib.get_close_matches(value.upper(), [v.upper() for v in values], n=2, cutoff=0.75)
    if len(close) != 1:
        return None
    return next(v for v in values if v.upper() == close[0])


def choice_spec(data: dict, path: str) -> dict:
    """The values accelerate accepts for the setting at ``path`` (``section.argument`` or a top-level key)."""
    s = schema()
    if path == "distributed_type" and data.get("compute_environment") == "AMAZON_SAGEMAKER":
        return {"values": s["sagemaker_distributed_type"]}
    spec = s["choices"][path]
    if path == "fsdp_config.fsdp_state_dict_type" and fsdp_version(data) == 2:  # dataclasses.py:2070
        return {**spec, "values": s["fsdp2_state_dict_type"], "numbered": False}
    return spec


def repair_value(data: dict, field: str, value: object) -> object | None:
    """The one accepted value a refused ``value`` at ``field`` (as written) stands for, or None."""
    section, _, key = field.rpartition(".")
    name = section_key(section, key) if section else key
    if name == "fsdp_reshard_after_forward":
        if fsdp_version(data) == 2:  # accelerate to-fsdp2's own mapping of the FSDP1 strategies
            mapped = schema()["fsdp2_values"]["fsdp_sharding_strategy"]
            return mapped.get(value.upper()) if isinstance(value, str) else None
        return nearest_choice(schema()["choices"]["fsdp_config.fsdp_sharding_strategy"], value)
    path = f"{section}.{name}" if section else schema()["legacy_top_level"].get(name, name)
    return nearest_choice(choice_spec(data, path), value) if path in schema()["choices"] else None


class _Checker:
    def __init__(self, parsed: Parsed) -> None:
        self.parsed = parsed
        self.data: dict = parsed.data  # type: ignore[assignment]
        self.schema = schema()
        self.hits: list[Hit] = []
        self.sagemaker = self.data.get("compute_environment") == "AMAZON_SAGEMAKER"
        dt = self.data.get("distributed_type")
        self.distributed_type = dt if isinstance(dt, str) else None

    def hit(self, code: str, field: str, value: object, message: str) -> None:
        self.hits.append(Hit(code, field, value, message, *self.parsed.where(field)))

    def section(self, name: str) -> dict:
        block = self.data.get(name)
        return block if isinstance(block, dict) else {}

    def run(self) -> list[Hit]:
        self.keys()
        self.values()
        self.machines()
        self.deepspeed()
        self.fsdp()
        return self.hits

    # ------------------------------------------------------------------ keys
    def keys(self) -> None:
        s = self.schema
        if "distributed_type" not in self.data:  # config_args.py:109 process_config
            self.hit("LINT-ACC-004", "distributed_type", None,
                     "no `distributed_type`: accelerate refuses the file (\"A `distributed_type` must be specified\")")
        known = set(s["sagemaker_top_level"] if self.sagemaker else s["top_level"]) | set(s["legacy_top_level"])
        for key in self.data:
            key = str(key)
            if key in known:
                continue
            gone = history()["removed"].get(key)
            close = difflib.get_close_matches(key, sorted(known), n=1, cutoff=0.8)
            hint = (f"; accelerate dropped it after {gone['last']}" if gone else
                    f"; did you mean `{close[0]}`?" if close else "")
            self.hit("LINT-ACC-001", key, self.data[key],
                     f"`{key}` is not a key of accelerate's {'SageMakerConfig' if self.sagemaker else 'ClusterConfig'}: "
                     f"accelerate refuses the file (\"had unknown keys\"){hint}")
        for name, spec in s["sections"].items():
            if spec.get("open"):
                continue
            prefix, names = spec["prefix"], spec["keys"]
            for key in self.section(name):
                key = str(key)
                full = section_key(name, key)
                if full in names:
                    continue
                renamed = history()["renamed"].get(f"{name}.{full}")
                close = [renamed["new"]] if renamed else difflib.get_close_matches(full, names, n=1, cutoff=0.8)
                suggestion = (close[0] if key.startswith(prefix) or not prefix else close[0][len(prefix):]) if close else ""
                hint = f"; did you mean `{name}.{suggestion}`?" if close else ""
                if renamed:
                    hint = f"; renamed after accelerate {renamed['last']}{hint}"
                self.hit("LINT-ACC-002", f"{name}.{key}", self.section(name)[key],
                         f"`{name}.{key}` is no `accelerate launch` setting: launch copies it onto its arguments, "
                         f"where nothing reads it, so it has no effect{hint}")

    # ------------------------------------------------------------------ values
    def values(self) -> None:
        for path in self.schema["choices"]:
            section, _, name = path.rpartition(".")
            key = written_key(self.data, section, name) if section else name if name in self.data else None
            if key is None:
                continue
            value = self.data[section][key] if section else self.data[key]
            if value is None:  # null: accelerate's default
                continue
            if path == "distributed_type" and value is False:  # config_args.py:168 converts strings only; an unquoted
                continue  # NO stays false, which launch.py:1228-1246 treats as NO
            self.choice(f"{section}.{key}" if section else key, value, choice_spec(self.data, path))
        for old, path in self.schema["legacy_top_level"].items():  # config_args.py:115 moves them into place
            if path in self.schema["choices"] and self.data.get(old) is not None:
                self.choice(old, self.data[old], choice_spec(self.data, path))
        key = written_key(self.data, "fsdp_config", "fsdp_reshard_after_forward")
        value = self.data["fsdp_config"][key] if key is not None else None
        if value is None:
            return
        field = f"fsdp_config.{key}"
        if fsdp_version(self.data) != 2:
            self.choice(field, value, self.schema["choices"]["fsdp_config.fsdp_sharding_strategy"])
        elif not isinstance(value, bool) and str(value).lower() not in self.schema["bool_words"]:
            new = repair_value(self.data, field, value)  # dataclasses.py:1859-1866: str_to_bool under FSDP2
            hint = f"; did you mean `{yaml.safe_dump(new).split(chr(10))[0]}`?" if new is not None else ""
            self.hit("LINT-ACC-003", field, value, f"`{field}` is {value!r}: under fsdp_version 2 it is true or false "
                     f"(accelerate's str_to_bool raises \"invalid truth value\"){hint}")

    def choice(self, field: str, value: object, spec: dict) -> None:
        if accepted(spec, value):
            return
        shown = ", ".join(str(v) for v in spec["values"])
        read_as = " (YAML reads an unquoted no as false: quote it)" if isinstance(value, bool) else ""
        suggestion = nearest_choice(spec, value)
        hint = f"; did you mean `{suggestion}`?" if suggestion is not None else ""
        self.hit("LINT-ACC-003", field, value,
                 f"`{field}` is {value!r}{read_as}: accelerate accepts {shown}{hint}")

    # ------------------------------------------------------------------ machines and processes
    def machines(self) -> None:
        d = self.data
        machines, rank, procs = d.get("num_machines", 1), d.get("machine_rank", 0), d.get("num_processes")
        if not _int(machines) or machines < 1:
            return
        if _int(rank) and not 0 <= rank < machines:  # torchrun --node_rank / deepspeed --node_rank
            self.hit("LINT-ACC-005", "machine_rank", rank,
                     f"machine_rank {rank} with num_machines {machines}: ranks run from 0 to {machines - 1}, so this "
                     "machine never joins the rendezvous and the others wait for it")
        launched = self.distributed_type in (*TORCHRUN_TYPES, "DEEPSPEED")
        if launched and machines > 1 and _int(procs) and procs > 0 and procs % machines:
            per = procs // machines  # utils/launch.py: nproc_per_node = num_processes // num_machines
            self.hit("LINT-ACC-006", "num_processes", procs,
                     f"num_processes {procs} over num_machines {machines}: accelerate starts {per} per machine, "
                     f"{per * machines} in all, not {procs}")
        launcher = self.section("deepspeed_config").get("deepspeed_multinode_launcher", "pdsh")
        torchrun = self.distributed_type in TORCHRUN_TYPES or self.distributed_type == "DEEPSPEED" and launcher == "standard"
        if torchrun and machines > 1 and not d.get("main_process_ip"):
            self.hit("LINT-ACC-007", "main_process_ip", None,
                     f"{machines} machines and no main_process_ip: utils/launch.py builds the rendezvous endpoint "
                     "\"None:PORT\" unless `accelerate launch --main_process_ip` is given on every machine")
        gpu_ids = d.get("gpu_ids")
        if gpu_ids is not None and not isinstance(gpu_ids, str):  # launch.py:1258 calls gpu_ids.split(",")
            self.hit("LINT-ACC-011", "gpu_ids", gpu_ids,
                     f"gpu_ids is the number {gpu_ids!r}: accelerate launch calls .split(\",\") on it and fails; "
                     "write it as a string")
        elif (isinstance(gpu_ids, str) and gpu_ids != "all" and len(gpu_ids.split(",")) < 2
              and self.distributed_type in MULTI_DEVICE and machines <= 1):
            self.hit("LINT-ACC-011", "gpu_ids", gpu_ids,
                     f"gpu_ids {gpu_ids!r} names one GPU for {self.distributed_type} on one machine: accelerate launch "
                     "stops (\"Less than two GPU ids were configured\")")

    # ------------------------------------------------------------------ DeepSpeed
    def deepspeed(self) -> None:
        if self.distributed_type != "DEEPSPEED":
            return
        ds = self.section("deepspeed_config")
        if deepspeed_config_file(self.data):  # dataclasses.py DeepSpeedPlugin._deepspeed_config_checks
            for name in self.schema["deepspeed_config_file_replaces"]:
                if name == "mixed_precision":
                    if self.data.get("mixed_precision") is not None:  # launch.py:1291 mp_from_config_flag
                        self.hit("LINT-ACC-008", "mixed_precision", self.data["mixed_precision"],
                                 "mixed_precision next to deepspeed_config_file: accelerate stops (\"the following "
                                 "accelerate config variables will be ignored\"); the DeepSpeed file's fp16/bf16 decide")
                elif name in ds:
                    self.hit("LINT-ACC-008", f"deepspeed_config.{name}", ds[name],
                             f"deepspeed_config.{name} next to deepspeed_config_file: accelerate stops (\"the following "
                             "accelerate config variables will be ignored\"); set it in the DeepSpeed file")
            return
        flag, stage = ds.get("zero3_init_flag"), ds.get("zero_stage", 2)  # DeepSpeedPlugin: stage 2 by default
        if (flag is True or str(flag).lower() == "true") and str(stage) != "3":
            self.hit("LINT-ACC-009", "deepspeed_config.zero3_init_flag", flag,
                     f"zero3_init_flag with ZeRO stage {stage}: accelerate warns \"only applicable for ZeRO Stage 3\" "
                     "and turns it off")

    # ------------------------------------------------------------------ FSDP
    def fsdp(self) -> None:
        if self.distributed_type != "FSDP":
            return
        fsdp = self.section("fsdp_config")
        if fsdp_version(self.data) == 2:  # commands/to_fsdp2.py ARGUMENT_KEY_MAPPING
            for name, status in self.schema["fsdp2_removed"].items():
                key = written_key(self.data, "fsdp_config", name)
                if key is not None:
                    self.hit("LINT-ACC-010", f"fsdp_config.{key}", fsdp[key],
                             f"`{key}` under fsdp_version 2: {status.replace('_', ' ')} in FSDP2, so it has no effect")
            for name, new in self.schema["fsdp2_renamed"].items():
                key = written_key(self.data, "fsdp_config", name)
                if key is not None:
                    self.hit("LINT-ACC-010", f"fsdp_config.{key}", fsdp[key],
                             f"`{key}` under fsdp_version 2: FSDP2 reads `{new}` instead, so it has no effect")
        sync = written_key(self.data, "fsdp_config", "fsdp_sync_module_states")
        ram = written_key(self.data, "fsdp_config", "fsdp_cpu_ram_efficient_loading")
        # utils/launch.py:306 tests the values as Python does: a YAML bool as is, any non-empty string (even "false")
        # as true; both default to the string "true" when absent
        if sync is not None and not fsdp[sync] and (ram is None or fsdp[ram]):
            self.hit("LINT-ACC-012", f"fsdp_config.{sync}", fsdp[sync],
                     "fsdp_cpu_ram_efficient_loading is on (it is unless set to false) and fsdp_sync_module_states is "
                     "off: accelerate launch stops (\"set `--fsdp_sync_module_states` to `True`\")")


def check_accelerate(parsed: Parsed) -> list[Hit]:
    if not isinstance(parsed.data, dict):
        return []
    return _Checker(parsed).run()
