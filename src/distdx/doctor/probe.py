"""The fact-gathering half of the doctor: read this machine into an :class:`Environment`.

Nothing here judges. Every probe is bounded (subprocesses and name look-ups have timeouts) and
runs side by side with the others, so a full probe stays well under a second or two. torch and
deepspeed are *not* imported: their versions and build facts are read from package metadata and
from the files their installers write (``torch/version.py``, ``deepspeed/git_version_info_installed.py``).
When torch is already imported (``--distributed``), its runtime values are used instead.
"""

from __future__ import annotations

import ast
import concurrent.futures as cf
import ctypes.util
import glob
import importlib.metadata as md
import importlib.util
import os
import platform as _platform
import re
import shutil
import socket
import subprocess
import sys
from pathlib import Path
from typing import Callable, Mapping, TypeVar

from distdx.doctor.checks import FRAMEWORKS
from distdx.doctor.models import DeepSpeedBuild, Environment, GpuReading
from distdx.doctor.versions import normalise

T = TypeVar("T")
SUBPROCESS_TIMEOUT_S = 5.0
RESOLVE_TIMEOUT_S = 2.0
# Environment variables worth showing and comparing between nodes (values of others stay private).
SHOWN_ENV = re.compile(r"^(NCCL_|TORCH_NCCL_|TORCH_DISTRIBUTED|GLOO_|CUDA_|MASTER_|RANK$|WORLD_SIZE$|LOCAL_RANK$|"
                       r"LOCAL_WORLD_SIZE$|NODE_RANK$|GROUP_RANK$|DS_|OMP_NUM_THREADS$|PYTORCH_CUDA_ALLOC_CONF$|"
                       r"LD_LIBRARY_PATH$|LD_PRELOAD$|SLURM_JOB_NUM_NODES$|SLURM_NNODES$|NNODES$)")


def _run(cmd: list[str]) -> str | None:
    if shutil.which(cmd[0]) is None and not os.path.isabs(cmd[0]):
        return None
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=SUBPROCESS_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return (out.stdout + out.stderr) if out.returncode == 0 else None


def _with_timeout(fn: Callable[[], T], timeout: float) -> T:
    pool = cf.ThreadPoolExecutor(max_workers=1)
    try:
        return pool.submit(fn).result(timeout=timeout)
    finally:
        pool.shutdown(wait=False)


def _resolve(name: str) -> tuple[str | None, str | None]:
    """(IPv4 address, error) for a host name, bounded in time."""
    try:
        infos = _with_timeout(lambda: socket.getaddrinfo(name, None, socket.AF_INET, socket.SOCK_STREAM),
                              RESOLVE_TIMEOUT_S)
        return infos[0][4][0], None
    except cf.TimeoutError:
        return None, f"no answer within {RESOLVE_TIMEOUT_S:g} s"
    except OSError as e:
        return None, e.strerror or str(e)


def _packages() -> tuple[dict[str, str], dict[str, tuple[str, ...]], dict[str, str], dict[str, tuple[str, ...]]]:
    versions: dict[str, str] = {}
    requires: dict[str, tuple[str, ...]] = {}
    requires_python: dict[str, str] = {}
    places: dict[str, list[str]] = {}
    wanted = set(("torch",) + FRAMEWORKS)
    for dist in md.distributions():
        name = dist.metadata["Name"]
        if not name:
            continue
        key = normalise(name)
        path = getattr(dist, "_path", None)
        where = os.path.realpath(Path(path).parent) if path else ""
        if key in wanted:
            if where not in places.setdefault(key, []):
                places[key].append(where)
        if key in versions:
            continue  # the first on sys.path is the one that imports
        versions[key] = dist.version
        if key in wanted:
            requires[key] = tuple(dist.requires or ())
            if dist.metadata["Requires-Python"]:
                requires_python[key] = dist.metadata["Requires-Python"]
    dups = {k: tuple(v) for k, v in places.items() if len(v) > 1}
    return versions, requires, requires_python, dups


