"""A healthy two-GPU node, as injected readings: each check test changes one fact of it."""

from dataclasses import replace


from distdx.doctor.models import DeepSpeedBuild, Environment, GpuReading

H100 = dict(name="NVIDIA H100 80GB HBM3", memory_total_mib=81559)

HEALTHY = Environment(
    platform="linux", machine="x86_64", hostname="node01", hostname_ip="10.0.0.5", python_version="3.11.9",
    packages={"torch": "2.5.1", "deepspeed": "0.16.2", "triton": "3.1.0", "nvidia-nccl-cu12": "2.21.5",
              "nvidia-cudnn-cu12": "9.1.0.70"},
    requirements={"torch": ('triton==3.1.0; platform_system == "Linux" and platform_machine == "x86_64"',
                            "sympy==1.13.1; python_version >= \"3.9\"", 'opt-einsum>=3.3; extra == "opt-einsum"'),
                  "deepspeed": ("torch", "ninja", "packaging>=20.0")},
    requires_python={"torch": ">=3.8.0", "deepspeed": ">=3.8"},
    torch_cuda="12.4", torch_cudnn="9.1.0.70", torch_nccl="2.21.5",
    nvcc_version="12.4.131", cuda_home="/usr/local/cuda-12.4", cuda_home_source="CUDA_HOME",
    cuda_home_has_nvcc=True, cuda_home_has_headers=True, gcc_version="12.3.0", gxx_version="12.3.0",
    ninja_version="1.11.1",
    driver_version="550.54.15",
    gpus=(GpuReading(0, uuid="GPU-1f0c3b7a-0000-0000-0000-000000000000", **H100),
          GpuReading(1, uuid="GPU-2a9d5e11-0000-0000-0000-000000000000", **H100)),
    gpu_probe_error=None, cpu_flags=frozenset({"sse4_2", "avx", "avx2", "avx512f"}), shm_bytes=16 * 1024**3,
    ulimits={"memlock": (-1, -1), "nofile": (65536, 1048576)}, env={"CUDA_HOME": "/usr/local/cuda-12.4"},
    interfaces=("lo", "eth0", "ib0"), disk_path="/ckpt", disk_free_bytes=500 * 1024**3, libaio=True,
    deepspeed=DeepSpeedBuild(version="0.16.2", installed_ops={"cpu_adam": False, "async_io": False,
                                                             "fused_adam": False},
                             torch_version="0.0", cuda_version="0.0", accelerator="cuda"),
)


def with_env(**variables: str) -> dict:
    """Overrides that add environment variables to the healthy node's."""
    return {"env": {**HEALTHY.env, **variables}}




def make(**overrides) -> Environment:
    return replace(HEALTHY, **overrides)
