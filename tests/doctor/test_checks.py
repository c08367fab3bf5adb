"""Every check trips on an injected reading and passes on a healthy one; no check lacks either."""

import pytest

from distdx.doctor.catalogue import catalogue
from distdx.doctor.checks import REGISTRY, CheckOptions, nccl_ifname_matches
from distdx.doctor.engine import judge, run_checks
from distdx.doctor.models import DeepSpeedBuild, GpuReading

from .doctor_envs import H100, HEALTHY, make, with_env

RANKS = dict(RANK="1", WORLD_SIZE="4", LOCAL_RANK="1", LOCAL_WORLD_SIZE="2", MASTER_ADDR="10.0.0.5",
             MASTER_PORT="29500")
MULTI = CheckOptions(multi_node=True)
DS_PREBUILT = DeepSpeedBuild("0.16.2", {"cpu_adam": True, "async_io": True}, "2.1", "12.1", "cuda")
A100_40 = GpuReading(1, name="NVIDIA A100-SXM4-40GB", uuid="GPU-ffff", memory_total_mib=40960)

# code -> list of (overrides, expected status, text the message must contain, options)
TRIPS = {
    "DOC-SYS-001": [({"platform": "win32"}, "fail", "Windows", None), ({"platform": "darwin"}, "warn", "macOS", None)],
    "DOC-SYS-002": [({"shm_bytes": 64 * 1024**2}, "fail", "64 MiB", None),
                    ({"shm_bytes": 256 * 1024**2}, "warn", "256 MiB", None)],
    "DOC-SYS-003": [({"infiniband_devices": ("mlx5_0",), "ulimits": {"memlock": (8 * 1024**2, 8 * 1024**2)}},
                     "warn", "mlx5_0", None)],
    "DOC-SYS-004": [({"ulimits": {"nofile": (1024, 4096)}}, "warn", "1024", None)],
    "DOC-SYS-005": [({"disk_free_bytes": 512 * 1024**2}, "fail", "0.5 GiB", None),
                    ({"disk_free_bytes": 5 * 1024**3}, "warn", "below 20 GiB", None)],
    "DOC-PY-001": [({"requires_python": {"torch": ">=3.12"}}, "fail", "needs Python >=3.12", None)],
    "DOC-PY-002": [({"duplicate_packages": {"deepspeed": ("/home/u/.local/lib", "/venv/lib")}}, "warn",
                    ".local", None)],
    "DOC-TORCH-001": [({"packages": {"deepspeed": "0.16.2"}}, "fail", "not installed", None)],
    "DOC-TORCH-002": [({"torch_cuda": None, "packages": {**HEALTHY.packages, "torch": "2.5.1+cpu"}}, "fail",
                       "CPU-only", None)],
    "DOC-TORCH-003": [({"packages": {**HEALTHY.packages, "nvidia-nccl-cu11": "2.14.3"}}, "fail",
                       "nvidia-nccl-cu11", None)],
    "DOC-CUDA-001": [({"driver_version": "470.82.01"}, "fail", "525.60.13", None),
                     ({"torch_cuda": "10.2", "driver_version": "418.39"}, "fail", "440.33", None)],
    "DOC-CUDA-002": [({"nvcc_version": "11.8.89"}, "fail", "11.8", None),
                     ({"nvcc_version": "12.7.0"}, "warn", "rejects", None)],
    "DOC-CUDA-003": [({"env": {"CUDA_HOME": "/usr/local/cuda-11.8"}, "cuda_home_has_nvcc": False}, "warn",
                      "no bin/nvcc", None),
                     ({"env": {}, "cuda_home": None, "cuda_home_has_nvcc": False}, "warn", "no CUDA toolkit", None),
                     ({"env": {}, "cuda_home": "/usr/local", "cuda_home_source": "nvcc on PATH",
                       "cuda_home_has_headers": False}, "warn", "no include/cuda_runtime.h", None)],
    "DOC-CUDA-004": [({"nvcc_version": "12.6.77", "driver_version": "470.82.01"}, "warn", "470.82.01", None)],
    "DOC-NCCL-001": [({"nccl_overrides": ("/opt/nccl-2.10/lib/libnccl.so.2.10.3",)}, "warn", "libnccl.so.2.10.3",
                      None)],
    "DOC-NCCL-002": [(with_env(NCCL_SOCKET_IFNAMES="eth0"), "warn", "did you mean NCCL_SOCKET_IFNAME", None),
                     (with_env(NCCL_ASYNC_ERROR_HANDLING="1"), "warn", "TORCH_NCCL_ASYNC_ERROR_HANDLING", None)],
    "DOC-NCCL-003": [(with_env(NCCL_DEBUG="DEBUG"), "fail", "NCCL_DEBUG=DEBUG", None),
                     (with_env(NCCL_IB_TIMEOUT="40"), "fail", "NCCL_IB_TIMEOUT", None),
                     (with_env(NCCL_SOCKET_NTHREADS="16", NCCL_NSOCKS_PERTHREAD="8"), "fail", "128", None),
                     (with_env(NCCL_PROTO="LL256"), "fail", "LL256", None),
                     (with_env(NCCL_NTHREADS="100"), "fail", "multiple of 32", None),
                     (with_env(NCCL_NTHREADS="1024"), "fail", "64..512", None)],
    "DOC-NCCL-004": [(with_env(NCCL_SOCKET_IFNAME="enp"), "fail", "selects none", None),
                     (with_env(NCCL_SOCKET_IFNAME="=eth"), "fail", "selects none", None),
                     (with_env(NCCL_SOCKET_IFNAME="lo"), "fail", "loopback", MULTI)],
    "DOC-NCCL-005": [(with_env(NCCL_IB_DISABLE="1"), "warn", "NCCL_IB_DISABLE=1", None)],
    "DOC-NET-001": [(with_env(GLOO_SOCKET_IFNAME="eth"), "fail", "did you mean eth0", None)],
    "DOC-NET-002": [({**with_env(MASTER_PORT="29500"), "master_port_probed": True,
                      "master_port_error": "Address already in use"}, "fail", "Address already in use", None)],
    "DOC-NET-003": [({**with_env(MASTER_ADDR="node-01"), "master_addr_error": "Name or service not known"},
                     "fail", "does not resolve", None),
                    ({**with_env(MASTER_ADDR="localhost"), "master_addr_ip": "127.0.0.1"}, "fail", "loopback", MULTI)],
    "DOC-NET-004": [({"hostname_ip": "127.0.1.1"}, "warn", "127.0.1.1", MULTI),
                    ({"hostname_ip": None}, "warn", "does not resolve", None)],
    "DOC-ENV-001": [(with_env(**{**RANKS, "RANK": "4", "WORLD_SIZE": "4"}), "fail", "not below WORLD_SIZE", None),
                    (with_env(RANK="0", WORLD_SIZE="2"), "fail", "missing LOCAL_RANK", None),
                    (with_env(**{**RANKS, "MASTER_PORT": "70000"}), "fail", "outside 1..65535", None),
                    (with_env(**{**RANKS, "WORLD_SIZE": "four"}), "fail", "not a whole number", None)],
    "DOC-ENV-002": [(with_env(CUDA_VISIBLE_DEVICES="0,0"), "fail", "more than once", None),
                     (with_env(CUDA_VISIBLE_DEVICES="0,GPU-2a9d5e11"), "fail", "mixes", None),
                     (with_env(CUDA_VISIBLE_DEVICES="0,5"), "fail", "does not have: 5", None),
                     (with_env(CUDA_VISIBLE_DEVICES="GPU-1f0c3b7a,GPU-2a9d5e11"), "warn", "UUIDs", None)],
    "DOC-ENV-003": [(with_env(CUDA_LAUNCH_BLOCKING="1"), "warn", "CUDA_LAUNCH_BLOCKING=1", None)],
    "DOC-TOOL-001": [({"nvcc_version": "12.2.140", "gxx_version": "13.2.0"}, "fail", "gcc <= 12", None)],
    "DOC-TOOL-002": [({"ninja_version": None}, "warn", "ninja not found", None)],
    "DOC-TOOL-003": [({"gxx_version": None}, "warn", "no g++", None)],
    "DOC-DS-001": [({"deepspeed": DS_PREBUILT}, "fail", "built for torch 2.1", None)],
    "DOC-DS-002": [({"ninja_version": None}, "warn", "ninja", None),
                   ({"cuda_home_has_nvcc": False}, "warn", "nvcc", None)],
    "DOC-DS-003": [({"libaio": False}, "warn", "libaio", None)],
    "DOC-DS-004": [(with_env(DS_ACCELERATOR="gpu"), "fail", "not one of", None),
                   (with_env(DS_ACCELERATOR="cpu"), "warn", "idle", None)],
    "DOC-DS-005": [({"deepspeed_compatible": {"cpu_adam": True, "async_io": False}}, "warn", "async_io", None),
                   ({"deepspeed_compat_error": "importing DeepSpeed's op builders failed: ImportError"}, "warn",
                    "ImportError", None)],
    "DOC-PKG-001": [({"requirements": {**HEALTHY.requirements, "deepspeed": ("torch<2.3",)}}, "fail",
                     "requires torch <2.3", None),
                    ({"torch_cuda": None, "packages": {**HEALTHY.packages, "flash-attn": "2.6.3"}}, "warn",
                     "flash-attn", None)],
    "DOC-PKG-002": [({"packages": {**HEALTHY.packages, "triton": "2.3.1"}}, "fail", "triton ==3.1.0", None)],
    "DOC-PKG-003": [({"packages": {**HEALTHY.packages, "apex": "0.1"}, "apex_extensions": False}, "warn",
                     "amp_C", None)],
    "DOC-CPU-001": [({"cpu_flags": frozenset({"sse4_2", "avx"})}, "warn", "no AVX2", None)],
    "DOC-GPU-001": [(with_env(CUDA_VISIBLE_DEVICES=""), "fail", "none visible", None),
                    (with_env(CUDA_VISIBLE_DEVICES="7"), "fail", "none visible", None)],
    "DOC-GPU-002": [({"gpus": (HEALTHY.gpus[0], A100_40)}, "warn", "exclude GPU 1", None)],
    "DOC-GPU-003": [({"gpus": (HEALTHY.gpus[0], GpuReading(1, uuid="GPU-2", memory_used_mib=30720, **H100))},
                     "warn", "GPU 1 30 of 79 GiB", None)],
}