def _package_dir(name: str) -> Path | None:
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0])


def _assignments(path: Path) -> dict[str, object]:
    """Top-level ``name = literal`` assignments of a generated Python file, without running it."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError):
        return {}
    out: dict[str, object] = {}
    for node in tree.body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                if isinstance(t, ast.Name) and node.value is not None:
                    try:
                        out[t.id] = ast.literal_eval(node.value)
                    except ValueError:
                        pass
    return out


def _torch_build(packages: Mapping[str, str]) -> tuple[str | None, str | None, str | None]:
    """(torch.version.cuda, cuDNN version, NCCL version)."""
    torch = sys.modules.get("torch")
    if torch is not None:  # already imported (distributed mode): ask it
        cudnn = nccl = None
        try:
            if torch.backends.cudnn.is_available():
                cudnn = str(torch.backends.cudnn.version())
            if torch.cuda.is_available():
                nccl = ".".join(map(str, torch.cuda.nccl.version()))
        except Exception:  # a broken CUDA setup must not stop the report
            pass
        return torch.version.cuda, cudnn, nccl
    cuda = None
    d = _package_dir("torch")
    if d is not None:
        cuda = _assignments(d / "version.py").get("cuda")  # type: ignore[assignment]
    cudnn = next((v for k, v in packages.items() if re.match(r"^nvidia-cudnn-cu\d+$", k)), None)
    nccl = next((v for k, v in packages.items() if re.match(r"^nvidia-nccl-cu\d+$", k)), None)
    return (str(cuda) if cuda else None), cudnn, nccl


def _deepspeed() -> DeepSpeedBuild | None:
    d = _package_dir("deepspeed")
    if d is None:
        return None
    info = _assignments(d / "git_version_info_installed.py")
    torch_info = info.get("torch_info") or {}
    return DeepSpeedBuild(
        version=str(info.get("version", "unknown")),
        installed_ops=dict(info.get("installed_ops") or {}),  # type: ignore[arg-type]
        torch_version=str(torch_info.get("version", "0.0")),  # type: ignore[union-attr]
        cuda_version=str(torch_info.get("cuda_version", "0.0")),  # type: ignore[union-attr]
        accelerator=str(info.get("accelerator_name", "")),
    )


# Asks every DeepSpeed op builder the question ds_report asks (is_compatible), in a child process so
# that deepspeed's import and its compile probes (async_io links a test program against libaio)
# cannot slow down or break the main report.
_DS_COMPAT_SCRIPT = """
import contextlib, io, json
with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
    from deepspeed.ops.op_builder.all_ops import ALL_OPS
    verdicts = {}
    for name, builder in ALL_OPS.items():
        try:
            verdicts[name] = bool(builder.is_compatible(False))
        except Exception:
            verdicts[name] = False
