"""Typed records of the doctor: the facts of one machine (``Environment``), the catalogue entry
of a check (``CheckSpec``), its verdict (``CheckResult``) and a whole report (``DoctorReport``).

Facts and verdicts are kept apart: :mod:`distdx.doctor.probe` fills an ``Environment`` from the
real machine; checks only read it. Tests build an ``Environment`` by hand to stand in for
hardware this machine does not have.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Mapping

from distdx.knowledge.catalogue import SEVERITIES, Reference

STATUSES = ("pass", "warn", "fail", "skip")

__all__ = ["SEVERITIES", "Reference"]  # re-exported: the doctor's records share the catalogues' schema



@dataclass(frozen=True)
class GpuReading:
    """One physical GPU as NVML (or nvidia-smi) reports it."""

    index: int
    name: str
    uuid: str
    memory_total_mib: int
    memory_used_mib: int = 0


@dataclass(frozen=True)
class DeepSpeedBuild:
    """What DeepSpeed's setup.py recorded at install time (``git_version_info_installed.py``)."""

    version: str
    installed_ops: Mapping[str, bool]
    torch_version: str  # major.minor it was built against, "0.0" when unknown
    cuda_version: str  # major.minor, "0.0" when built without CUDA
    accelerator: str


@dataclass(frozen=True)
class Environment:
    """A snapshot of the facts the checks judge. ``None`` means "could not be read"."""

    platform: str = "linux"  # sys.platform
    is_wsl: bool = False
    machine: str = "x86_64"
    hostname: str = "localhost"
    hostname_ip: str | None = None  # what the host name resolves to
    python_version: str = "3.11.0"
    packages: Mapping[str, str] = field(default_factory=dict)  # normalised distribution name -> version
    requirements: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # distribution -> its Requires-Dist lines
    requires_python: Mapping[str, str] = field(default_factory=dict)  # distribution -> its Requires-Python
    # distribution -> the places it is installed, when more than one
    duplicate_packages: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    torch_cuda: str | None = None  # torch.version.cuda
    torch_cudnn: str | None = None
    torch_nccl: str | None = None
    nccl_overrides: tuple[str, ...] = ()  # libnccl files reached through LD_PRELOAD / LD_LIBRARY_PATH
    apex_extensions: bool | None = None  # apex's compiled modules (amp_C) importable
    nvcc_version: str | None = None
    cuda_home: str | None = None
    cuda_home_source: str | None = None  # CUDA_HOME, CUDA_PATH, nvcc on PATH, /usr/local/cuda
    cuda_home_has_nvcc: bool = False
    cuda_home_has_headers: bool = False  # include/cuda_runtime.h, which extension builds compile against
    gcc_version: str | None = None
    gxx_version: str | None = None
    ninja_version: str | None = None
    driver_version: str | None = None
    gpus: tuple[GpuReading, ...] | None = None  # None: could not be read (see gpu_probe_error)
    gpu_probe_error: str | None = "no GPU probe ran"
    cpu_flags: frozenset[str] = frozenset()
    shm_bytes: int | None = None
    ulimits: Mapping[str, tuple[int, int]] = field(default_factory=dict)  # name -> (soft, hard); -1 is unlimited
    infiniband_devices: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    interfaces: tuple[str, ...] = ()
    disk_path: str = "."
    disk_free_bytes: int | None = None
    libaio: bool | None = None  # libaio's shared library and header both found
    deepspeed: DeepSpeedBuild | None = None
    deepspeed_compatible: Mapping[str, bool] | None = None  # op -> builder.is_compatible(), when asked
    deepspeed_compat_error: str | None = None
    master_addr_ip: str | None = None  # MASTER_ADDR resolved, when set
    master_addr_error: str | None = None
    master_port_error: str | None = None  # why binding MASTER_PORT failed; None when it bound
    master_port_probed: bool = False

    def to_dict(self) -> dict:
        data = asdict(self)
        data["cpu_flags"] = sorted(self.cpu_flags)
        return data


@dataclass(frozen=True)
class CheckSpec:
    """One entry of ``checks.yaml``."""

    code: str
    title: str
    area: str
    severity: str  # what a failure of this check costs: error | warning | info
    symptom: str
    root_cause: str
    fix_pattern: str
    detects: str
    why: str
    fix: str
    example: str
    references: tuple[Reference, ...] = ()
    status: str = "stable"  # stable | preview | deprecated (a code is deprecated, never removed)
    since: str = ""  # the distdx release that introduced it ("" for checks older than the field)


@dataclass(frozen=True)
class Verdict:
    """What a check function returns; the engine adds the catalogue data."""

    status: str
    message: str
    details: Mapping[str, object] = field(default_factory=dict)


@dataclass(frozen=True)
class CheckResult:
    code: str
    title: str
    status: str
    severity: str
    message: str
    fix: str | None
    symptom: str
    root_cause: str
    fix_pattern: str
    details: Mapping[str, object] = field(default_factory=dict)

    def to_dict(self) -> dict:
        data = asdict(self)
        data["details"] = dict(self.details)
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, object]) -> "CheckResult":
        names = cls.__dataclass_fields__.keys()
        return cls(**{k: data[k] for k in names if k in data})  # type: ignore[arg-type]


@dataclass(frozen=True)
class DoctorReport:
    checks: tuple[CheckResult, ...]
    facts: Mapping[str, object] = field(default_factory=dict)  # versions and readings worth comparing
    elapsed_s: float = 0.0

    def counts(self) -> dict[str, int]:
        out = {s: 0 for s in STATUSES}
        for c in self.checks:
            out[c.status] += 1
        return out

    @property
    def failed(self) -> bool:
        return any(c.status == "fail" for c in self.checks)

    def to_dict(self) -> dict:
        return {
            "checks": [c.to_dict() for c in self.checks],
            "summary": {**self.counts(), "total": len(self.checks), "ok": not self.failed,
                        "elapsed_s": round(self.elapsed_s, 3)},
            "facts": dict(self.facts),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, object]) -> "DoctorReport":
        checks = tuple(CheckResult.from_dict(c) for c in data.get("checks", ()))  # type: ignore[union-attr]
        summary = data.get("summary") or {}
        return cls(checks=checks, facts=dict(data.get("facts") or {}),  # type: ignore[arg-type]
                   elapsed_s=float(summary.get("elapsed_s", 0.0)))  # type: ignore[union-attr]