# Passing variants beyond the healthy node itself.
PASSES = {
    "DOC-SYS-003": [{"infiniband_devices": ("mlx5_0",)}],
    "DOC-NCCL-001": [{"nccl_overrides": ("/opt/nccl/lib/libnccl.so.2.21.5",)}],
    "DOC-NCCL-002": [with_env(NCCL_SOCKET_IFNAME="eth0", NCCL_IB_HCA="mlx5", NCCL_DEBUG="INFO")],
    "DOC-NCCL-003": [with_env(NCCL_DEBUG="info", NCCL_ALGO="^Tree", NCCL_PROTO="LL128,Simple",
                              NCCL_P2P_LEVEL="NVL", NCCL_IB_TIMEOUT="22", NCCL_NTHREADS="96",
                              NCCL_SOCKET_NTHREADS="4", NCCL_NSOCKS_PERTHREAD="16")],
    "DOC-CUDA-001": [{"torch_cuda": "13.0", "driver_version": "580.65.06"}],
    "DOC-NCCL-004": [with_env(NCCL_SOCKET_IFNAME="^lo,docker"), with_env(NCCL_SOCKET_IFNAME="=eth0"),
                     with_env(NCCL_SOCKET_IFNAME="eth")],
    "DOC-NET-001": [with_env(GLOO_SOCKET_IFNAME="eth0")],
    "DOC-NET-002": [{**with_env(MASTER_PORT="29500"), "master_port_probed": True}],
    "DOC-NET-003": [{**with_env(MASTER_ADDR="node01"), "master_addr_ip": "10.0.0.5"}],
    "DOC-NET-004": [{"hostname_ip": "127.0.1.1"}],  # single node: loopback is fine
    "DOC-ENV-001": [with_env(**RANKS)],
    "DOC-ENV-002": [with_env(CUDA_VISIBLE_DEVICES="1,0")],
    "DOC-DS-001": [{"deepspeed": DeepSpeedBuild("0.16.2", {"cpu_adam": True}, "2.5", "12.4", "cuda")}],
    "DOC-DS-003": [{"libaio": False, "deepspeed": DS_PREBUILT}],
    "DOC-DS-004": [with_env(DS_ACCELERATOR="cuda")],
    "DOC-DS-005": [{"deepspeed_compatible": {"cpu_adam": True, "fused_adam": True}}],
    "DOC-PKG-003": [{"packages": {**HEALTHY.packages, "apex": "0.1"}, "apex_extensions": True}],
    "DOC-GPU-001": [with_env(CUDA_VISIBLE_DEVICES="GPU-2a9d5e11")],
}