print(json.dumps(verdicts))
"""
DS_COMPAT_TIMEOUT_S = 120.0


def deepspeed_op_compatibility(timeout: float = DS_COMPAT_TIMEOUT_S) -> tuple[dict[str, bool] | None, str | None]:
    """(op -> compatible, error) from DeepSpeed's own op builders, as ds_report reports them."""
    import json

    try:
        out = subprocess.run([sys.executable, "-c", _DS_COMPAT_SCRIPT], capture_output=True, text=True,
                             timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return None, f"DeepSpeed's op builders did not answer within {timeout:g} s"
    lines = out.stdout.strip().splitlines()
    try:
        verdicts = json.loads(lines[-1]) if lines else None
    except json.JSONDecodeError:
        verdicts = None
    if out.returncode != 0 or not isinstance(verdicts, dict):
        tail = (out.stderr.strip().splitlines() or ["no output"])[-1]
        return None, f"importing DeepSpeed's op builders failed: {tail}"
    return {str(k): bool(v) for k, v in verdicts.items()}, None


def _cuda_home(environ: Mapping[str, str]) -> tuple[str | None, str | None]:
    """The toolkit directory the way torch.utils.cpp_extension looks for it, and where it came from."""
    for var in ("CUDA_HOME", "CUDA_PATH"):
        if environ.get(var):
            return environ[var], var
    nvcc = shutil.which("nvcc")
    if nvcc:  # torch takes dirname(dirname(nvcc)) without resolving links; so do we
        return os.path.dirname(os.path.dirname(nvcc)), "nvcc on PATH"
    if os.path.isdir("/usr/local/cuda"):
        return "/usr/local/cuda", "/usr/local/cuda"
    return None, None


def _nvcc_version(cuda_home: str | None) -> str | None:
    if not cuda_home:
        return None
    out = _run([os.path.join(cuda_home, "bin", "nvcc"), "--version"])
    m = re.search(r"release (\d+\.\d+)(?:, V(\d+\.\d+\.\d+))?", out or "")
    return (m.group(2) or m.group(1)) if m else None


def _compiler(cmd: str) -> str | None:
    out = _run([cmd, "-dumpfullversion", "-dumpversion"])
    return out.strip().splitlines()[0] if out and out.strip() else None


def _ninja() -> str | None:
    out = _run(["ninja", "--version"])
    return out.strip() if out else None


def parse_driver_version(text: str) -> str | None:
    """The driver version in /proc/driver/nvidia/version (proprietary and open kernel modules)."""
    m = re.search(r"Kernel Module(?: for \S+)?\s+(\d+\.\d+(?:\.\d+)?)", text)
    return m.group(1) if m else None


NVIDIA_SMI_QUERY = ["nvidia-smi", "--query-gpu=index,name,uuid,memory.total,memory.used,driver_version",
                    "--format=csv,noheader,nounits"]


def parse_nvidia_smi(text: str) -> tuple[tuple[GpuReading, ...], str | None]:
    """GPUs and driver version from the CSV of :data:`NVIDIA_SMI_QUERY`."""
    gpus, driver = [], None
    for line in text.strip().splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) == 6 and parts[0].isdigit():
            gpus.append(GpuReading(int(parts[0]), parts[1], parts[2], int(float(parts[3])), int(float(parts[4]))))
            driver = parts[5]
    return tuple(gpus), driver


