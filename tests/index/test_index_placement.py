"""GPU placement of every index kind, decided by the kinds table and faiss's documented GPU limits.

The device count is faked (the placement rule is a pure function of it), so these run on any CPU machine; a kind
that would raise in faiss's GPU cloner must never be sent there."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from rag.config import RagWarning
from rag.index.kinds import INDEX_TABLE, pq_shape
from rag.index.placement import choose_placement, gpu_placement, warn_cpu_fallback
from rag.index.search_index import build_index

N = 10_000


@pytest.mark.parametrize("kind", list(INDEX_TABLE))
def test_every_kind_places_as_its_table_entry_says(kind):
    entry = INDEX_TABLE[kind]
    device, options, why = gpu_placement(kind, 128, N, "cuda-faiss")
    if entry.gpu == "cpu":
        assert device == "cpu" and why, f"{kind} stays on the CPU and says why"
    else:
        assert device == "cuda-faiss" and not why
    assert gpu_placement(kind, 128, N, "cpu") == ("cpu", {}, "")
    torch_device, _, _ = gpu_placement(kind, 128, N, "cuda-torch")
    assert torch_device == ("cuda-torch" if entry.exact else "cpu")


def test_the_documented_limits():
    # flat and IVF-flat go to the GPU; the flat scalar quantizer does not (faiss's cloner lacks it)
    assert gpu_placement("flat", 384, N, "cuda-faiss")[0] == "cuda-faiss"
    assert gpu_placement("ivf-flat", 384, N, "cuda-faiss")[0] == "cuda-faiss"
    assert gpu_placement("sq8", 384, N, "cuda-faiss")[0] == "cpu"
    # IVF-PQ: m=32 x 256 float32 lookup tables fit 48 KiB of shared memory; m=64 and m=96 need float16 tables
    assert pq_shape(128, N) == (32, 8) and gpu_placement("ivf-pq", 128, N, "cuda-faiss") == ("cuda-faiss", {}, "")
    for d in (256, 384):
        assert gpu_placement("ivf-pq", d, N, "cuda-faiss") == ("cuda-faiss", {"useFloat16LookupTables": True}, "")
    # m=128 is not a code size faiss's GPU IVF-PQ supports; fewer than 8 bits per code neither
    assert pq_shape(512, N)[0] == 128 and gpu_placement("ivf-pq", 512, N, "cuda-faiss")[0] == "cpu"
    assert pq_shape(128, 500)[1] < 8 and gpu_placement("ivf-pq", 128, 500, "cuda-faiss")[0] == "cpu"


@pytest.mark.parametrize(
    "faiss_gpus, torch_cuda, where", [(0, False, "cpu"), (0, True, "cuda-torch"), (2, True, "cuda-faiss")]
)
def test_the_machine_placement_rule(faiss_gpus, torch_cuda, where):
    assert choose_placement(faiss_gpus, torch_cuda) == where


def test_a_kind_that_stays_on_the_cpu_warns_once_and_is_searchable():
    x = np.random.default_rng(0).standard_normal((300, 16)).astype(np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    index = build_index(x, "sq8")  # placed for this CPU machine
    warn_cpu_fallback.cache_clear()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        index.to_device("cuda-faiss")  # a faiss GPU machine: sq8 must not reach the GPU cloner
        index.to_device("cuda-faiss")
    lines = [str(w.message) for w in caught if issubclass(w.category, RagWarning)]
    assert len(lines) == 1 and "sq8 runs on the CPU" in lines[0] and "IndexScalarQuantizer" in lines[0]
    assert index.device == "cpu"
    assert index.search(x[:2], 3)[1][:, 0].tolist() == [0, 1]