SPECS = {s.code: s for s in catalogue()}


def _verdict(code, env, options=None):
    return judge(SPECS[code], env, options or CheckOptions())


def test_catalogue_and_registry_agree_and_have_25_or_more_checks():
    assert set(SPECS) == set(REGISTRY)
    assert len(SPECS) >= 25


def test_every_check_has_a_trip_and_a_pass_case():
    assert set(TRIPS) == set(SPECS), f"checks without a tripping case: {set(SPECS) - set(TRIPS)}"


@pytest.mark.parametrize("code", sorted(SPECS))
def test_healthy_node_passes(code):
    result = _verdict(code, HEALTHY)
    assert result.status in ("pass", "skip"), result.message
    assert result.fix is None
    if result.status == "skip":  # nothing to judge on the healthy node: a passing variant must exist
        assert code in PASSES, f"{code} skips on the healthy node and has no passing variant"


@pytest.mark.parametrize("code,overrides", [(c, o) for c, items in PASSES.items() for o in items],
                         ids=lambda v: v if isinstance(v, str) else "")
def test_passing_variants(code, overrides):
    result = _verdict(code, make(**overrides))
    assert result.status == "pass", result.message


@pytest.mark.parametrize("code,overrides,status,text,options",
                         [(c, *case) for c, cases in TRIPS.items() for case in cases],
                         ids=lambda v: v if isinstance(v, str) and v.startswith("DOC-") else "")