def _gpus() -> tuple[tuple[GpuReading, ...] | None, str | None, str | None]:
    """(GPUs, why they could not be read, driver version)."""
    driver = None
    try:
        driver = parse_driver_version(Path("/proc/driver/nvidia/version").read_text())
    except OSError:
        pass
    try:
        import pynvml  # nvidia-ml-py
    except ImportError:
        pynvml = None
    if pynvml is not None:
        try:
            pynvml.nvmlInit()
        except Exception as e:  # NVMLError_LibraryNotFound, DriverNotLoaded...
            return None, f"NVML could not start ({e}); no NVIDIA driver on this machine?", driver
        try:
            def text_of(v: object) -> str:
                return v.decode() if isinstance(v, bytes) else str(v)

            driver = text_of(pynvml.nvmlSystemGetDriverVersion())
            gpus = []
            for i in range(pynvml.nvmlDeviceGetCount()):
                h = pynvml.nvmlDeviceGetHandleByIndex(i)
                mem = pynvml.nvmlDeviceGetMemoryInfo(h)
                gpus.append(GpuReading(index=i, name=text_of(pynvml.nvmlDeviceGetName(h)),
                                       uuid=text_of(pynvml.nvmlDeviceGetUUID(h)),
                                       memory_total_mib=int(mem.total) // 2**20,
                                       memory_used_mib=int(mem.used) // 2**20))
            return tuple(gpus), None, driver
        except Exception as e:
            return None, f"NVML query failed: {e}", driver
        finally:
            try:
                pynvml.nvmlShutdown()
            except Exception:
                pass
    out = _run(NVIDIA_SMI_QUERY)
    if out is not None:
        gpus, smi_driver = parse_nvidia_smi(out)
        return gpus, None, smi_driver or driver
    if driver is None and not glob.glob("/dev/nvidia[0-9]*"):
        return None, "no NVIDIA driver or device on this machine (no /proc/driver/nvidia, no /dev/nvidia*)", None
    return None, "nvidia-ml-py is not installed and nvidia-smi is not on PATH (pip install nvidia-ml-py)", driver


def _cpu_flags() -> frozenset[str]:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith(("flags", "Features")):
                    return frozenset(line.split(":", 1)[1].split())
    except OSError:
        pass
    return frozenset()


def _ulimits() -> dict[str, tuple[int, int]]:
    try:
        import resource
    except ImportError:  # Windows
        return {}
    out = {}
    for name, res in (("memlock", resource.RLIMIT_MEMLOCK), ("nofile", resource.RLIMIT_NOFILE)):
        soft, hard = resource.getrlimit(res)
        inf = resource.RLIM_INFINITY
        out[name] = (-1 if soft == inf else int(soft), -1 if hard == inf else int(hard))
    return out


def _interfaces() -> tuple[str, ...]:
    try:
        return tuple(name for _, name in socket.if_nameindex())
    except OSError:
        try:
            return tuple(sorted(os.listdir("/sys/class/net")))
        except OSError:
            return ()


def _libaio() -> bool:
    header = any(os.path.exists(os.path.join(d, "libaio.h")) for d in
                 ["/usr/include", "/usr/local/include"] + re.findall(r"-I\s*(\S+)", os.environ.get("CFLAGS", "")))
    return header and ctypes.util.find_library("aio") is not None


def _nccl_overrides(environ: Mapping[str, str]) -> tuple[str, ...]:
    found = [p for p in re.split(r"[:\s]", environ.get("LD_PRELOAD", "")) if "libnccl" in p]
    for d in filter(None, environ.get("LD_LIBRARY_PATH", "").split(":")):
        names = sorted(glob.glob(os.path.join(d, "libnccl.so*")), key=len)
        if names:
            found.append(names[-1])  # the most specific name carries the version
    return tuple(found)


def bind_port(port: int) -> str | None:
    """Really listen on ``port`` on all interfaces, the way the TCPStore does; the error, or None."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind(("", port))
            s.listen(1)
    except OverflowError:
        return f"{port} is not a valid port"
    except OSError as e:
        return e.strerror or str(e)
    return None


def probe(*, disk_path: str = ".", probe_port: bool | None = None, deepspeed_ops: bool = False,
          environ: Mapping[str, str] | None = None) -> Environment:
    """Read this machine. ``probe_port`` None binds MASTER_PORT unless a launcher already runs the job;
    ``deepspeed_ops`` also asks DeepSpeed's op builders (seconds: it imports deepspeed and torch)."""
    environ = dict(os.environ if environ is None else environ)
    with cf.ThreadPoolExecutor(max_workers=8) as pool:
        f_pk = pool.submit(_packages)
        f_ch = pool.submit(_cuda_home, environ)
        f_gcc, f_gxx, f_ninja = pool.submit(_compiler, "gcc"), pool.submit(_compiler, "g++"), pool.submit(_ninja)
        f_gpu = pool.submit(_gpus)
        f_aio = pool.submit(_libaio)
        f_ds = pool.submit(_deepspeed)
        f_ops = pool.submit(deepspeed_op_compatibility) if deepspeed_ops and _package_dir("deepspeed") else None
        hostname = socket.gethostname()
        f_host = pool.submit(_resolve, hostname)
        f_master = pool.submit(_resolve, environ["MASTER_ADDR"]) if environ.get("MASTER_ADDR") else None
        cuda_home, cuda_src = f_ch.result()
        f_nvcc = pool.submit(_nvcc_version, cuda_home)
        packages, requires, requires_python, dups = f_pk.result()
        gpus, gpu_error, driver = f_gpu.result()
        master_ip, master_err = f_master.result() if f_master else (None, None)
        host_ip, _ = f_host.result()
        nvcc = f_nvcc.result()
        gcc, gxx, ninja, libaio, ds = f_gcc.result(), f_gxx.result(), f_ninja.result(), f_aio.result(), f_ds.result()
        ds_compat, ds_compat_error = f_ops.result() if f_ops else (None, None)
    torch_cuda, cudnn, nccl = _torch_build(packages)
    if probe_port is None:  # inside a launched job the store may already hold the port
        probe_port = "TORCHELASTIC_RUN_ID" not in environ and not ("RANK" in environ and "LOCAL_RANK" in environ)
    port_error = None
    port = environ.get("MASTER_PORT", "")
    probed = bool(probe_port and port.strip().isdigit())
    if probed:
        port_error = bind_port(int(port))
    try:
        shm = os.statvfs("/dev/shm")
        shm_bytes: int | None = shm.f_frsize * shm.f_blocks
    except (OSError, AttributeError):
        shm_bytes = None
    try:
        free: int | None = shutil.disk_usage(disk_path).free
    except OSError:
        free = None
    try:
        ib = tuple(sorted(os.listdir("/sys/class/infiniband")))
    except OSError:
        ib = ()
    try:
        wsl = "microsoft" in Path("/proc/sys/kernel/osrelease").read_text().lower()
    except OSError:
        wsl = False
    return Environment(
        platform=sys.platform, is_wsl=wsl, machine=_platform.machine(), hostname=hostname, hostname_ip=host_ip,
        python_version=_platform.python_version(), packages=packages, requirements=requires,
        requires_python=requires_python, duplicate_packages=dups, torch_cuda=torch_cuda, torch_cudnn=cudnn,
        torch_nccl=nccl, nccl_overrides=_nccl_overrides(environ),
        apex_extensions=(importlib.util.find_spec("amp_C") is not None) if "apex" in packages else None,
        nvcc_version=nvcc, cuda_home=cuda_home, cuda_home_source=cuda_src,
        cuda_home_has_nvcc=bool(cuda_home and os.path.exists(os.path.join(cuda_home, "bin", "nvcc"))),
        cuda_home_has_headers=bool(cuda_home and os.path.exists(os.path.join(cuda_home, "include", "cuda_runtime.h"))),
        gcc_version=gcc, gxx_version=gxx, ninja_version=ninja, driver_version=driver, gpus=gpus,
        gpu_probe_error=gpu_error, cpu_flags=_cpu_flags(), shm_bytes=shm_bytes, ulimits=_ulimits(),
        infiniband_devices=ib, env=environ, interfaces=_interfaces(), disk_path=os.path.abspath(disk_path),
        disk_free_bytes=free, libaio=libaio, deepspeed=ds,
        deepspeed_compatible=ds_compat, deepspeed_compat_error=ds_compat_error, master_addr_ip=master_ip,
        master_addr_error=master_err,
        master_port_error=port_error, master_port_probed=probed,
    )


def facts(env: Environment) -> dict[str, object]:
    """The readings worth comparing between nodes and ranks (no secrets: only known variables)."""
    pk = env.packages
    return {
        "hostname": env.hostname,
        "platform": env.platform + (" (WSL)" if env.is_wsl else ""),
        "python": env.python_version,
        "torch": pk.get("torch"),
        "torch_cuda": env.torch_cuda,
        "cudnn": env.torch_cudnn,
        "nccl": env.torch_nccl,
        **{name: pk.get(name) for name in FRAMEWORKS if name in pk},
        "driver": env.driver_version,
        "nvcc": env.nvcc_version,
        "gcc": env.gcc_version,
        "gpus": [f"{g.name} {g.memory_total_mib // 1024} GiB" for g in env.gpus] if env.gpus is not None else None,
        "env": {k: v for k, v in sorted(env.env.items()) if SHOWN_ENV.match(k)},
    }
