"""Typed loaders for ``checks.yaml`` (the catalogue) and ``compat.yaml`` (the version tables)."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from types import MappingProxyType
from typing import Mapping


from distdx.doctor.models import CheckSpec
from distdx.knowledge.catalogue import (
    catalogue_error,
    entries,
    fix_steps,
    lifecycle,
    references,
    severity_of,
    taxonomy_target,
)
from distdx.yamlio import bundled_yaml

CODE_RE = re.compile(r"^DOC-[A-Z0-9]+-\d{3}$")
_REQUIRED = ("code", "title", "area", "severity", "symptom", "root_cause", "fix_pattern", "detects", "why",
             "fix", "example")


def parse_catalogue(text: str, source: str = "checks.yaml") -> tuple[CheckSpec, ...]:
    data_file = f"src/distdx/doctor/{source}"
    specs: list[CheckSpec] = []
    seen: set[str] = set()
    for entry in entries(text, "checks", code="DX-DOCTOR-001", data_file=data_file):
        if not isinstance(entry, dict):
            raise catalogue_error("DX-DOCTOR-001", data_file, "", f"a check entry is not a mapping: {entry!r}")
        code = str(entry.get("code"))
        bad = functools.partial(catalogue_error, "DX-DOCTOR-001", data_file, code)
        missing = [k for k in _REQUIRED if not entry.get(k)]
        if missing:
            raise bad(f"missing {', '.join(missing)}")
        if not CODE_RE.match(code) or code in seen:
            raise bad("codes look like DOC-AREA-NNN and are unique")
        seen.add(code)
        severity_of(entry["severity"], code="DX-DOCTOR-001", data_file=data_file, entry=code)
        status, since = lifecycle(entry, code="DX-DOCTOR-001", data_file=data_file, entry=code)
        targets = {key: taxonomy_target(entry[key], key, code="DX-DOCTOR-001", data_file=data_file, entry=code, key=key)
                   for key in ("symptom", "root_cause", "fix_pattern")}
        specs.append(CheckSpec(
            code=code, title=entry["title"], area=entry["area"], severity=entry["severity"],
            symptom=targets["symptom"], root_cause=targets["root_cause"],
            fix_pattern=targets["fix_pattern"], detects=entry["detects"].strip(), why=entry["why"].strip(),
            fix=" ".join(fix_steps(entry["fix"])), example=entry["example"].strip(),
            references=references(entry.get("references"), code="DX-DOCTOR-001", data_file=data_file, entry=code),
            status=status, since=since,
        ))
    return tuple(specs)


@lru_cache(maxsize=1)
def catalogue() -> tuple[CheckSpec, ...]:
    text = resources.files("distdx.doctor").joinpath("checks.yaml").read_text(encoding="utf-8")
    return parse_catalogue(text)


@dataclass(frozen=True)
class Compat:
    """The tables of ``compat.yaml`` (see the comments there for each source)."""

    cuda_toolkit_driver: Mapping[str, str]
    cuda_minor_compat_driver: Mapping[str, str]
    nvcc_max_gcc: Mapping[str, int]
    deepspeed_cuda_minor_ok: Mapping[str, tuple[str, ...]]
    deepspeed_accelerators: frozenset[str]
    torch_legacy_nccl_env: Mapping[str, str]
    nccl_env_names: frozenset[str]
    nccl_values: Mapping[str, tuple[str, ...]]
    nccl_bool: frozenset[str]
    nccl_int_range: Mapping[str, tuple[int, int | None]]
    nccl_nthreads: Mapping[str, int]  # multiple_of, min, max
    nccl_slowdown_knobs: Mapping[str, str]
    debug_knobs: Mapping[str, str]


@lru_cache(maxsize=1)
def compat() -> Compat:
    d = bundled_yaml("distdx.doctor", "compat.yaml")
    ro = MappingProxyType
    return Compat(
        cuda_toolkit_driver=ro({str(k): str(v) for k, v in d["cuda_toolkit_driver"].items()}),
        cuda_minor_compat_driver=ro({str(k): str(v) for k, v in d["cuda_minor_compat_driver"].items()}),
        nvcc_max_gcc=ro({str(k): int(v) for k, v in d["nvcc_max_gcc"].items()}),
        deepspeed_cuda_minor_ok=ro({str(k): tuple(v) for k, v in d["deepspeed_cuda_minor_ok"].items()}),
        deepspeed_accelerators=frozenset(d["deepspeed_accelerators"]),
        torch_legacy_nccl_env=ro(dict(d["torch_legacy_nccl_env"])),
        nccl_env_names=frozenset(d["nccl_env_names"]),
        nccl_values=ro({k: tuple(v) for k, v in d["nccl_values"].items()}),
        nccl_bool=frozenset(d["nccl_bool"]),
        nccl_int_range=ro({k: (int(v[0]), None if v[1] is None else int(v[1]))
                           for k, v in d["nccl_int_range"].items()}),
        nccl_nthreads=ro({k: int(v) for k, v in d["nccl_nthreads"].items()}),
        nccl_slowdown_knobs=ro({k: str(v) for k, v in d["nccl_slowdown_knobs"].items()}),
        debug_knobs=ro({k: str(v) for k, v in d["debug_knobs"].items()}),
    )
