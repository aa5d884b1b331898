"""Where and how a training runs: device, precision, compile, DDP ranks, peak memory and peak FLOP/s."""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass

from rag.config import RagError, current_rss_mb, peak_rss_mb

# Dense bf16 peaks (FLOP/s, no sparsity) of common GPUs, by a substring of the device name.
GPU_BF16_PEAK = {
    "H200": 989e12,
    "H100": 989e12,
    "A100": 312e12,
    "L40S": 362e12,
    "L4": 121e12,
    "A10": 125e12,
    "RTX 4090": 165e12,
    "V100": 125e12,
    "T4": 65e12,
}


@dataclass
class Runtime:
    device: str  # "cpu" | "cuda"
    precision: str  # "fp32" | "bf16"
    compile: bool
    rank: int = 0
    world: int = 1

    @property
    def main(self) -> bool:
        return self.rank == 0

    def autocast(self):
        import torch

        if self.precision == "bf16":
            return torch.autocast(self.device, dtype=torch.bfloat16)
        return contextlib.nullcontext()

    def prepare_model(self, model):
        """Apply the precision choice that lives on the model (bf16 head matmuls)."""
        import torch

        model.head_dtype = torch.bfloat16 if self.precision == "bf16-head" else None
        model.fused_loss = not self.compile
        return model

    def describe(self) -> str:
        return f"{self.device}-{self.precision}{'+compile' if self.compile else ''}{f'-ddp{self.world}' if self.world > 1 else ''}"


def cpu_has_bf16() -> bool:
    """True where the CPU runs bf16 matmuls natively (AMX / AVX512-BF16)."""
    try:
        flags = open("/proc/cpuinfo").read()
    except OSError:
        return False
    return "amx_bf16" in flags or "avx512_bf16" in flags


PRECISIONS = ("auto", "fp32", "bf16", "bf16-head")


def auto_precision(device: str, dim: int) -> str:
    """bf16 autocast on GPUs. On CPUs with native bf16 (AMX): bf16 autocast from d=256 on; below, only the
    head + loss matmuls in bf16 ("bf16-head"), the blocks in fp32. Measured with rag lm bench on 2 cores: at
    d=128 full autocast is slower than fp32 (the bf16 flash-attention backward with 16-wide heads and the
    casts of many small tensors), while the V x d head in bf16 is 1.4x faster; at d>=256 autocast is 1.4-2x."""
    if device == "cuda":
        return "bf16"
    if not cpu_has_bf16():
        return "fp32"
    return "bf16" if dim >= 256 else "bf16-head"


def choose(precision: str = "auto", compile: str = "auto", threads: int | None = None, dim: int = 256) -> Runtime:
    """Pick device/precision/compile; join the DDP group when started by torchrun."""
    import torch

    if threads:
        torch.set_num_threads(threads)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    if precision == "auto":
        precision = auto_precision(device, dim)
    if precision not in PRECISIONS:
        raise RagError(f"unknown --precision {precision!r}; use {', '.join(PRECISIONS)}")
    if compile not in ("auto", "on", "off"):
        raise RagError(f"unknown --compile {compile!r}; use auto, on or off")
    # torch.compile on this 2-core CPU: 1.54x -> 1.78x the fp32 reference at d=128 (rag lm bench, quiet machine), for
    # a compile step in every process: GPU only by default, `--compile on` for long CPU runs
    use_compile = compile == "on" or (compile == "auto" and device == "cuda")
    rank, world = int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1))
    if world > 1:
        import torch.distributed as dist

        if not dist.is_initialized():
            dist.init_process_group("nccl" if device == "cuda" else "gloo")
        if device == "cuda":
            torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", 0)) % torch.cuda.device_count())
    return Runtime(device, precision, use_compile, rank, world)


def is_oom(exc: BaseException) -> bool:
    import torch

    if isinstance(exc, torch.cuda.OutOfMemoryError):
        return True
    text = str(exc).lower()
    return isinstance(exc, (RuntimeError, MemoryError)) and (
        isinstance(exc, MemoryError)
        or "out of memory" in text
        or "not enough memory" in text
        or "can't allocate memory" in text
    )


def oom_error(dim: int, batch: int, where: str) -> RagError:
    return RagError(
        f"out of memory at d={dim} ({where}, batch {batch}); reduce --batch (e.g. --batch {max(1, batch // 2)}) "
        "or --dim/--layers"
    )


# ------------------------------------------------------------------ memory and FLOP/s


def reset_peak_memory(device: str) -> None:
    """Start a fresh peak: CUDA allocator stats, or the kernel's peak RSS (VmHWM) of this process."""
    import torch

    if device == "cuda":
        torch.cuda.reset_peak_memory_stats()
        return
    import ctypes
    import gc

    gc.collect()
    with contextlib.suppress(OSError, AttributeError):  # hand freed heap pages (an earlier d's model) back to the OS
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    with contextlib.suppress(OSError):
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")


def current_memory(device: str) -> int:
    """Bytes in use now: CUDA allocated memory, or the RSS of the process (the baseline under a peak)."""
    import torch

    if device == "cuda":
        return int(torch.cuda.memory_allocated())
    return int(current_rss_mb() * 1024 * 1024)


def peak_memory(device: str) -> int:
    """torch.cuda.max_memory_allocated on a GPU; the peak RSS of the process on a CPU (bytes)."""
    import torch

    if device == "cuda":
        return int(torch.cuda.max_memory_allocated())
    return int(peak_rss_mb() * 1024 * 1024)


def flops_peak(rt: Runtime) -> tuple[float, str]:
    """(peak FLOP/s, how it was obtained) for the MFU denominator."""
    import torch

    if rt.device == "cuda":
        name = torch.cuda.get_device_name()
        for key, peak in GPU_BF16_PEAK.items():
            if key in name:
                return peak, f"{name} dense bf16 datasheet peak"
        return matmul_peak("cuda", torch.bfloat16), f"{name} bf16 matmul measured in this run"
    name = "fp32" if rt.precision == "fp32" else "bf16"
    return both_peaks("cpu")[name], f"CPU {name} 2048^3 matmul measured in this run ({torch.get_num_threads()} threads)"


PEAKS: dict = {}


def both_peaks(device: str) -> dict[str, float]:
    """fp32 and bf16 matmul peaks (FLOP/s) of this device, measured once per process (nan: no native bf16)."""
    import torch

    key = (device, torch.get_num_threads())
    if key not in PEAKS:
        bf16 = device == "cuda" or cpu_has_bf16()
        PEAKS[key] = {
            "fp32": matmul_peak(device, torch.float32),
            "bf16": matmul_peak(device, torch.bfloat16) if bf16 else float("nan"),
        }
    return PEAKS[key]


def matmul_peak(device: str = "cpu", dtype=None, n: int = 2048, seconds: float = 1.0) -> float:
    """Achieved FLOP/s of an n x n x n matmul."""
    import time

    import torch

    dtype = dtype or torch.float32
    a, b = torch.randn(n, n, dtype=dtype, device=device), torch.randn(n, n, dtype=dtype, device=device)
    for _ in range(2):
        a @ b
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    sync()
    reps, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        a @ b
        reps += 1
    sync()
    return 2 * n**3 * reps / (time.perf_counter() - t0)
