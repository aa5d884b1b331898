"""The encoder layer: every encoder, declared once in ENCODERS, loaded by name.

- `base`: the interface (`encode(texts, kind) -> float32 [n, dim]`, `.name`, `.dim`) and shared helpers.
- `minilm`: all-MiniLM-L6-v2 (384-d), a sentence-transformer run through transformers.
- `onnx`: the same MiniLM exported to ONNX (fp32, and int8 by dynamic quantization), run by ONNX Runtime without
  torch. ENCODER_BACKENDS names the backends; each encoder lists the ones it has, its default first.
- `tables`: pooled rows of an input-embedding table: SmolLM2's (576-d) and our own LMs' (`lm:<run dir>`).
- `cache`: full-width document vectors, encoded once per (corpus content, encoder).

Reaching a lower d (pca, truncate, whiten, ...) is the next layer up, rag.reduce.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from rag.config import RagError, built_once, runtime_environment
from rag.encoders.base import Encoder


@dataclass(frozen=True)
class BackendSpec:
    help: str
    vectors: str  # backends with the same vectors share the embedding cache (fp32 torch and fp32 ONNX agree)


ENCODER_BACKENDS: dict[str, BackendSpec] = {
    "torch": BackendSpec("PyTorch through transformers (the reference vectors)", "fp32"),
    "onnx": BackendSpec("ONNX Runtime, fp32 export of the same graph (same vectors; no torch at query time)", "fp32"),
    "onnx-int8": BackendSpec(
        "ONNX Runtime, int8 weights by dynamic quantization (fastest; near, not equal, vectors)", "int8"
    ),
}


def load_minilm(name: str) -> Encoder:
    from rag.encoders.minilm import MiniLMEncoder

    return MiniLMEncoder(name)


def load_smollm2_table(name: str) -> Encoder:
    from rag.encoders.tables import load_smollm2_table_encoder

    return load_smollm2_table_encoder(name)


def load_lm_table(name: str) -> Encoder:
    from rag.encoders.tables import load_lm_table_encoder

    return load_lm_table_encoder(name)


@dataclass(frozen=True)
class EncoderSpec:
    name: str  # an exact name, or a prefix ending in ':' whose loader receives the full name
    width: int | None  # full output width; None = known only once loaded
    load: Callable[[str], Encoder]  # the torch (or plain numpy) loader
    help: str
    backends: tuple[str, ...] = ("torch",)  # the backends it has; the first encodes documents by default
    query_backend: str | None = None  # the default for queries (None = the first of backends)


ENCODERS: dict[str, EncoderSpec] = {
    s.name: s
    for s in (
        EncoderSpec(
            "minilm",
            384,
            load_minilm,
            "all-MiniLM-L6-v2 sentence-transformer (384-d)",
            # chosen on SciFact (README, Encoder backends): int8 queries over fp32 documents lose no nDCG@10
            backends=("onnx", "torch", "onnx-int8"),
            query_backend="onnx-int8",
        ),
        EncoderSpec(
            "smollm2-input", 576, load_smollm2_table, "SmolLM2 input-embedding table, IDF-weighted pooling (576-d)"
        ),
        EncoderSpec(
            "smollm2-input-mean", 576, load_smollm2_table, "SmolLM2 input-embedding table, mean pooling (576-d)"
        ),
        EncoderSpec(
            "smollm2-input-wbm25",
            576,
            load_smollm2_table,
            "SmolLM2 input table, token-whitened, BM25-weighted pooling (576-d)",
        ),
        EncoderSpec("lm:", None, load_lm_table, "the input table of a model from rag lm train (#idf: IDF pooling)"),
    )
}
ENCODER_NAMES = tuple(n for n in ENCODERS if not n.endswith(":"))


def encoder_spec(name: str) -> EncoderSpec:
    """The registry entry for a name, or a RagError listing the valid names."""
    if name in ENCODERS and not name.endswith(":"):
        return ENCODERS[name]
    for prefix, spec in ENCODERS.items():
        if prefix.endswith(":") and name.startswith(prefix) and len(name) > len(prefix):
            return spec
    valid = [n if not n.endswith(":") else f"{n}<checkpoint dir>" for n in ENCODERS]
    raise RagError(f"unknown encoder '{name}'; valid encoders: {', '.join(valid)}")


def check_encoder_name(name: str) -> str:
    encoder_spec(name)
    return name


def encoder_help() -> str:
    """One line per encoder, for --help texts and the HTTP schema."""
    return "; ".join(f"{s.name}{'<run dir>' if s.name.endswith(':') else ''}: {s.help}" for s in ENCODERS.values())


def check_backend(name: str, backend: str | None, queries: bool = False) -> str:
    """The backend to run an encoder with, or a RagError saying which it has. None = the encoder's default: for
    documents (index builds, get_encoder) its first backend, for queries (RetrievalSettings) its query_backend."""
    spec = encoder_spec(name)
    if backend is None:
        return (spec.query_backend if queries else None) or spec.backends[0]
    if backend not in ENCODER_BACKENDS:
        raise RagError(f"unknown backend '{backend}'; valid backends: {', '.join(ENCODER_BACKENDS)}")
    if backend not in spec.backends:
        raise RagError(
            f"encoder '{name}' has no {backend} backend (only MiniLM has an ONNX export); "
            f"use --backend {' or '.join(spec.backends)}"
        )
    return backend


def vector_name(name: str, backend: str | None = None) -> str:
    """The embedding-cache name of (encoder, backend): fp32 backends share one, int8 has its own."""
    backend = check_backend(name, backend)
    return name if ENCODER_BACKENDS[backend].vectors == "fp32" else f"{name}@{backend}"


def backend_help() -> str:
    m = ENCODERS["minilm"]
    return "; ".join(f"{n}: {s.help}" for n, s in ENCODER_BACKENDS.items()) + (
        f". Defaults: minilm encodes queries with {m.query_backend} and documents (index build) with "
        f"{m.backends[0]}; the table encoders run on torch only."
    )


def get_encoder(name: str, backend: str | None = None) -> Encoder:
    """The encoder for a name and backend (None = the encoder's default), loaded once per process."""
    return load_encoder(name, check_backend(name, backend))


@built_once(maxsize=8)
def load_encoder(name: str, backend: str) -> Encoder:
    spec = encoder_spec(name)
    runtime_environment()
    if backend == "torch":
        return spec.load(name)
    from rag.encoders.onnx import OnnxEncoder

    return OnnxEncoder(backend, name=vector_name(name, backend))


def encoder_width(name: str) -> int:
    """The encoder's full width, without loading the model when the registry knows it."""
    return encoder_spec(name).width or get_encoder(name).dim


def minilm_query_encoder() -> Encoder:
    """The MiniLM query encoder on its query backend (torch-free), the one the retriever and the agent's models share."""
    return get_encoder("minilm", check_backend("minilm", None, queries=True))
