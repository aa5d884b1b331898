"""Where search runs: the machine's placement, decided once per process, then each kind's from its table entry.

  cuda-faiss  faiss sees a GPU: flat and ivf-flat move there with faiss.index_cpu_to_all_gpus; ivf-pq too where
              faiss's GPU IVF-PQ supports its code size (with float16 lookup tables where float32 ones would not
              fit the shared memory); every other kind stays on the CPU with a one-line warning saying why
  cuda-torch  only torch sees CUDA: flat search is a torch matmul + top-k on the GPU
  cpu         everything else
Every result row and manifest says which was used.
"""

from __future__ import annotations

import os
import sys
import warnings
from functools import lru_cache

from rag.config import RagNote, built_once
from rag.index.kinds import import_faiss, index_kind, pq_shape

# faiss GPU IVF-PQ (faiss/gpu/impl/PQCodeDistances and the wiki's "GPU faiss" limits): bytes per code it supports,
# and the shared-memory budget of its lookup tables (m x 2^bits entries, 4 bytes each, 2 with float16 tables)
GPU_PQ_CODE_BYTES = (1, 2, 3, 4, 8, 12, 16, 20, 24, 28, 32, 40, 48, 56, 64, 96)
GPU_PQ_SUB_DIMS = (1, 2, 3, 4, 6, 8, 10, 12, 16, 20, 24, 28, 32)
GPU_SHARED_MEMORY = 48 * 1024


def choose_placement(faiss_gpus: int, torch_cuda: bool) -> str:
    """The placement rule, as a pure function (tests run every branch on a CPU)."""
    if faiss_gpus > 0:
        return "cuda-faiss"
    return "cuda-torch" if torch_cuda else "cpu"


@built_once()
def placement() -> str:
    """Where search runs on this machine: 'cuda-faiss', 'cuda-torch' or 'cpu' (see the module docstring)."""
    faiss = import_faiss()
    gpus = faiss.get_num_gpus() if hasattr(faiss, "get_num_gpus") else 0
    return choose_placement(gpus, gpus == 0 and torch_sees_cuda())


def torch_sees_cuda() -> bool:
    """torch.cuda.is_available(), without importing torch (seconds of a cold start) where no NVIDIA driver is
    loaded and nothing imported torch yet: the ONNX query path stays torch-free."""
    if "torch" not in sys.modules and not os.path.exists("/proc/driver/nvidia"):
        return False
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


# ---------------------------------------------------------------- in-memory indexes


def gpu_placement(kind: str, d: int, n: int, where: str) -> tuple[str, dict, str]:
    """(device, faiss GPU cloner options, why it stays on the CPU) for one index of `kind` at width d over n vectors,
    on a machine whose placement() is `where`. A pure function of the table and faiss's documented GPU limits:
    tests run it for every kind with a faked device count."""
    entry = index_kind(kind)
    if where == "cuda-torch":
        return ("cuda-torch", {}, "") if entry.exact else ("cpu", {}, "only flat search runs as a torch matmul")
    if where != "cuda-faiss":
        return "cpu", {}, ""
    if entry.gpu == "faiss":
        return "cuda-faiss", {}, ""
    if entry.gpu == "faiss-pq":
        m, bits = pq_shape(d, n)
        if bits != 8 or m not in GPU_PQ_CODE_BYTES or d // m not in GPU_PQ_SUB_DIMS:
            return "cpu", {}, f"faiss GPU IVF-PQ supports 8-bit codes of {GPU_PQ_CODE_BYTES} bytes, not {m}×{bits} bits"
        if m * (1 << bits) * 4 <= GPU_SHARED_MEMORY:
            return "cuda-faiss", {}, ""
        if m * (1 << bits) * 2 <= GPU_SHARED_MEMORY:  # float16 lookup tables halve the shared memory
            return "cuda-faiss", {"useFloat16LookupTables": True}, ""
        return "cpu", {}, f"IVF-PQ lookup tables of m={m} do not fit the GPU's shared memory"
    return "cpu", {}, entry.gpu_note


@lru_cache(maxsize=None)
def warn_cpu_fallback(kind: str, why: str) -> None:
    """One line per kind and reason per process: this kind stays on the CPU although faiss sees a GPU."""
    warnings.warn(f"--index {kind} runs on the CPU: {why}", RagNote, stacklevel=4)
