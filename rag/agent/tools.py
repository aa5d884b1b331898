"""Agent tools: an exact embedding-size calculator and a langchain-core retriever over rag.retrieve.

The calculator works on integers, so its figures are exact:
  params            V·d
  bytes             V·d·b with b = 4 (fp32), 2 (fp16, bf16), 1 (int8), 0.5 (4-bit)
  training memory   N·16 bytes with Adam in fp32: weights + gradients + first and second moments
  d heuristic       1.5·√V
  FLOPs per token   attention 8·d² + 4·T·d, MLP (hidden 4d) 16·d², forward pass, per layer
  uniform guessing  over V outcomes: loss (entropy) ln V nats = log₂ V bits, perplexity V
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

BYTES_PER_PARAM = {"fp32": 4.0, "fp16": 2.0, "bf16": 2.0, "int8": 1.0, "int4": 0.5, "binary": 0.125}
ADAM_BYTES_PER_PARAM = 16  # fp32 weight + gradient + m + v

# A number such as 50,000 / 50k / 1.5M / 128000 / 4096.
_NUM = r"(\d+(?:[.,]\d+)*)\s*([kKmMbB](?![a-zA-Z]))?"
_SHAPE = re.compile(_NUM + r"\s*(?:×|x|X|\*|by)\s*" + _NUM)
_SEP = r"\s*(?:=|:|\bis\b|\bof\b)?\s*(?:about\s+|around\s+)?"  # "V=50000", "a vocabulary of 50,000", "dimension 768"
_NAMED = {
    "V": re.compile(
        r"\b(?:V|vocab(?:ulary)?(?:\s+(?:size|of\s+size))?|items|categories|tokens? in the vocabulary)" + _SEP + _NUM
    ),
    "d": re.compile(
        r"\b(?:d|d_model|dim(?:ension(?:ality)?)?s?|width|embedding\s+(?:size|width|dim(?:ension)?)|hidden\s+size)"
        + _SEP
        + _NUM
    ),
    "T": re.compile(
        r"\b(?:T|context(?:\s+length)?|seq(?:uence)?(?:\s+length)?|tokens? of context)\s*(?:=|of|is|:)?\s*" + _NUM
    ),
    "N": re.compile(_NUM + r"\s*(?:parameters|params)\b"),
}
_SUFFIX = {"k": 1_000, "m": 1_000_000, "b": 1_000_000_000}


@dataclass
class CalcResult:
    """One calculator answer: what was computed, from which inputs, and a sentence with the figures."""

    kind: str  # params | bytes | training_memory | sqrt_heuristic | flops | uniform
    inputs: dict[str, Any]
    values: dict[str, float]
    text: str
    topic: str  # words to find the corpus passage that gives the formula
    extra: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict:
        return {"kind": self.kind, "inputs": self.inputs, "values": self.values, "text": self.text}


def parse_number(digits: str, suffix: str | None = None) -> float:
    """'50,000' -> 50000; '128', 'k' -> 128000; '1.5', 'M' -> 1500000."""
    if re.fullmatch(r"\d{1,3}(,\d{3})+", digits):
        value = float(digits.replace(",", ""))
    else:
        value = float(digits.replace(",", "."))
    if suffix:
        value *= _SUFFIX[suffix.lower()]
    return value


def _as_int(x: float) -> int | float:
    return int(x) if float(x).is_integer() else x


def fmt_int(n: float) -> str:
    return f"{int(n):,}" if float(n).is_integer() else f"{n:,.2f}"


def fmt_bytes(n: float) -> str:
    """Decimal units, as in the corpus: 76,800,000 bytes -> '76.8 MB'."""
    for unit, size in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= size:
            return f"{n / size:,.{2 if n / size < 10 else 1}f}".rstrip("0").rstrip(".") + f" {unit}"
    return f"{fmt_int(n)} bytes"


def embedding_params(V: int, d: int) -> int:
    return int(V) * int(d)


def param_bytes(n_params: float, dtype: str = "fp32") -> float:
    return n_params * BYTES_PER_PARAM[dtype]


def adam_training_bytes(n_params: float) -> float:
    return n_params * ADAM_BYTES_PER_PARAM


def sqrt_heuristic(V: float) -> float:
    return 1.5 * math.sqrt(V)


def attention_flops_per_token(d: int, T: int) -> int:
    """Forward FLOPs per token per layer: Q, K, V, O projections (2·4d²) plus scores and weighted sum (2·2·T·d)."""
    return 8 * d * d + 4 * T * d


def mlp_flops_per_token(d: int) -> int:
    """Forward FLOPs per token per layer for an MLP with hidden width 4d: 2 FLOPs per weight, 8·d² weights."""
    return 16 * d * d


def _dtype_in(text: str) -> str | None:
    low = text.lower()
    for name in ("fp32", "fp16", "bf16", "int8", "int4", "binary"):
        if name in low:
            return name
    aliases = {
        "float32": "fp32",
        "float16": "fp16",
        "half precision": "fp16",
        "bfloat16": "bf16",
        "single precision": "fp32",
        "4-bit": "int4",
        "4 bit": "int4",
        "8-bit": "int8",
        "1-bit": "binary",
        "sign bit": "binary",
        "one bit": "binary",
    }
    for alias, name in aliases.items():
        if alias in low:
            return name
    return None


_UNIFORM = re.compile(r"\buniform(?:ly)?\b|\bat random\b|\bequal probabilit", re.IGNORECASE)
_OUTCOMES = re.compile(
    _NUM + r"\s*(?:possible\s+|equally\s+likely\s+|different\s+)?"
    r"(?:tokens?|words?|classes|categories|outcomes|choices|labels|symbols|items|options)\b"
)


def _uniform(question: str, V: float | None) -> CalcResult | None:
    """Loss, entropy or perplexity of a uniform guess over V outcomes ("a model that predicts uniformly over
    50,257 tokens"): ln V nats, log₂ V bits, perplexity V."""
    low = question.lower()
    if not _UNIFORM.search(question) or not re.search(r"loss|entropy|perplexity|nats?\b|bits?\b", low):
        return None
    m = _OUTCOMES.search(question)
    n = parse_number(m.group(1), m.group(2)) if m else V
    if not n or n < 2:
        return None
    nats, bits = math.log(n), math.log2(n)
    text = (
        f"A uniform prediction over V = {fmt_int(n)} outcomes has loss ln V = ln {fmt_int(n)} ≈ {nats:.2f} nats "
        f"(log₂ V ≈ {bits:.2f} bits) and perplexity V = {fmt_int(n)}."
    )
    return CalcResult(
        "uniform",
        {"V": _as_int(n)},
        {"loss_nats": round(nats, 4), "loss_bits": round(bits, 4), "perplexity": _as_int(n)},
        text,
        "uniform prediction over a vocabulary of V tokens perplexity V loss ln V",
    )


def _named(text: str, name: str) -> float | None:
    match = _NAMED[name].search(text)
    return parse_number(match.group(1), match.group(2)) if match else None


def calculate(question: str) -> CalcResult | None:
    """Answer a size or arithmetic question about embeddings exactly, or return None if it is not one."""
    low = question.lower()
    shape = _SHAPE.search(question)
    V = d = None
    if shape:
        V, d = parse_number(shape.group(1), shape.group(2)), parse_number(shape.group(3), shape.group(4))
    V = _named(question, "V") if V is None else V
    d = _named(question, "d") if d is None else d
    T = _named(question, "T")
    N = _named(question, "N")
    dtype = _dtype_in(question)

    uniform = _uniform(question, V)
    if uniform:
        return uniform
    if "flop" in low and d:
        d_i, T_i = int(d), int(T or 0)
        att, mlp = attention_flops_per_token(d_i, T_i), mlp_flops_per_token(d_i)
        text = (
            f"Per token and layer (forward pass), with d = {fmt_int(d_i)} and T = {fmt_int(T_i)}: attention "
            f"8·d² + 4·T·d = {fmt_int(att)} FLOPs; MLP (hidden 4d) 16·d² = {fmt_int(mlp)} FLOPs; "
            f"total {fmt_int(att + mlp)} FLOPs."
        )
        return CalcResult(
            "flops",
            {"d": d_i, "T": T_i},
            {"attention_flops": att, "mlp_flops": mlp, "total_flops": att + mlp},
            text,
            "compute per token FLOPs attention MLP d squared",
        )

    if ("√" in question or "sqrt" in low or "square root" in low or "rule of thumb" in low or "heuristic" in low) and (
        V or (shape is None and d is None)
    ):
        if V is None:
            nums = re.findall(_NUM, question)
            candidates = [parse_number(a, b) for a, b in nums if parse_number(a, b) != 1.5]
            V = candidates[0] if candidates else None
        if V is None:
            return None
        value = sqrt_heuristic(V)
        text = (
            f"The 1.5·√V rule of thumb gives d ≈ 1.5 × √{fmt_int(V)} = 1.5 × {math.sqrt(V):.1f} "
            f"≈ {value:.0f} for V = {fmt_int(V)}."
        )
        return CalcResult(
            "sqrt_heuristic",
            {"V": _as_int(V)},
            {"d": round(value, 2)},
            text,
            "choosing d 1.5 square root V rule of thumb",
        )

    if N is None and V and d:
        N = embedding_params(int(V), int(d))
    if N is None and d and V is None and re.search(r"\bvectors?\b|\bembeddings?\b|\brows?\b", low):
        return _vector_bytes(int(d), dtype, low)
    if N is None:
        return None
    inputs = {"V": _as_int(V), "d": _as_int(d)} if V and d else {"N": _as_int(N)}
    shape_text = f"{fmt_int(V)} × {fmt_int(d)} = " if V and d else ""

    if "adam" in low or "training" in low or "train" in low:
        total = adam_training_bytes(N)
        text = (
            f"Training state with Adam (fp32 weights, gradients, first and second moments, 16 bytes per "
            f"parameter): {shape_text}{fmt_int(N)} parameters × 16 = {fmt_int(total)} bytes ≈ {fmt_bytes(total)}."
        )
        return CalcResult(
            "training_memory",
            inputs,
            {"params": N, "bytes": total},
            text,
            "training memory Adam weights gradients moments 16 bytes per parameter",
        )

    wants_bytes = dtype is not None or any(
        w in low for w in ("memory", "bytes", "size", " mb", " gb", "how big", "take", "disk", "storage")
    )
    if wants_bytes:
        dtypes = [dtype] if dtype else ["fp32", "fp16", "bf16", "int8"]
        values: dict[str, float] = {"params": N}
        parts = []
        for name in dtypes:
            size = param_bytes(N, name)
            values[f"bytes_{name}"] = _as_int(size)
            parts.append(
                f"{name}: {fmt_int(N)} × {BYTES_PER_PARAM[name]:g} = {fmt_int(size)} bytes ≈ {fmt_bytes(size)}"
            )
        text = f"Parameters: {shape_text}{fmt_int(N)}. " + "; ".join(parts) + "."
        return CalcResult("bytes", inputs, values, text, "bytes per parameter fp32 fp16 bf16 table size V·d")

    if V and d:
        size16 = param_bytes(N, "fp16")
        text = (
            f"An embedding table of V × d = {shape_text}{fmt_int(N)} parameters "
            f"({fmt_bytes(param_bytes(N, 'fp32'))} in fp32, {fmt_bytes(size16)} in fp16)."
        )
        return CalcResult(
            "params",
            inputs,
            {"params": N, "bytes_fp32": param_bytes(N, "fp32"), "bytes_fp16": size16},
            text,
            "counting embedding parameters V times d",
        )
    return None


def _vector_bytes(d: int, dtype: str | None, low: str) -> CalcResult | None:
    """One vector of width d: d × bytes per number (a d=384 int8 vector takes 384 bytes)."""
    if dtype is None and not any(w in low for w in ("bytes", "memory", "size", "take", "storage", "disk")):
        return None
    dtypes = [dtype] if dtype else ["fp32", "fp16", "int8"]
    values: dict[str, float] = {"d": d}
    parts = []
    for name in dtypes:
        size = d * BYTES_PER_PARAM[name]
        values[f"bytes_{name}"] = _as_int(size)
        parts.append(f"{name}: {fmt_int(d)} × {BYTES_PER_PARAM[name]:g} = {fmt_int(size)} bytes")
    text = f"One vector of d = {fmt_int(d)} numbers takes " + "; ".join(parts) + "."
    return CalcResult("bytes", {"d": d}, values, text, "bytes per vector d float32 int8 index memory")


def make_langchain_retriever(retriever, k: int = 5, search_kwargs: dict | None = None):
    """Wrap a retriever (rag.retrieve.Retriever or rag.api.Searcher) as a langchain-core BaseRetriever.

    search_kwargs ({"k": n, "where": "source=GLOB"}) are the defaults of every call; `invoke(query, k=1)` and
    `invoke(query, where=...)` override them for one call, as LangChain's standard retriever tests expect."""
    from dataclasses import replace

    from langchain_core.documents import Document
    from langchain_core.retrievers import BaseRetriever

    class RagRetriever(BaseRetriever):
        """langchain-core adapter: each hit becomes a Document with id, title, source, score and the passage's
        metadata (heading, page, mtime where it has them)."""

        inner: Any
        k: int = 5
        search_kwargs: dict = {}

        def _get_relevant_documents(self, query: str, *, run_manager=None, **kwargs) -> list[Document]:
            options = {"k": self.k, **self.search_kwargs, **kwargs}
            k, where = options.pop("k"), options.pop("where", None)
            if options:
                from rag.config import RagError

                raise RagError(f"unknown search option(s) {', '.join(options)}; use k and where")
            inner = self.inner
            if where is not None and hasattr(inner, "settings") and not hasattr(inner, "retriever"):
                inner = replace(inner, settings=replace(inner.settings, where=where), timings={})  # a plain Retriever
                where = None
            hits = inner.search(query, k=k, **({"where": where} if where is not None else {}))
            return [
                Document(
                    page_content=h.passage.text,
                    id=h.passage.id,
                    metadata={k_: v for k_, v in h.as_dict().items() if k_ != "text"},
                )
                for h in hits
            ]

    return RagRetriever(inner=retriever, k=(search_kwargs or {}).get("k", k), search_kwargs=dict(search_kwargs or {}))


class TitleLinker:
    """Entity lookup: the passages whose title (without a trailing "(...)" qualifier) is mentioned in a text.

    This follows the links a reader would: a first-hop passage that names "Shirley Temple" leads to the passage
    titled "Shirley Temple". Matching is exact on lower-cased word spans that start with a capital or a digit,
    longest span first, up to MAX_WORDS words.
    """

    MAX_WORDS = 8
    _WORD = re.compile(r"[\w'’.&-]+")

    def __init__(self, passages):
        self.by_title: dict[str, list[str]] = {}
        for p in passages:
            base = re.sub(r"\s*\(.*?\)\s*$", "", p.title or "").strip().lower()
            if base and len(base) > 2 and base.split()[0] not in _COMMON_STARTS:
                self.by_title.setdefault(base, []).append(p.id)

    def mentions(self, text: str, exclude=()) -> list[str]:
        toks = [(m.group(0), m.start()) for m in self._WORD.finditer(text)]
        out: dict[str, None] = {}
        i = 0
        while i < len(toks):
            width = 1
            if toks[i][0][0].isupper() or toks[i][0][0].isdigit():
                for n in range(min(self.MAX_WORDS, len(toks) - i), 0, -1):
                    end = toks[i + n - 1][1] + len(toks[i + n - 1][0])
                    span = text[toks[i][1] : end].lower().rstrip(".")
                    if span in self.by_title:
                        for pid in self.by_title[span]:
                            if pid not in exclude:
                                out.setdefault(pid, None)
                        width = n
                        break
            i += width
        return list(out)


_COMMON_STARTS = frozenset({"what", "how", "which", "who", "when", "where", "why"})
_LINKERS: dict[str, TitleLinker] = {}


def title_linker(corpus) -> TitleLinker:
    """A TitleLinker per corpus content, built once per process."""
    key = corpus.content_hash
    if key not in _LINKERS:
        _LINKERS[key] = TitleLinker(corpus.passages)
    return _LINKERS[key]