def test_check_trips(code, overrides, status, text, options):
    result = _verdict(code, make(**overrides), options)
    assert result.status == status, result.message
    assert text in result.message
    assert result.fix == SPECS[code].fix  # warn and fail carry the catalogue's fix
    assert (result.symptom, result.root_cause, result.fix_pattern) == (
        SPECS[code].symptom, SPECS[code].root_cause, SPECS[code].fix_pattern)


@pytest.mark.parametrize("code", ["DOC-GPU-001", "DOC-GPU-002", "DOC-GPU-003", "DOC-TORCH-002"])
def test_gpu_checks_skip_with_the_reason_when_nothing_was_read(code):
    result = _verdict(code, make(gpus=None, gpu_probe_error="nvidia-ml-py is not installed"))
    assert result.status == "skip"
    assert "nvidia-ml-py is not installed" in result.message


def test_nccl_ifname_rules_follow_nccl():
    ifaces = ("lo", "eth0", "eth1", "docker0", "ib0")
    assert nccl_ifname_matches("eth", ifaces) == ["eth0", "eth1"]
    assert nccl_ifname_matches("=eth", ifaces) == []
    assert nccl_ifname_matches("=eth1", ifaces) == ["eth1"]
    assert nccl_ifname_matches("^lo,docker", ifaces) == ["eth0", "eth1", "ib0"]
    assert nccl_ifname_matches("^=eth0", ifaces) == ["lo", "eth1", "docker0", "ib0"]
    assert nccl_ifname_matches("ib0:1", ifaces) == ["ib0"]


def test_run_checks_only_and_report_round_trip():
    report = run_checks(make(platform="win32"), only=["DOC-SYS"])
    assert {c.code for c in report.checks} == {c for c in SPECS if c.startswith("DOC-SYS")}
    assert report.failed
    from distdx.doctor.models import DoctorReport

    again = DoctorReport.from_dict(report.to_dict())
    assert again.checks == report.checks
    assert again.to_dict()["summary"]["fail"] == 1
