"""The judging half of the doctor: one function per catalogue code, reading only an
:class:`~distdx.doctor.models.Environment` and returning a :class:`~distdx.doctor.models.Verdict`.

No function here touches the machine; :mod:`distdx.doctor.probe` gathers the facts. That keeps
every verdict testable with injected readings (GPUs, drivers and interfaces this machine lacks).
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from typing import Callable

from distdx.doctor.catalogue import compat
from distdx.doctor.models import Environment, Verdict
from distdx.doctor.versions import compare, major_minor, marker_environment, parse_version, requirement_on, satisfies

# The distributions whose fit the doctor judges (normalised names).
FRAMEWORKS = ("deepspeed", "colossalai", "megatron-core", "transformer-engine", "transformer-engine-torch",
              "flash-attn", "accelerate", "apex", "triton")
GPU_ONLY = ("flash-attn", "transformer-engine", "transformer-engine-torch")
RANK_VARS = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT")
SHM_WARN = 512 * 1024**2  # DeepSpeed's ds_report warns below this
SHM_FAIL = 64 * 1024**2  # Docker's default --shm-size
NOFILE_MIN = 4096
BUSY_FRACTION = 0.10


@dataclass(frozen=True)
class CheckOptions:
    """Settings of one doctor run that are not facts of the machine."""

    min_free_gb: float = 20.0
    multi_node: bool | None = None  # None: infer from the environment variables


CheckFn = Callable[[Environment, CheckOptions], Verdict]
REGISTRY: dict[str, CheckFn] = {}


def check(code: str) -> Callable[[CheckFn], CheckFn]:
    def register(fn: CheckFn) -> CheckFn:
        if code in REGISTRY:
            raise ValueError(f"{code} registered twice")
        REGISTRY[code] = fn
        return fn
    return register


def ok(message: str, **details: object) -> Verdict:
    return Verdict("pass", message, details)


def warn(message: str, **details: object) -> Verdict:
    return Verdict("warn", message, details)


def fail(message: str, **details: object) -> Verdict:
    return Verdict("fail", message, details)


def skip(message: str, **details: object) -> Verdict:
    return Verdict("skip", message, details)


def _gib(n: float) -> str:
    return f"{n / 1024**3:.1f} GiB"


def _int(value: str | None) -> int | None:
    try:
        return int(value) if value is not None and value.strip() != "" else None
    except ValueError:
        return None


def is_multi_node(env: Environment, opts: CheckOptions) -> bool:
    if opts.multi_node is not None:
        return opts.multi_node
    e = env.env
    for key in ("NNODES", "PET_NNODES", "SLURM_NNODES", "SLURM_JOB_NUM_NODES"):
        n = _int(e.get(key))
        if n is not None and n > 1:
            return True
    world, local = _int(e.get("WORLD_SIZE")), _int(e.get("LOCAL_WORLD_SIZE"))
    return bool(world and local and world > local)


def visible_gpus(env: Environment) -> tuple | None:
    """The GPUs CUDA_VISIBLE_DEVICES leaves visible, or None when GPUs were not read."""
    if env.gpus is None:
        return None
    cvd = env.env.get("CUDA_VISIBLE_DEVICES")
    if cvd is None:
        return env.gpus
    chosen = []
    for item in (s.strip() for s in cvd.split(",")):
        gpu = next((g for g in env.gpus if str(g.index) == item or (item and g.uuid.startswith(item)
                                                                       and item.startswith(("GPU-", "MIG-")))), None)
        if gpu is None:
            break  # CUDA stops at the first entry it cannot match
        chosen.append(gpu)
    return tuple(chosen)


# ---------------------------------------------------------------- system


@check("DOC-SYS-001")
def platform(env: Environment, opts: CheckOptions) -> Verdict:
    if env.platform.startswith("win"):
        return fail("native Windows: torch.distributed has no NCCL backend here and DeepSpeed's launcher "
                    "does not run", platform=env.platform)
    if env.platform == "darwin":
        return warn("macOS: no CUDA and no NCCL; only gloo on CPU (tests, not training)", platform=env.platform)
    extra = " (WSL2)" if env.is_wsl else ""
    return ok(f"{env.platform}{extra} on {env.machine}", platform=env.platform, wsl=env.is_wsl)


@check("DOC-SYS-002")
def shm(env: Environment, opts: CheckOptions) -> Verdict:
    if env.shm_bytes is None:
        return skip("/dev/shm not found (not Linux, or not mounted)")
    size = env.shm_bytes
    if size <= SHM_FAIL:
        return fail(f"/dev/shm is only {size // 1024**2} MiB (Docker's default); NCCL and DataLoader workers "
                    "run out of shared memory", bytes=size)
    if size < SHM_WARN:
        return warn(f"/dev/shm is {size // 1024**2} MiB, below the 512 MiB DeepSpeed recommends", bytes=size)
    return ok(f"/dev/shm is {_gib(size)}", bytes=size)


@check("DOC-SYS-003")
def memlock(env: Environment, opts: CheckOptions) -> Verdict:
    limits = env.ulimits.get("memlock")
    if limits is None:
        return skip("memlock limit could not be read")
    soft = limits[0]
    shown = "unlimited" if soft < 0 else f"{soft // 1024} KiB"
    if not env.infiniband_devices:
        return ok(f"memlock {shown}; no InfiniBand/RoCE device, so NCCL does not register memory with it",
                  soft=soft)
    if soft >= 0:
        return warn(f"memlock soft limit is {shown} with RDMA devices {', '.join(env.infiniband_devices)}; "
                    "NCCL's IB transport needs it unlimited", soft=soft)
    return ok("memlock unlimited with RDMA devices present", soft=soft)


@check("DOC-SYS-004")
def nofile(env: Environment, opts: CheckOptions) -> Verdict:
    limits = env.ulimits.get("nofile")
    if limits is None:
        return skip("open-files limit could not be read")
    soft, hard = limits
    if 0 <= soft < NOFILE_MIN:
        hint = f" (hard limit {hard} allows raising it)" if hard < 0 or hard > soft else ""
        return warn(f"open-files soft limit is {soft}, below {NOFILE_MIN}{hint}", soft=soft, hard=hard)
    return ok(f"open-files soft limit is {'unlimited' if soft < 0 else soft}", soft=soft, hard=hard)


@check("DOC-SYS-005")
def disk(env: Environment, opts: CheckOptions) -> Verdict:
    if env.disk_free_bytes is None:
        return skip(f"free space of {env.disk_path} could not be read")
    free = env.disk_free_bytes
    if free < 1024**3:
        return fail(f"only {_gib(free)} free at {env.disk_path}", free_bytes=free)
    if free < opts.min_free_gb * 1024**3:
        return warn(f"{_gib(free)} free at {env.disk_path}, below {opts.min_free_gb:g} GiB", free_bytes=free)
    return ok(f"{_gib(free)} free at {env.disk_path}", free_bytes=free)


# ---------------------------------------------------------------- python and packages


@check("DOC-PY-001")
def requires_python(env: Environment, opts: CheckOptions) -> Verdict:
    bad = []
    for name in ("torch",) + FRAMEWORKS:
        spec = env.requires_python.get(name)
        if name in env.packages and spec and satisfies(env.python_version, spec) is False:
            bad.append(f"{name} {env.packages[name]} needs Python {spec}")
    if bad:
        return fail(f"Python {env.python_version}: " + "; ".join(bad), conflicts=bad)
    return ok(f"Python {env.python_version} meets the Requires-Python of the installed packages")


@check("DOC-PY-002")
def duplicates(env: Environment, opts: CheckOptions) -> Verdict:
    dups = {k: v for k, v in env.duplicate_packages.items() if k in ("torch",) + FRAMEWORKS}
    if dups:
        text = "; ".join(f"{k} in {', '.join(v)}" for k, v in sorted(dups.items()))
        return warn(f"installed more than once: {text}", duplicates={k: list(v) for k, v in dups.items()})
    return ok("each distributed-training package is installed once")


@check("DOC-TORCH-001")
def torch_installed(env: Environment, opts: CheckOptions) -> Verdict:
    if "torch" not in env.packages:
        return fail("torch is not installed in this Python")
    build = f"CUDA {env.torch_cuda}" if env.torch_cuda else "CPU-only"
    return ok(f"torch {env.packages['torch']} ({build})", version=env.packages["torch"], cuda=env.torch_cuda)


@check("DOC-TORCH-002")
def torch_build_vs_gpus(env: Environment, opts: CheckOptions) -> Verdict:
    if "torch" not in env.packages:
        return skip("torch is not installed")
    if env.gpus is None:
        return skip(f"GPUs not read: {env.gpu_probe_error}")
    if env.gpus and not env.torch_cuda:
        return fail(f"{len(env.gpus)} NVIDIA GPU(s) present but torch {env.packages['torch']} is a CPU-only build")
    return ok(f"torch build fits {len(env.gpus)} GPU(s)")


_NV_WHEEL = re.compile(r"^nvidia-([a-z0-9-]+?)-cu(\d+)$")


@check("DOC-TORCH-003")
def nvidia_wheels(env: Environment, opts: CheckOptions) -> Verdict:
    wheels = {n: m.group(2) for n in env.packages if (m := _NV_WHEEL.match(n))}
    if not wheels:
        return skip("no nvidia-*-cuNN wheels installed")
    if not env.torch_cuda:
        return warn(f"nvidia CUDA wheels installed ({', '.join(sorted(wheels))}) with a CPU-only torch",
                    wheels=sorted(wheels))
    major = env.torch_cuda.split(".")[0]
    wrong = sorted(n for n, m in wheels.items() if m != major)
    if wrong:
        return fail(f"torch is built for CUDA {env.torch_cuda} but these wheels are for another major: "
                    + ", ".join(f"{n} {env.packages[n]}" for n in wrong), wrong=wrong)
    return ok(f"{len(wheels)} nvidia wheels match CUDA {major}")


# ---------------------------------------------------------------- CUDA


def _driver_floor(cuda: str) -> tuple[str, str] | None:
    """(minimum driver, why) for a CUDA major.minor; None when the table has no answer."""
    c = compat()
    mm = major_minor(cuda)
    if mm is None:
        return None
    major = mm.split(".")[0]
    if major in c.cuda_minor_compat_driver:
        return c.cuda_minor_compat_driver[major], f"CUDA {major}.x minor-version compatibility"
    if mm in c.cuda_toolkit_driver:
        return c.cuda_toolkit_driver[mm], f"CUDA {mm} toolkit driver"
    return None


def _driver_verdict(env: Environment, cuda: str | None, what: str, bad: Callable[..., Verdict],
                    absent: str) -> Verdict:
    if not cuda:
        return skip(absent)
    if not env.driver_version:
        return skip(f"no NVIDIA driver to judge against {what} CUDA {cuda}: {env.gpu_probe_error or 'no GPU'}")
    floor = _driver_floor(cuda)
    if floor is None:
        return skip(f"CUDA {cuda} is not in the driver table (compat.yaml)")
    need, why = floor
    if compare(parse_version(env.driver_version) or (0,), parse_version(need) or (0,)) < 0:
        return bad(f"driver {env.driver_version} is older than {need}, the minimum for {what} "
                   f"CUDA {cuda} ({why})", driver=env.driver_version, needed=need)
    return ok(f"driver {env.driver_version} supports {what} CUDA {cuda} (needs >= {need})",
              driver=env.driver_version, needed=need)


@check("DOC-CUDA-001")
def driver_vs_torch(env: Environment, opts: CheckOptions) -> Verdict:
    return _driver_verdict(env, env.torch_cuda, "torch's", fail, "torch is not a CUDA build")


@check("DOC-CUDA-002")
def nvcc_vs_torch(env: Environment, opts: CheckOptions) -> Verdict:
    if not env.torch_cuda:
        return skip("torch is not a CUDA build, so nothing is compiled against its CUDA")
    if not env.nvcc_version:
        return skip("no nvcc found (prebuilt wheels only; see DOC-CUDA-003 for JIT builds)")
    sys_mm, torch_mm = major_minor(env.nvcc_version), major_minor(env.torch_cuda)
    if sys_mm == torch_mm:
        return ok(f"nvcc {env.nvcc_version} matches torch's CUDA {env.torch_cuda}")
    sys_major, torch_major = sys_mm.split(".")[0], torch_mm.split(".")[0]  # type: ignore[union-attr]
    if sys_major != torch_major:
        return fail(f"nvcc is CUDA {sys_mm} but torch is built with CUDA {torch_mm}; extensions will not build",
                    nvcc=sys_mm, torch=torch_mm)
    allowed = compat().deepspeed_cuda_minor_ok.get(sys_major, ())
    if sys_mm in allowed and torch_mm in allowed:
        return ok(f"nvcc {sys_mm} vs torch CUDA {torch_mm}: different minors DeepSpeed accepts")
    return warn(f"nvcc {sys_mm} vs torch CUDA {torch_mm}: a minor pair DeepSpeed's op builder rejects",
                nvcc=sys_mm, torch=torch_mm)


@check("DOC-CUDA-003")
def cuda_home(env: Environment, opts: CheckOptions) -> Verdict:
    declared = env.env.get("CUDA_HOME") or env.env.get("CUDA_PATH")
    if declared and not env.cuda_home_has_nvcc:
        return warn(f"CUDA_HOME={declared} has no bin/nvcc", cuda_home=declared)
    if env.cuda_home and env.cuda_home_has_nvcc:
        where = f"{env.cuda_home} (from {env.cuda_home_source})"
        if not env.cuda_home_has_headers:
            text = (f"{where} has bin/nvcc but no include/cuda_runtime.h (nvcc there is a wrapper or link); "
                    "extension builds will not find the CUDA headers")
            if env.torch_cuda:
                return warn(text, cuda_home=env.cuda_home)
            return ok(text + "; no matter with a CPU-only torch", cuda_home=env.cuda_home)
        return ok(f"CUDA toolkit at {where}", cuda_home=env.cuda_home)
    if not env.torch_cuda:
        return skip("no CUDA toolkit found; not needed with a CPU-only torch")
    return warn("torch is a CUDA build but no CUDA toolkit was found (CUDA_HOME, nvcc on PATH, /usr/local/cuda)")


@check("DOC-CUDA-004")
def driver_vs_nvcc(env: Environment, opts: CheckOptions) -> Verdict:
    return _driver_verdict(env, env.nvcc_version, "nvcc's", warn, "no CUDA toolkit (nvcc) found")


# ---------------------------------------------------------------- NCCL

_LIBNCCL = re.compile(r"libnccl\.so\.(\d+(?:\.\d+)*)")


@check("DOC-NCCL-001")
def nccl_override(env: Environment, opts: CheckOptions) -> Verdict:
    wheel = next((v for k, v in env.packages.items() if re.match(r"^nvidia-nccl-cu\d+$", k)), None)
    if not env.nccl_overrides:
        return ok("no libnccl in LD_PRELOAD or LD_LIBRARY_PATH"
                  + (f"; torch uses nvidia-nccl {wheel}" if wheel else ""))
    versions = {p: m.group(1) for p in env.nccl_overrides if (m := _LIBNCCL.search(p))}
    same = wheel is not None and all(
        compare(parse_version(v) or (0,), (parse_version(wheel) or (0,))[: len(parse_version(v) or ())]) == 0
        for v in versions.values()) and len(versions) == len(env.nccl_overrides)
    if same:
        return ok(f"libnccl override {', '.join(env.nccl_overrides)} matches nvidia-nccl {wheel}")
    return warn(f"a libnccl outside torch's loads first: {', '.join(env.nccl_overrides)}"
                + (f" (torch's wheel is nvidia-nccl {wheel})" if wheel else ""), overrides=list(env.nccl_overrides))


_ROUGH_NCCL = {"NCCL_ALGO", "NCCL_PROTO"}


@check("DOC-NCCL-002")
def nccl_names(env: Environment, opts: CheckOptions) -> Verdict:
    c = compat()
    unknown, legacy = [], []
    for name in sorted(n for n in env.env if n.startswith("NCCL_")):
        if name in c.torch_legacy_nccl_env:
            legacy.append(f"{name} (PyTorch now reads {c.torch_legacy_nccl_env[name]})")
        elif name not in c.nccl_env_names:
            close = difflib.get_close_matches(name, sorted(c.nccl_env_names), n=1, cutoff=0.8)
            unknown.append(name + (f" (did you mean {close[0]}?)" if close else ""))
    if unknown:
        return warn("NCCL does not read " + "; ".join(unknown + legacy), unknown=unknown, legacy=legacy)
    if legacy:
        return warn("deprecated names: " + "; ".join(legacy), legacy=legacy)
    count = sum(1 for n in env.env if n.startswith("NCCL_"))
    return ok(f"{count} NCCL_* variable(s), all known to NCCL")


def _nccl_value_problems(env: Environment) -> list[str]:
    c = compat()
    e = env.env
    bad = []
    for name, allowed in c.nccl_values.items():
        value = e.get(name)
        if value is None:
            continue
        if name in _ROUGH_NCCL:
            # "^Tree,Ring" excludes; "allreduce:tree;allgather:ring" per collective
            words = re.findall(r"[A-Za-z0-9]+", value.lstrip("^"))
            collectives = {"allreduce", "allgather", "reducescatter", "broadcast", "reduce"}  # ncclFuncStr
            lower = {a.lower() for a in allowed}
            wrong = [w for w in words if w.lower() not in lower and w.lower() not in collectives]
        elif name in ("NCCL_P2P_LEVEL", "NCCL_NET_GDR_LEVEL"):
            wrong = [] if value.isdigit() or value.upper() in allowed else [value]
        else:
            wrong = [] if value.upper() in {a.upper() for a in allowed} else [value]
        if wrong:
            bad.append(f"{name}={value} ({', '.join(wrong)} not one of {', '.join(allowed)})")
    for name in sorted(c.nccl_bool):
        value = e.get(name)
        if value is not None and value not in ("0", "1"):
            bad.append(f"{name}={value} (use 0 or 1)")
    for name, (low, high) in c.nccl_int_range.items():
        value = e.get(name)
        if value is None:
            continue
        n = _int(value)
        if n is None or n < low or (high is not None and n > high):
            bad.append(f"{name}={value} (a whole number in {low}..{high if high is not None else 'any'})")
    rule = c.nccl_nthreads
    if (value := e.get("NCCL_NTHREADS")) is not None:
        n = _int(value)
        if n is None or n % rule["multiple_of"] or not rule["min"] <= n <= rule["max"]:
            bad.append(f"NCCL_NTHREADS={value} (a multiple of {rule['multiple_of']} in {rule['min']}..{rule['max']})")
    threads, socks = _int(e.get("NCCL_SOCKET_NTHREADS")), _int(e.get("NCCL_NSOCKS_PERTHREAD"))
    if threads and socks and threads * socks > 64:
        bad.append(f"NCCL_SOCKET_NTHREADS x NCCL_NSOCKS_PERTHREAD = {threads * socks} (at most 64)")
    return bad


@check("DOC-NCCL-003")
def nccl_values(env: Environment, opts: CheckOptions) -> Verdict:
    bad = _nccl_value_problems(env)
    if bad:
        return fail("invalid NCCL settings: " + "; ".join(bad), invalid=bad)
    return ok("NCCL_* values are valid")


def nccl_ifname_matches(spec: str, interfaces: tuple[str, ...]) -> list[str]:
    """The interfaces NCCL would consider for an NCCL_SOCKET_IFNAME value (its matchIfList rules)."""
    exclude = spec.startswith("^")
    body = spec[1:] if exclude else spec
    exact = body.startswith("=")
    body = body[1:] if exact else body
    prefixes = [p.split(":", 1)[0] for p in body.split(",") if p.split(":", 1)[0]]

    def hit(name: str) -> bool:
        return any(name == p if exact else name.startswith(p) for p in prefixes)

    return [i for i in interfaces if hit(i) != exclude]


@check("DOC-NCCL-004")
def nccl_ifname(env: Environment, opts: CheckOptions) -> Verdict:
    if not env.interfaces:
        return skip("network interfaces could not be listed")
    problems, chosen = [], {}
    for var in ("NCCL_SOCKET_IFNAME", "NCCL_OOB_NET_IFNAME"):
        spec = env.env.get(var)
        if spec is None:
            continue
        picked = nccl_ifname_matches(spec, env.interfaces)
        chosen[var] = picked
        if not picked:
            problems.append(f"{var}={spec} selects none of {', '.join(env.interfaces)}")
        elif all(p == "lo" or p.startswith("lo") for p in picked) and is_multi_node(env, opts):
            problems.append(f"{var}={spec} selects only loopback in a multi-node job")
    if problems:
        return fail("; ".join(problems), interfaces=list(env.interfaces))
    if not chosen:
        return ok(f"NCCL_SOCKET_IFNAME not set; NCCL picks among {', '.join(env.interfaces)}")
    return ok("; ".join(f"{k} selects {', '.join(v)}" for k, v in chosen.items()))


@check("DOC-NCCL-005")
def nccl_slowdowns(env: Environment, opts: CheckOptions) -> Verdict:
    hits = [f"{k}={env.env[k]}" for k, v in compat().nccl_slowdown_knobs.items()
            if env.env.get(k, "").upper() == v.upper()]
    if hits:
        return warn("NCCL transports restricted: " + ", ".join(hits), set=hits)
    return ok("no NCCL transport disabled")


# ---------------------------------------------------------------- network


@check("DOC-NET-001")
def gloo_ifname(env: Environment, opts: CheckOptions) -> Verdict:
    spec = env.env.get("GLOO_SOCKET_IFNAME")
    if spec is None:
        return ok("GLOO_SOCKET_IFNAME not set; gloo uses the address the host name resolves to")
    if not env.interfaces:
        return skip("network interfaces could not be listed")
    names = [n.strip() for n in spec.split(",")]
    missing = [n for n in names if n not in env.interfaces]
    if missing:
        close = {n: difflib.get_close_matches(n, env.interfaces, n=1, cutoff=0.5) for n in missing}
        hints = [f"{n}" + (f" (did you mean {c[0]}?)" if c else "") for n, c in close.items()]
        return fail(f"GLOO_SOCKET_IFNAME names no such interface: {', '.join(hints)}; this node has "
                    f"{', '.join(env.interfaces)}", missing=missing)
    return ok(f"GLOO_SOCKET_IFNAME={spec} names real interfaces")


@check("DOC-NET-002")
def master_port(env: Environment, opts: CheckOptions) -> Verdict:
    port = env.env.get("MASTER_PORT")
    if port is None:
        return skip("MASTER_PORT not set (launchers default to 29500)")
    if not env.master_port_probed:
        return skip(f"MASTER_PORT={port} not probed: inside a launched job the store holds it")
    if env.master_port_error:
        return fail(f"cannot listen on MASTER_PORT={port}: {env.master_port_error}", port=port)
    return ok(f"MASTER_PORT={port} is free (bound and released)", port=port)


@check("DOC-NET-003")
def master_addr(env: Environment, opts: CheckOptions) -> Verdict:
    addr = env.env.get("MASTER_ADDR")
    if addr is None:
        return skip("MASTER_ADDR not set")
    if env.master_addr_error:
        return fail(f"MASTER_ADDR={addr} does not resolve: {env.master_addr_error}")
    if env.master_addr_ip and env.master_addr_ip.startswith("127.") and is_multi_node(env, opts):
        return fail(f"MASTER_ADDR={addr} resolves to loopback {env.master_addr_ip} in a multi-node job")
    return ok(f"MASTER_ADDR={addr} resolves to {env.master_addr_ip}")


@check("DOC-NET-004")
def hostname_loopback(env: Environment, opts: CheckOptions) -> Verdict:
    if env.hostname_ip is None:
        return warn(f"host name {env.hostname} does not resolve; gloo cannot find its own address")
    if env.hostname_ip.startswith("127.") and is_multi_node(env, opts):
        if env.env.get("GLOO_SOCKET_IFNAME") and env.env.get("NCCL_SOCKET_IFNAME"):
            return ok(f"{env.hostname} resolves to {env.hostname_ip}, but both *_SOCKET_IFNAME are set")
        return warn(f"{env.hostname} resolves to {env.hostname_ip} (loopback) in a multi-node job")
    return ok(f"{env.hostname} resolves to {env.hostname_ip}")


# ---------------------------------------------------------------- launch environment


@check("DOC-ENV-001")
def rank_vars(env: Environment, opts: CheckOptions) -> Verdict:
    e = env.env
    present = [v for v in RANK_VARS if v in e]
    if not present:
        return ok("no rank variables set (the launcher sets them)")
    problems = []
    if len(present) != len(RANK_VARS):
        problems.append(f"only {', '.join(present)} set; missing {', '.join(v for v in RANK_VARS if v not in e)}")
    nums = {}
    for v in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_PORT"):
        if v in e:
            n = _int(e[v])
            if n is None or n < 0:
                problems.append(f"{v}={e[v]!r} is not a whole number >= 0")
            else:
                nums[v] = n
    if "WORLD_SIZE" in nums and nums["WORLD_SIZE"] < 1:
        problems.append("WORLD_SIZE must be >= 1")
    if "RANK" in nums and "WORLD_SIZE" in nums and nums["RANK"] >= nums["WORLD_SIZE"] >= 1:
        problems.append(f"RANK={nums['RANK']} is not below WORLD_SIZE={nums['WORLD_SIZE']}")
    if "LOCAL_RANK" in nums and "LOCAL_WORLD_SIZE" in nums and nums["LOCAL_RANK"] >= nums["LOCAL_WORLD_SIZE"]:
        problems.append(f"LOCAL_RANK={nums['LOCAL_RANK']} is not below LOCAL_WORLD_SIZE={nums['LOCAL_WORLD_SIZE']}")
    if "LOCAL_WORLD_SIZE" in nums and "WORLD_SIZE" in nums and nums["LOCAL_WORLD_SIZE"] > nums["WORLD_SIZE"]:
        problems.append(f"LOCAL_WORLD_SIZE={nums['LOCAL_WORLD_SIZE']} exceeds WORLD_SIZE={nums['WORLD_SIZE']}")
    if "LOCAL_RANK" in nums and "WORLD_SIZE" in nums and nums["LOCAL_RANK"] >= nums["WORLD_SIZE"]:
        problems.append(f"LOCAL_RANK={nums['LOCAL_RANK']} is not below WORLD_SIZE={nums['WORLD_SIZE']}")
    if "MASTER_PORT" in nums and not 1 <= nums["MASTER_PORT"] <= 65535:
        problems.append(f"MASTER_PORT={nums['MASTER_PORT']} is outside 1..65535")
    if problems:
        return fail("; ".join(problems))
    return ok(f"RANK={e['RANK']} of WORLD_SIZE={e['WORLD_SIZE']}, LOCAL_RANK={e['LOCAL_RANK']}, "
              f"store at {e['MASTER_ADDR']}:{e['MASTER_PORT']}")


_UUID = re.compile(r"^(GPU|MIG)-[0-9a-fA-F-]+")


@check("DOC-ENV-002")
def cuda_visible_devices(env: Environment, opts: CheckOptions) -> Verdict:
    cvd = env.env.get("CUDA_VISIBLE_DEVICES")
    if cvd is None:
        return ok("CUDA_VISIBLE_DEVICES not set: all GPUs visible")
    items = [s.strip() for s in cvd.split(",")] if cvd.strip() else []
    if not items or items == ["-1"] or items == ["NoDevFiles"]:
        return ok(f"CUDA_VISIBLE_DEVICES={cvd!r} hides every GPU (see DOC-GPU-001)")
    uuids = [i for i in items if _UUID.match(i)]
    indices = [i for i in items if i.isdigit()]
    problems = []
    other = [i for i in items if i not in uuids and i not in indices]
    if other:
        problems.append(f"entries that are neither an index nor a GPU-/MIG- UUID: {', '.join(other)}")
    if uuids and indices:
        problems.append("mixes UUIDs and indices")
    dups = sorted({i for i in items if items.count(i) > 1})
    if dups:
        problems.append(f"lists {', '.join(dups)} more than once")
    if env.gpus is not None:
        known = {str(g.index) for g in env.gpus}
        missing = [i for i in indices if i not in known]
        missing += [u for u in uuids if not any(g.uuid.startswith(u) for g in env.gpus)]
        if missing:
            problems.append(f"names GPUs this node does not have: {', '.join(missing)} "
                            f"(it has {len(env.gpus)})")
    if problems:
        return fail(f"CUDA_VISIBLE_DEVICES={cvd}: " + "; ".join(problems) +
                    "; CUDA ignores everything after the first bad entry")
    if uuids:
        return warn(f"CUDA_VISIBLE_DEVICES uses UUIDs; DeepSpeed's --include/--exclude and hostfile slots count "
                    "indices, so launcher filters and this list can disagree", uuids=len(uuids))
    return ok(f"CUDA_VISIBLE_DEVICES={cvd}")


@check("DOC-ENV-003")
def debug_knobs(env: Environment, opts: CheckOptions) -> Verdict:
    hits = [f"{k}={env.env[k]}" for k, v in compat().debug_knobs.items() if env.env.get(k, "").upper() == v.upper()]
    if hits:
        return warn("debugging switches are on: " + ", ".join(hits), set=hits)
    return ok("no slow debugging switch set")


# ---------------------------------------------------------------- toolchain


@check("DOC-TOOL-001")
def gcc_range(env: Environment, opts: CheckOptions) -> Verdict:
    if not env.nvcc_version:
        return skip("no nvcc, so no host-compiler constraint")
    compiler = env.gxx_version or env.gcc_version
    if not compiler:
        return skip("no gcc/g++ found (see DOC-TOOL-003)")
    mm = major_minor(env.nvcc_version)
    limit = compat().nvcc_max_gcc.get(mm or "")
    if limit is None:
        return skip(f"nvcc {mm} is not in the host-compiler table (compat.yaml)")
    gcc_major = (parse_version(compiler) or (0,))[0]
    if gcc_major > limit:
        return fail(f"gcc {compiler} is newer than nvcc {mm} accepts (gcc <= {limit})", gcc=compiler, max=limit)
    return ok(f"gcc {compiler} is within nvcc {mm}'s range (<= {limit})", gcc=compiler, max=limit)


@check("DOC-TOOL-002")
def ninja(env: Environment, opts: CheckOptions) -> Verdict:
    if env.ninja_version:
        return ok(f"ninja {env.ninja_version}")
    return warn("ninja not found on PATH; C++/CUDA extensions cannot be JIT-built")


@check("DOC-TOOL-003")
def cxx(env: Environment, opts: CheckOptions) -> Verdict:
    if env.gxx_version:
        return ok(f"g++ {env.gxx_version}")
    return warn("no g++ on PATH; no extension can be built")


# ---------------------------------------------------------------- DeepSpeed


@check("DOC-DS-001")
def ds_prebuilt(env: Environment, opts: CheckOptions) -> Verdict:
    ds = env.deepspeed
    if ds is None:
        return skip("deepspeed is not installed")
    built = sorted(k for k, v in ds.installed_ops.items() if v)
    if not built:
        return ok(f"deepspeed {ds.version}: no prebuilt ops (JIT builds them for the torch in use)")
    torch_mm = major_minor(env.packages.get("torch"))
    problems = []
    if ds.torch_version not in ("0.0", torch_mm):
        problems.append(f"ops built for torch {ds.torch_version}, torch {torch_mm} installed")
    if env.torch_cuda and ds.cuda_version not in ("0.0", major_minor(env.torch_cuda)):
        problems.append(f"ops built for CUDA {ds.cuda_version}, torch uses CUDA {major_minor(env.torch_cuda)}")
    if problems:
        return fail(f"deepspeed {ds.version} prebuilt ops ({', '.join(built)}): " + "; ".join(problems))
    return ok(f"deepspeed {ds.version} prebuilt ops {', '.join(built)} match torch {torch_mm}")


@check("DOC-DS-002")
def ds_jit(env: Environment, opts: CheckOptions) -> Verdict:
    ds = env.deepspeed
    if ds is None:
        return skip("deepspeed is not installed")
    jit = sorted(k for k, v in ds.installed_ops.items() if not v)
    if not jit:
        return ok("all DeepSpeed ops are prebuilt")
    missing = []
    if not env.ninja_version:
        missing.append("ninja")
    if not env.gxx_version:
        missing.append("g++")
    if env.torch_cuda and not env.cuda_home_has_nvcc:
        missing.append("nvcc (CUDA_HOME)")
    if missing:
        return warn(f"{len(jit)} DeepSpeed ops are JIT-built but {', '.join(missing)} is missing", missing=missing)
    return ok(f"{len(jit)} DeepSpeed ops will be JIT-built; ninja and compilers are present", jit=jit)


@check("DOC-DS-003")
def ds_libaio(env: Environment, opts: CheckOptions) -> Verdict:
    ds = env.deepspeed
    if ds is None:
        return skip("deepspeed is not installed")
    if ds.installed_ops.get("async_io"):
        return ok("async_io op is prebuilt: NVMe offload available")
    if env.libaio:
        return ok("libaio found: async_io can be built for NVMe offload")
    return warn("no libaio (library and header): DeepSpeed NVMe offload (async_io) will not build")


@check("DOC-DS-004")
def ds_accelerator(env: Environment, opts: CheckOptions) -> Verdict:
    if env.deepspeed is None:
        return skip("deepspeed is not installed")
    chosen = env.env.get("DS_ACCELERATOR")
    supported = compat().deepspeed_accelerators
    if chosen is None:
        return ok("DS_ACCELERATOR not set; DeepSpeed detects the accelerator")
    if chosen not in supported:
        return fail(f"DS_ACCELERATOR={chosen} is not one of {', '.join(sorted(supported))}")
    if chosen != "cuda" and env.gpus:
        return warn(f"DS_ACCELERATOR={chosen} with {len(env.gpus)} NVIDIA GPU(s) present: they stay idle")
    return ok(f"DS_ACCELERATOR={chosen}")


@check("DOC-DS-005")
def ds_ops_compatible(env: Environment, opts: CheckOptions) -> Verdict:
    if env.deepspeed is None:
        return skip("deepspeed is not installed")
    if env.deepspeed_compat_error:
        return warn(env.deepspeed_compat_error)
    if env.deepspeed_compatible is None:
        return skip("op builders not asked; run `distdx doctor --deepspeed-ops` (imports deepspeed: seconds)")
    bad = sorted(k for k, v in env.deepspeed_compatible.items() if not v)
    if bad:
        return warn(f"DeepSpeed op builders report {len(bad)} of {len(env.deepspeed_compatible)} ops incompatible: "
                    + ", ".join(bad), incompatible=bad)
    return ok(f"all {len(env.deepspeed_compatible)} DeepSpeed ops report compatible")


# ---------------------------------------------------------------- frameworks


@check("DOC-PKG-001")
def frameworks_torch(env: Environment, opts: CheckOptions) -> Verdict:
    torch = env.packages.get("torch")
    if torch is None:
        return skip("torch is not installed")
    bad, fine = [], []
    for name in FRAMEWORKS:
        if name not in env.packages or name == "triton":
            continue
        spec = requirement_on(env.requirements.get(name, ()), "torch", marker_environment(env.python_version))
        if not spec:
            fine.append(name)
            continue
        if satisfies(torch, spec) is False:
            bad.append(f"{name} {env.packages[name]} requires torch {spec}")
        else:
            fine.append(name)
    gpu_only = [n for n in GPU_ONLY if n in env.packages and not env.torch_cuda]
    if bad:
        return fail(f"torch {torch}: " + "; ".join(bad), conflicts=bad)
    if gpu_only:
        return warn(f"{', '.join(gpu_only)} installed with a CPU-only torch; they need CUDA", packages=gpu_only)
    return ok(f"torch {torch} fits {', '.join(fine) or 'no installed framework'}")


@check("DOC-PKG-002")
def triton_pin(env: Environment, opts: CheckOptions) -> Verdict:
    triton = env.packages.get("triton")
    if triton is None:
        return skip("triton is not installed")
    spec = requirement_on(env.requirements.get("torch", ()), "triton", marker_environment(env.python_version))
    if not spec:
        return ok(f"triton {triton}; torch does not pin it")
    if satisfies(triton, spec) is False:
        return fail(f"triton {triton} installed but torch {env.packages.get('torch')} requires triton {spec}")
    return ok(f"triton {triton} meets torch's {spec}")


@check("DOC-PKG-003")
def apex_ext(env: Environment, opts: CheckOptions) -> Verdict:
    if "apex" not in env.packages:
        return skip("apex is not installed")
    if env.apex_extensions:
        return ok("apex with compiled extensions (amp_C)")
    return warn(f"apex {env.packages['apex']} has no compiled extensions (amp_C not found)")


@check("DOC-CPU-001")
def cpu_isa(env: Environment, opts: CheckOptions) -> Verdict:
    if env.machine not in ("x86_64", "AMD64", "amd64"):
        return skip(f"{env.machine}: no x86 instruction-set requirement")
    if not env.cpu_flags:
        return skip("CPU flags could not be read (/proc/cpuinfo)")
    avx512 = "avx512f" in env.cpu_flags
    if "avx2" not in env.cpu_flags:
        return warn("CPU has no AVX2: DeepSpeed CPU optimizers (offload) run a slow scalar path", avx512=avx512)
    return ok("AVX2" + (" and AVX-512" if avx512 else " (no AVX-512)"), avx512=avx512)


# ---------------------------------------------------------------- GPUs


@check("DOC-GPU-001")
def gpu_visible(env: Environment, opts: CheckOptions) -> Verdict:
    if env.gpus is None:
        return skip(f"GPUs not read: {env.gpu_probe_error}")
    if not env.gpus:
        return skip("NVML reports no NVIDIA GPU on this node")
    shown = visible_gpus(env) or ()
    if not shown:
        return fail(f"{len(env.gpus)} GPU(s) present, none visible: "
                    f"CUDA_VISIBLE_DEVICES={env.env.get('CUDA_VISIBLE_DEVICES')!r}")
    return ok(f"{len(shown)} of {len(env.gpus)} GPU(s) visible", visible=[g.index for g in shown])


@check("DOC-GPU-002")
def gpu_alike(env: Environment, opts: CheckOptions) -> Verdict:
    shown = visible_gpus(env)
    if shown is None:
        return skip(f"GPUs not read: {env.gpu_probe_error}")
    if len(shown) < 2:
        return skip("fewer than two visible GPUs")
    kinds = sorted({(g.name, g.memory_total_mib) for g in shown})
    if len(kinds) > 1:
        smallest = min(shown, key=lambda g: g.memory_total_mib)
        desc = "; ".join(f"{n} {m // 1024} GiB x{sum(1 for g in shown if (g.name, g.memory_total_mib) == (n, m))}"
                         for n, m in kinds)
        return warn(f"visible GPUs differ: {desc}; exclude GPU {smallest.index} (e.g. --exclude localhost:"
                    f"{smallest.index}) or set CUDA_VISIBLE_DEVICES to one kind", kinds=desc)
    return ok(f"{len(shown)} x {kinds[0][0]} ({kinds[0][1] // 1024} GiB)")


@check("DOC-GPU-003")
def gpu_idle(env: Environment, opts: CheckOptions) -> Verdict:
    shown = visible_gpus(env)
    if shown is None:
        return skip(f"GPUs not read: {env.gpu_probe_error}")
    if not shown:
        return skip("no visible GPU")
    busy = [g for g in shown if g.memory_total_mib and g.memory_used_mib / g.memory_total_mib > BUSY_FRACTION]
    if busy:
        return warn("GPU memory already in use: " + ", ".join(
            f"GPU {g.index} {g.memory_used_mib // 1024} of {g.memory_total_mib // 1024} GiB" for g in busy),
            busy=[g.index for g in busy])
    return ok(f"{len(shown)} visible GPU(s) idle")
