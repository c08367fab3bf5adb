"""Typed loaders for ``checks.yaml`` (the catalogue) and ``compat.yaml`` (the version tables)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from types import MappingProxyType
from typing import Mapping

import yaml

from distdx.doctor.models import SEVERITIES, CheckSpec, Reference
from distdx.errors import DistdxError
from distdx.knowledge.taxonomy import taxonomy

CODE_RE = re.compile(r"^DOC-[A-Z0-9]+-\d{3}$")
_REQUIRED = ("code", "title", "area", "severity", "symptom", "root_cause", "fix_pattern", "detects", "why",
             "fix", "example")


def _bad(source: str, what: str) -> DistdxError:
    return DistdxError("DX-DOCTOR-001", f"{source}: {what}",
                       why="the doctor's catalogue is versioned data that must load cleanly",
                       hint="fix the entry; codes, taxonomy IDs and fields are validated on load")


def parse_catalogue(text: str, source: str = "checks.yaml") -> tuple[CheckSpec, ...]:
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise _bad(source, f"not valid YAML: {e}") from None
    if not isinstance(data, dict) or data.get("version") != 1 or not isinstance(data.get("checks"), list):
        raise _bad(source, "expected a mapping with `version: 1` and a list `checks`")
    tax = taxonomy()
    specs: list[CheckSpec] = []
    seen: set[str] = set()
    for entry in data["checks"]:
        if not isinstance(entry, dict):
            raise _bad(source, f"a check entry is not a mapping: {entry!r}")
        code = str(entry.get("code"))
        missing = [k for k in _REQUIRED if not entry.get(k)]
        if missing:
            raise _bad(source, f"{code}: missing {', '.join(missing)}")
        if not CODE_RE.match(code) or code in seen:
            raise _bad(source, f"{code}: codes look like DOC-AREA-NNN and are unique")
        seen.add(code)
        if entry["severity"] not in SEVERITIES:
            raise _bad(source, f"{code}: severity must be one of {SEVERITIES}")
        for key, dim in (("symptom", "symptom"), ("root_cause", "root_cause"), ("fix_pattern", "fix_pattern")):
            node = str(entry[key])
            if node not in tax or tax.nodes[node].dimension != dim:
                raise _bad(source, f"{code}: {key} {node!r} is not a taxonomy {dim}")
        refs = tuple(Reference(url=r["url"], title=r.get("title", "")) for r in entry.get("references") or ())
        specs.append(CheckSpec(
            code=code, title=entry["title"], area=entry["area"], severity=entry["severity"],
            symptom=str(entry["symptom"]), root_cause=str(entry["root_cause"]),
            fix_pattern=str(entry["fix_pattern"]), detects=entry["detects"].strip(), why=entry["why"].strip(),
            fix=entry["fix"].strip(), example=entry["example"].strip(), references=refs,
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
    d = yaml.safe_load(resources.files("distdx.doctor").joinpath("compat.yaml").read_text(encoding="utf-8"))
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
