"""The calculator's table: one entry per formula the corpus states, applied to the numbers a question gives.

Each entry names the formula, the words a question must use to ask for that quantity (`asks`), words that rule it
out (`unless`), the numbers it reads (`needs`, from `read_quantities`), the computation and the sentence it answers
with, a search topic for the passage that states the formula, and `cite`, a pattern that passage's text holds.
An entry fires only when the question asks for its quantity AND gives every number it needs: "what is the rule of
thumb for training compute of a 7B model" reads a parameter count, not a vocabulary, so the 1.5·√V rule does not
fire; "how much memory per vector does HNSW use" gives no d, so no figure is made up.

  uniform guess       loss ln V nats = log₂ V bits, perplexity V
  perplexity          PPL = exp(H), H = ln PPL, bits = H / ln 2
  training FLOPs      6·N per token (8·N with gradient checkpointing), 6·N·D for D tokens
  forward FLOPs       2·N per token
  compute-optimal     about 20 training tokens per parameter
  output layer        2·V·d FLOPs per token forward, 4·V·d backward
  logits              B·T·V numbers, × 4 bytes (fp32) or 2 (bf16)
  layer FLOPs         attention 8·d² + 4·T·d, MLP 16·d², per layer, forward; attention share T / (6·d)
  layer parameters    12·d² per block
  search / one-hot    n·d multiply-adds per brute-force query; V·d for a one-hot product
  training memory     N × bytes per parameter: 16 (Adam, fp32 or mixed precision), 18 (fp32 gradients too),
                      10 (8-bit Adam), 8 (pure bf16)
  d heuristics        1.5·√V, V^(1/4)
  position table      T_max·d parameters
  ALiBi               penalty s·k on a key k tokens back (slope s), softmax weight × e^(−s·k)
  IVF nlist           √n to 16·√n lists, ≥ 39 training vectors per centroid
  PQ                  m bytes per code, 4·d/m compression, codebooks 256·d·4 bytes
  index bytes/vector  flat 4·d, fp16 2·d, SQ8/int8 d, binary d/8, IVF-Flat 4·d + 8, IVF-PQ m + 8,
                      HNSW 4·d + 2·M·4 (SQ8 codes: d + 2·M·4)
  table               V·d parameters, V·d·b bytes (b = 4 fp32, 2 fp16/bf16, 1 int8, 0.5 4-bit)
  ranking             BM25 term score, IDF, DCG/nDCG@k, reciprocal rank/MRR, Recall/Precision@k, RRF, and for unit
                      vectors ‖a − b‖² = 2 − 2·cos: first in the table, computed in rag.calculator.ranking_formulas
Numbers written in words are read as digits first (rag.calculator.number_words).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from rag.calculator import ranking_formulas as ranking
from rag.calculator.number_words import digits

BYTES_PER_PARAM = {"fp32": 4.0, "fp16": 2.0, "bf16": 2.0, "int8": 1.0, "int4": 0.5, "binary": 0.125}
ADAM_BYTES_PER_PARAM = 16  # fp32 weight + gradient + m + v
TRAINING_BYTES = {  # regime: (bytes per parameter, how they add up)
    "fp32 gradients": (18, "bf16 weights 2 + fp32 gradients 4 + fp32 master 4 + m 4 + v 4"),
    "8-bit Adam": (10, "2 + 2 + 4 + 2 (m and v in 1 byte each)"),
    "pure bf16": (8, "2 + 2 + 2 + 2, no fp32 master copy"),
    "mixed precision": (16, "bf16 weights 2 + bf16 gradients 2 + fp32 master 4 + fp32 m and v 8"),
    "fp32": (16, "fp32 weights, gradients, first and second moments, 4 bytes each"),
}
TOKENS_PER_PARAM = 20  # compute-optimal training (Hoffmann et al.)
MIN_POINTS_PER_CENTROID = 39  # FAISS warns below this many training vectors per IVF list

_SCALE = {"k": 1e3, "thousand": 1e3, "m": 1e6, "million": 1e6, "b": 1e9, "bn": 1e9, "billion": 1e9}
_SCALE |= {"t": 1e12, "trillion": 1e12}
_SUPERSCRIPT = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹", "0123456789")
# A number: 50,000 / 50k / 1.5M / 7 billion / 7-billion / 1e9 / 7 × 10^9 / 7 × 10⁹.
_NUM = (
    r"(\d+(?:[.,]\d+)*(?:[eE]\d+|\s*[×x*]\s*10\s*(?:\^|\*\*)?\s*[\d⁰¹²³⁴⁵⁶⁷⁸⁹]+)?)"
    r"(?:\s*-?\s*(k|K|M|B|T|bn|thousand|million|billion|trillion)(?![a-zA-Z]))?"
)
_SHAPE = re.compile(_NUM + r"\s*(?:×|x|X|\*|by)\s*" + _NUM + r"(?!\d|[.,]\d)(?!\s*(?:\^|\*\*|[⁰¹²³⁴⁵⁶⁷⁸⁹]))")
_SEP = r"\s*(?:=|:|≈|\bis\b|\bof\b|\bat\b)?\s*(?:about\s+|around\s+|roughly\s+)?"
_I = re.IGNORECASE
_QUANTITIES = {  # name: patterns, the first match wins
    "V": [
        re.compile(r"\bV" + _SEP + _NUM),
        re.compile(
            r"\b(?:vocab(?:ulary)?(?:\s+(?:size|of\s+size))?|categories|items|tokens? in the vocabulary)" + _SEP + _NUM,
            _I,
        ),
        re.compile(
            _NUM + r"[\s-]*(?:-token\s+vocab(?:ulary)?|token\s+vocab(?:ulary)?|vocab(?:ulary)?|categories|items)\b", _I
        ),
    ],
    "d": [
        re.compile(r"\b(?:d|d_model)" + _SEP + _NUM),
        re.compile(
            r"\b(?:dim(?:ension(?:ality)?)?s?|width|embedding\s+(?:size|width|dim(?:ension)?)|hidden\s+size)"
            + _SEP
            + _NUM,
            _I,
        ),
        re.compile(_NUM + r"[\s-]*(?:dim(?:ension(?:al|s)?)?s?|-?d)\b(?!\s*=)", _I),
    ],
    "N": [
        re.compile(r"\bN" + _SEP + _NUM),
        re.compile(_NUM + r"[\s-]*(?:trainable\s+|non-embedding\s+)?(?:parameters?|params?|weights)\b", _I),
        re.compile(_NUM + r"[\s-]*(?:model|LLM|network|transformer)\b", _I),
    ],
    "D": [
        re.compile(r"\bD" + _SEP + _NUM),
        re.compile(r"\b(?:on|over|for)\s+" + _NUM + r"\s*(?:training\s+)?tokens\b", _I),
        re.compile(_NUM + r"\s*training\s+tokens\b", _I),
    ],
    "T": [
        re.compile(r"\b(?:T|T_max)" + _SEP + _NUM),
        re.compile(
            r"\b(?:context(?:\s+(?:length|window|of))?|seq(?:uence)?(?:\s+length)?|max(?:imum)?\s+length)"
            + _SEP
            + _NUM,
            _I,
        ),
        re.compile(_NUM + r"[\s-]*(?:tokens? of context|-token context|positions)\b", _I),
    ],
    "B": [re.compile(r"\bB" + _SEP + _NUM), re.compile(r"\bbatch(?:\s+size)?" + _SEP + _NUM, _I)],
    "L": [re.compile(r"\bL" + _SEP + _NUM), re.compile(_NUM + r"[\s-]*layers?\b", _I)],
    "n": [
        re.compile(r"\bn" + _SEP + _NUM),
        re.compile(
            _NUM + r"\s*(?:(?:binary|float32|float|fp16|int8|sq8|pq|stored|document|passage|embedding|dense)\s+)?"
            r"(?:vectors|passages|documents|embeddings|points|chunks|rows|codes)\b",
            _I,
        ),
    ],
    "M": [
        re.compile(r"\bM" + _SEP + _NUM),
        re.compile(r"\bHNSW\s*(\d+)()", _I),
        re.compile(_NUM + r"\s*(?:links|neighbou?rs|connections)\b", _I),
    ],
    "m": [
        re.compile(r"\bm" + _SEP + _NUM),
        re.compile(r"\bPQ\s*(\d+)()", _I),
        re.compile(_NUM + r"[\s-]*(?:sub-?vectors|sub-?quantizers|sub-?spaces|slices|bytes? codes?)\b", _I),
    ],
    "H": [
        re.compile(r"\b(?:loss|cross-entropy|entropy|H)" + _SEP + _NUM + r"(?!\s*bits)", _I),
        re.compile(_NUM + r"\s*nats\b", _I),
    ],
    "PPL": [re.compile(r"\b(?:perplexity|PPL)" + _SEP + _NUM, _I)],
    "tokens_per_word": [re.compile(_NUM + r"\s*tokens?\s+(?:per|a|an|for\s+(?:each|every))\s+word\b", _I)],
}


def parse_number(digits: str, suffix: str | None = None) -> float:
    """'50,000' -> 50000; '128', 'k' -> 128000; '1.5', 'M' -> 1500000; '7', 'billion'; '1e9'; '7 × 10⁹'."""
    digits = digits.translate(_SUPERSCRIPT)
    power = re.search(r"\s*[×x*]\s*10\s*(?:\^|\*\*)?\s*(\d+)$", digits)
    if power:
        return parse_number(digits[: power.start()], suffix) * 10 ** int(power.group(1))
    if re.fullmatch(r"\d{1,3}(,\d{3})+", digits):
        value = float(digits.replace(",", ""))
    else:
        value = float(digits.replace(",", "."))
    if suffix:
        value *= _SCALE[suffix.lower()]
    return value


WORDED_ONE = re.compile(
    r"\b(?:a|one)\s+(thousand|million|billion|trillion)\b", re.IGNORECASE
)  # "a million" = 1 million


def read_quantities(question: str) -> dict[str, float]:
    """Every quantity the question gives, by name (V, d, N, D, T, B, L, n, M, m, H, PPL). "a 50k×768 table" gives V
    and d; "about a million vectors" gives n."""
    question = WORDED_ONE.sub(r"1 \1", question)
    out: dict[str, float] = {}
    shape = _SHAPE.search(question)
    if shape:
        out["V"], out["d"] = parse_number(shape.group(1), shape.group(2)), parse_number(shape.group(3), shape.group(4))
    for name, patterns in _QUANTITIES.items():
        if name in out:
            continue
        for pattern in patterns:
            match = pattern.search(question)
            if match:
                out[name] = parse_number(match.group(1), match.group(2) or None)
                break
    return out


def dtype_in(text: str) -> str | None:
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


def _as_int(x: float) -> int | float:
    return int(x) if float(x).is_integer() else x


def fmt_int(n: float) -> str:
    return f"{int(n):,}" if float(n).is_integer() else f"{n:,.2f}"


def fmt_bytes(n: float) -> str:
    """Decimal units, as in the corpus, to three significant figures (1,048,576,000 bytes -> '1.05 GB'), or four when
    those are exact (40,960,000 -> '40.96 MB', not '41 MB': rounding an exact size hides the figure asked for)."""
    for unit, size in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= size * 0.9995:  # 999,999 bytes is "1 MB", not "1,000 kB"
            x = n / size
            whole = int(math.floor(math.log10(x))) if x >= 1 else 0
            places = max(0, 3 - whole) if abs(round(x, max(0, 3 - whole)) - x) < 1e-9 else max(0, 2 - whole)
            return f"{x:,.{places}f}".rstrip("0").rstrip(".") + f" {unit}"
    return f"{fmt_int(n)} bytes"


def fmt_big(n: float) -> str:
    """744,000,000 -> '744,000,000 (7.44 × 10⁸)'; figures past 10¹⁵ in powers of ten only."""
    if n < 1e6:
        return fmt_int(n)
    exp = int(math.floor(math.log10(n)))
    sci = f"{n / 10**exp:.3g} × 10{str(exp).translate(str.maketrans('0123456789', '⁰¹²³⁴⁵⁶⁷⁸⁹'))}"
    return sci if n >= 1e15 else f"{fmt_int(round(n))} ({sci})"


@dataclass
class CalcResult:
    """One calculator answer: what was computed, from which inputs, and a sentence with the figures."""

    kind: str  # the formula's name in FORMULAS
    inputs: dict[str, Any]
    values: dict[str, float]
    text: str
    topic: str  # words to find the corpus passage that gives the formula
    cite: str = ""  # a pattern the text of the passage that states the formula holds
    extra: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict:
        return {"kind": self.kind, "inputs": self.inputs, "values": self.values, "text": self.text}


@dataclass(frozen=True)
class Formula:
    kind: str
    asks: re.Pattern  # the question must ask for this quantity
    needs: tuple[str, ...]  # numbers it must give (names in read_quantities)
    # (quantities, lower-cased question) -> (values, text) or (values, text, {topic, cite} of the case's passage)
    compute: Callable[[dict, str], tuple | None]
    topic: str
    cite: str
    unless: re.Pattern | None = None
    raw: bool = False  # compute reads the question as written (rag.calculator.ranking_formulas), not its quantities


# ---- the computations: (quantities, lower-cased question) -> (values, sentence) or None ----


def _uniform(q: dict, low: str):
    n = q.get("outcomes") or q.get("V")
    if not n or n < 2:
        return None
    nats, bits = math.log(n), math.log2(n)
    text = (
        f"A uniform prediction over V = {fmt_int(n)} outcomes has loss ln V = ln {fmt_int(n)} ≈ {nats:.2f} nats "
        f"(log₂ V ≈ {bits:.2f} bits) and perplexity V = {fmt_int(n)}."
    )
    return {"V": _as_int(n), "loss_nats": round(nats, 4), "loss_bits": round(bits, 4), "perplexity": _as_int(n)}, text


def _perplexity(q: dict, low: str):
    if "H" in q and q["H"] <= 50 and ("perplexity" in low or "ppl" in low or "bits" in low):
        h = q["H"]
        per_word = q.get("tokens_per_word")
        if per_word and re.search(r"\b(?:per|each|every|a)[- ]word\b|\bword[- ]level\b", low):
            hw, ppl = h * per_word, math.exp(h * per_word)
            text = (
                f"At {per_word:g} tokens per word, a per-token loss of H = {h:g} nats is {h:g} · {per_word:g} = "
                f"{hw:g} nats per word, so the per-word perplexity is e^{hw:g} ≈ {ppl:.2f} (per token: e^{h:g} ≈ "
                f"{math.exp(h):.2f})."
            )
            return {
                "H": h,
                "tokens_per_word": per_word,
                "loss_per_word": round(hw, 4),
                "perplexity": round(ppl, 4),
            }, text
        ppl, bits = math.exp(h), h / math.log(2)
        text = f"For a loss of H = {h:g} nats, perplexity PPL = exp(H) = e^{h:g} ≈ {ppl:.2f}; in bits H / ln 2 ≈ {bits:.3f}."
        return {"H": h, "perplexity": round(ppl, 4), "bits": round(bits, 4)}, text
    if "PPL" in q and q["PPL"] >= 1 and re.search(r"\bloss|\bnats?\b|entropy", low):
        ppl = q["PPL"]
        h = math.log(ppl)
        text = f"A perplexity of {ppl:g} means a loss of H = ln PPL = ln {ppl:g} ≈ {h:.3f} nats, since PPL = exp(H)."
        return {"perplexity": ppl, "loss_nats": round(h, 4)}, text
    return None


def _train_flops(q: dict, low: str):
    n = q["N"]
    per = 8 if "checkpoint" in low else 6
    values = {"params": _as_int(n), "flops_per_token": _as_int(per * n)}
    rule = f"{per}·N" + (" (6·N plus one more forward pass with gradient checkpointing)" if per == 8 else "")
    text = f"Training costs about {rule} FLOPs per token: {per} × {fmt_int(n)} = {fmt_big(per * n)} FLOPs per token"
    if "D" in q:
        total = per * n * q["D"]
        values |= {"tokens": _as_int(q["D"]), "total_flops": total}
        text += f"; for D = {fmt_int(q['D'])} tokens, C ≈ {per}·N·D = {fmt_big(total)} FLOPs"
    return values, text + "."


def _forward_flops(q: dict, low: str):
    n = q["N"]
    text = (
        f"A forward pass costs about 2·N FLOPs per token (2 FLOPs per parameter): 2 × {fmt_int(n)} = "
        f"{fmt_big(2 * n)} FLOPs per token."
    )
    return {"params": _as_int(n), "flops_per_token": _as_int(2 * n)}, text


def _optimal_tokens(q: dict, low: str):
    n = q["N"]
    tokens = TOKENS_PER_PARAM * n
    text = (
        f"Compute-optimal training uses roughly {TOKENS_PER_PARAM} training tokens per parameter: "
        f"{TOKENS_PER_PARAM} × {fmt_int(n)} = {fmt_big(tokens)} tokens."
    )
    return {"params": _as_int(n), "tokens": _as_int(tokens)}, text


def _output_flops(q: dict, low: str):
    v, d = int(q["V"]), int(q["d"])
    fwd = 2 * v * d
    text = (
        f"The output layer (V×d matrix) costs 2·V·d = 2 × {fmt_int(v)} × {fmt_int(d)} = {fmt_int(fwd)} FLOPs per "
        f"token in the forward pass and about 4·V·d = {fmt_int(2 * fwd)} in the backward."
    )
    return {"V": v, "d": d, "forward_flops": fwd, "backward_flops": 2 * fwd}, text


def _logits(q: dict, low: str):
    b, t, v = int(q["B"]), int(q["T"]), int(q["V"])
    count = b * t * v
    dtypes = [dtype_in(low)] if dtype_in(low) in ("fp32", "bf16", "fp16") else ["fp32", "bf16"]
    parts = [
        f"{x}: {fmt_int(count * BYTES_PER_PARAM[x])} bytes ≈ {fmt_bytes(count * BYTES_PER_PARAM[x])}" for x in dtypes
    ]
    text = f"The logits are B·T·V = {b:,} × {t:,} × {v:,} = {count:,} numbers; " + "; ".join(parts) + "."
    return {"logits": count} | {f"bytes_{x}": _as_int(count * BYTES_PER_PARAM[x]) for x in dtypes}, text


def _layer_flops(q: dict, low: str):
    d, t = int(q["d"]), int(q.get("T", 0))
    att, mlp = attention_flops_per_token(d, t), mlp_flops_per_token(d)
    values = {"attention_flops": att, "mlp_flops": mlp, "total_flops": att + mlp}
    context = f"d = {fmt_int(d)} and T = {fmt_int(t)}" if t else f"d = {fmt_int(d)} (no context length given: T = 0)"
    text = (
        f"Per token and layer (forward pass), with {context}: attention "
        f"8·d² + 4·T·d = {fmt_int(att)} FLOPs; MLP (hidden 4d) 16·d² = {fmt_int(mlp)} FLOPs; "
        f"total 24·d² + 4·T·d = {fmt_int(att + mlp)} FLOPs"
    )
    if "L" in q:
        layers = int(q["L"])
        values["all_layers_flops"] = layers * (att + mlp)
        text += f"; over L = {layers} layers {fmt_int(layers * (att + mlp))} FLOPs"
    return values, text + "."


def _attention_ratio(q: dict, low: str):
    t, d = int(q["T"]), int(q["d"])
    ratio = t / (6 * d)
    text = (
        f"Attention-score work over projection and MLP work is 4·T·d / 24·d² = T / (6·d) = {t:,} / (6 × {d:,}) "
        f"≈ {ratio:.2f}."
    )
    return {"ratio": round(ratio, 4)}, text


def _search_cost(q: dict, low: str):
    n, d = q["n"], int(q["d"])
    text = (
        f"Brute-force search costs n·d multiply-adds per query: {fmt_int(n)} × {d:,} = {fmt_int(n * d)} multiply-adds."
    )
    return {"multiply_adds": _as_int(n * d)}, text


def _one_hot(q: dict, low: str):
    v, d = int(q["V"]), int(q["d"])
    text = (
        f"A one-hot product x·E costs V·d multiply-adds per token: {v:,} × {d:,} = {v * d:,}, where a lookup "
        "costs none (it reads one row)."
    )
    return {"multiply_adds": v * d}, text


def _block_params(q: dict, low: str):
    d = int(q["d"])
    per = 12 * d * d
    values = {"params_per_layer": per}
    text = f"A transformer block holds about 12·d² weights (4·d² attention, 8·d² MLP): 12 × {d:,}² = {per:,}"
    if "L" in q:
        values["params"] = int(q["L"]) * per
        text += f"; {int(q['L'])} layers hold {int(q['L']) * per:,}"
    return values, text + "."


def _training_regime(low: str) -> str:
    if re.search(r"8-?bit adam|8-?bit optimi", low):
        return "8-bit Adam"
    if re.search(r"pure bf16|without (?:a |an )?(?:fp32 )?master|no master", low):
        return "pure bf16"
    if re.search(r"fp32 gradients|gradients (?:kept |stored )?in fp32", low):
        return "fp32 gradients"
    if re.search(r"mixed[- ]precision|\bamp\b|bf16|fp16", low):
        return "mixed precision"
    return "fp32"


def _training_memory(q: dict, low: str):
    n, shape = _param_count(q)
    regime = _training_regime(low)
    per, parts = TRAINING_BYTES[regime]
    total = n * per
    text = (
        f"Training state with Adam, {regime} ({parts}): {per} bytes per parameter, so {shape}{fmt_int(n)} "
        f"parameters × {per} = {fmt_int(total)} bytes ≈ {fmt_bytes(total)}."
    )
    return {"params": _as_int(n), "bytes_per_param": per, "bytes": _as_int(total)}, text


def _sqrt_rule(q: dict, low: str):
    v = q.get("V") or q["outcomes"]
    fourth = f"The fourth-root rule gives d ≈ V^(1/4) = {fmt_int(v)}^(1/4) ≈ {v**0.25:.1f}."
    sqrt = (
        f"The 1.5·√V rule of thumb gives d ≈ 1.5 × √{fmt_int(v)} = 1.5 × {math.sqrt(v):.1f} "
        f"≈ {sqrt_heuristic(v):.0f} for V = {fmt_int(v)}."
    )
    if re.search(r"fourth[- ]root|\^\s*\(?1/4|quartic", low):
        if re.search(r"√|sqrt|square[- ]root|1\.5", low):  # both rules named: both figures, the smaller said
            small = "the fourth-root rule" if v**0.25 < sqrt_heuristic(v) else "the 1.5·√V rule"
            text = f"{sqrt[:-1]}; {fourth[0].lower()}{fourth[1:-1]}, so {small} gives the smaller d."
            return {"V": _as_int(v), "d_sqrt": round(sqrt_heuristic(v), 2), "d_fourth_root": round(v**0.25, 2)}, text
        return {"V": _as_int(v), "d": round(v**0.25, 2)}, fourth
    return {"V": _as_int(v), "d": round(sqrt_heuristic(v), 2)}, sqrt


def _position_table(q: dict, low: str):
    t, d = int(q["T"]), int(q["d"])
    text = (
        f"A learned position table holds T_max·d = {t:,} × {d:,} = {t * d:,} parameters "
        f"({fmt_bytes(4 * t * d)} in fp32)."
    )
    return {"params": t * d, "bytes_fp32": 4 * t * d}, text


_SLOPE = re.compile(r"\bslope\s*(?:of|=|is|:|s\s*=)?\s*(\d+\s*/\s*\d+|\d*\.\d+|\d+)", re.I)
_BACK = re.compile(
    r"\b(\d+)\s*(?:tokens?|positions?|places|steps)\s+(?:back|away|apart|earlier|before|behind)\b"
    r"|\bdistance\s*(?:of|=|is|:)?\s*(\d+)\b",
    re.I,
)


def _alibi(question: str, low: str):
    """ALiBi's penalty −s·k on the logit of a key k tokens back, and the factor e^(−s·k) on its softmax weight."""
    slope, back = _SLOPE.search(question), _BACK.search(question)
    if not slope or not back:
        return None
    written = re.sub(r"\s+", "", slope.group(1))
    num, _, den = written.partition("/")
    if den and float(den) == 0:
        return None
    s = float(num) / float(den) if den else float(num)
    k = int(back.group(1) or back.group(2))
    if not 0 < s <= 16 or k > 10**6:
        return None
    penalty = s * k
    factor = math.exp(-penalty)
    text = (
        f"ALiBi subtracts slope × distance from the attention logit: with slope s = {written} and a key {k} tokens "
        f"back the penalty is {penalty:g}, which multiplies its softmax weight by e^(−{penalty:g}) ≈ {factor:.4g} "
        "relative to an otherwise equal key at distance 0."
    )
    return {"slope": s, "distance": k, "penalty": penalty, "factor": round(factor, 8)}, text


def _nlist(q: dict, low: str):
    n = q["n"]
    root = math.sqrt(n)
    text = (
        f"The common rule nlist ≈ √n to 16·√n gives, for n = {fmt_int(n)} (√n ≈ {fmt_int(round(root))}), nlist "
        f"between about {fmt_int(round(root))} and {fmt_int(round(16 * root))}; k-means wants at least "
        f"{MIN_POINTS_PER_CENTROID} training vectors per centroid, so at most {fmt_int(n // MIN_POINTS_PER_CENTROID)} lists."
    )
    values = {"nlist_low": round(root), "nlist_high": round(16 * root), "max_nlist": int(n // MIN_POINTS_PER_CENTROID)}
    return values, text


def _pq(q: dict, low: str):
    d, m = int(q["d"]), int(q["m"])
    code, flat = m, 4 * d
    books = 256 * d * 4
    values = {"code_bytes": code, "compression": round(flat / code, 2), "codebook_bytes": books}
    text = (
        f"PQ with m = {m} sub-vectors of d/m = {d / m:g} dimensions stores one byte per sub-vector: a {code}-byte "
        f"code per vector against 4·d = {flat:,} bytes in float32, {flat / code:g} times smaller; the codebooks take "
        f"256·d·4 = {books:,} bytes"
    )
    if "n" in q:
        n = int(q["n"])
        values["index_bytes"] = n * (code + 8)
        text += f"; {n:,} vectors in IVF-PQ take ({code} + 8-byte id) × {n:,} = {fmt_bytes(n * (code + 8))}"
    return values, text + "."


def _index_kind(low: str, q: dict) -> str:
    if "hnsw" in low:
        return "hnsw-sq8" if re.search(r"sq8|scalar quanti", low) else "hnsw"
    if re.search(r"\bpq\b|product quanti", low) and "m" in q:
        return "ivf-pq"
    if re.search(r"binary|sign bits?|1-bit|hamming", low):
        return "binary"
    if re.search(r"sq8|scalar quanti", low):
        return "sq8"
    if re.search(r"\bint8\b|8-bit", low):
        return "int8"
    if re.search(r"ivf", low):
        return "ivf-flat"
    if re.search(r"fp16|float16|half precision|bf16", low):
        return "fp16"
    return "flat"


def _index_bytes(q: dict, low: str):
    d = int(q["d"])
    kind = _index_kind(low, q)
    if kind in ("hnsw", "hnsw-sq8") and "M" not in q:
        return None  # the links need M: no figure without it
    m_links = int(q.get("M", 0))
    rows = {
        "flat": (4 * d, f"a flat float32 index stores 4·d = 4 × {d} = {4 * d:,} bytes per vector"),
        "fp16": (2 * d, f"in fp16 a vector takes 2·d = 2 × {d} = {2 * d:,} bytes"),
        "int8": (d, f"one vector of d = {d} numbers takes int8: {d} × 1 = {d} bytes (float32: 4·d = {4 * d:,})"),
        "sq8": (d, f"SQ8 (int8) stores one byte per dimension, d = {d:,} bytes per vector instead of 4·d = {4 * d:,}"),
        "binary": (d / 8, f"binary codes take d/8 = {d}/8 = {fmt_int(d / 8)} bytes per vector (d bits)"),
        "ivf-flat": (
            4 * d + 8,
            f"IVF-Flat stores 4·d + 8 = {4 * d:,} + 8 = {4 * d + 8:,} bytes per vector (8-byte id)",
        ),
        "ivf-pq": (q.get("m", 0) + 8, f"IVF-PQ stores m + 8 = {fmt_int(q.get('m', 0))} + 8 bytes per vector"),
        "hnsw": (
            4 * d + 8 * m_links,
            f"HNSW stores 4·d + 2·M·4 = {4 * d:,} + {8 * m_links:,} = {4 * d + 8 * m_links:,} bytes per vector "
            f"(the float vector plus 2·M four-byte links on the bottom layer, M = {m_links})",
        ),
        "hnsw-sq8": (
            d + 8 * m_links,
            f"HNSW with SQ8 codes stores d + 2·M·4 = {d:,} + {8 * m_links:,} = {d + 8 * m_links:,} bytes per vector",
        ),
    }
    per, text = rows[kind]
    source = _VECTOR_SOURCES[kind]
    values = {"d": d, "bytes_per_vector": _as_int(per)}
    dtype = {"flat": "fp32", "fp16": "fp16", "sq8": "int8", "int8": "int8", "binary": "binary"}.get(kind)
    if dtype:
        values[f"bytes_{dtype}"] = _as_int(per)
    if kind == "flat" and dtype_in(low) is None and not re.search(r"\bflat\b|float32|fp32|float\b", low):
        text += f" (fp16: {2 * d:,}; int8: {d:,}; binary: {fmt_int(d / 8)})"
        values |= {"bytes_fp32": 4 * d, "bytes_fp16": 2 * d, "bytes_int8": d}
    if "n" in q:
        n = q["n"]
        values["index_bytes"] = _as_int(per * n)
        text += f"; {fmt_int(n)} vectors take {fmt_int(per * n)} bytes ≈ {fmt_bytes(per * n)}"
    return values, text[0].upper() + text[1:] + ".", source


_VECTOR_SOURCES = {  # index kind: the topic to search and the pattern of the passage that states its size
    "flat": {"topic": "flat index float32 4·d bytes per vector", "cite": r"4·d bytes per vector"},
    "fp16": {"topic": "fp16 2 bytes per dimension vector", "cite": r"fp16|2 bytes per dimension"},
    "int8": {"topic": "int8 one byte per dimension d bytes instead of 4·d", "cite": r"d bytes instead of 4·d"},
    "sq8": {"topic": "SQ8 scalar quantization d bytes instead of 4·d", "cite": r"d bytes instead of 4·d"},
    "binary": {"topic": "binary quantization d bits d/8 bytes", "cite": r"d/8 bytes"},
    "ivf-flat": {"topic": "IndexIVFFlat 4·d bytes per vector 8-byte id", "cite": r"8-byte id"},
    "ivf-pq": {"topic": "IVF-PQ m bytes of code plus 8-byte id", "cite": r"m bytes of code"},
    "hnsw": {"topic": "HNSW memory 4·d bytes plus 2·M·4 links per vector", "cite": r"2·M·4"},
    "hnsw-sq8": {"topic": "HNSW SQ8 memory per vector links", "cite": r"2·M·4|HNSW32,SQ8"},
}


def _param_count(q: dict) -> tuple[float, str]:
    if "V" in q and "d" in q:
        n = embedding_params(int(q["V"]), int(q["d"]))
        return n, f"{fmt_int(q['V'])} × {fmt_int(q['d'])} = "
    return q["N"], ""


def _table_bytes(q: dict, low: str):
    n, shape = _param_count(q)
    dtype = dtype_in(low)
    dtypes = [dtype] if dtype else ["fp32", "fp16", "bf16", "int8"]
    values: dict[str, float] = {"params": _as_int(n)}
    parts = []
    for name in dtypes:
        size = param_bytes(n, name)
        values[f"bytes_{name}"] = _as_int(size)
        parts.append(f"{name}: {fmt_int(n)} × {BYTES_PER_PARAM[name]:g} = {fmt_int(size)} bytes ≈ {fmt_bytes(size)}")
    return values, f"Parameters: {shape}{fmt_int(n)}. " + "; ".join(parts) + "."


def _table_params(q: dict, low: str):
    n, shape = _param_count(q)
    size16 = param_bytes(n, "fp16")
    text = (
        f"An embedding table of V × d = {shape}{fmt_int(n)} parameters "
        f"({fmt_bytes(param_bytes(n, 'fp32'))} in fp32, {fmt_bytes(size16)} in fp16)."
    )
    return {"params": n, "bytes_fp32": param_bytes(n, "fp32"), "bytes_fp16": size16}, text


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


def _r(pattern: str) -> re.Pattern:
    return re.compile(pattern, re.IGNORECASE)


_FLOPS = r"\bflops?\b|\bcompute\b|\bfloating[- ]point operations\b|\bmultiply-adds\b"
_MEMORY = r"\bmemory\b|\bbytes?\b|\b[kmgt]i?b\b|\bhow (?:big|large)\b|\bsize\b|\btakes?\b|\bstorage\b|\bdisk\b|\bram\b"
_TRAINING = r"\btrain(?:ing|ed)?\b|\badam(?:w)?\b|\boptimi[sz]er\b|\bfine-?tun"

FORMULAS: list[Formula] = [
    # the ranking formulas read the question as written (raw): N (documents) and n (those with the term) by case
    Formula(
        "bm25",
        _r(r"(?=.*\bbm-?25\b)(?=.*(?:score|contribut|weight|\bidf\b|inverse document frequency))"),
        (),
        ranking.bm25_term,
        "BM25 worked example IDF ln term frequency k₁ b length normalisation avgdl",
        r"IDF = ln",
        raw=True,
    ),
    Formula(
        "idf",
        _r(r"\bidf\b|inverse document frequency"),
        (),
        ranking.idf_weight,
        "IDF-weighted pooling idf log N df rare word weight worked example",
        r"idf = log",
        raw=True,
    ),
    Formula(
        "ndcg",
        _r(r"\bn?dcg\b|discounted cumulative gain"),
        (),
        ranking.dcg,
        "nDCG DCG gains 2^rel − 1 discount log₂(i + 1) ideal order IDCG worked example",
        r"DCG@|log₂",
        raw=True,
    ),
    Formula(
        "rrf",
        _r(r"\brrf\b|reciprocal rank fusion"),
        (),
        ranking.rrf,
        "reciprocal rank fusion RRF 1 / (k + rank) k = 60 worked example",
        r"RRF\(d\)|1/61",
        raw=True,
    ),
    Formula(
        "reciprocal_rank",
        _r(r"\bmrr\b|reciprocal rank"),
        (),
        ranking.reciprocal_rank,
        "mean reciprocal rank 1/r first relevant document MRR@10 worked example",
        r"reciprocal rank is 1/r|MRR@10 =",
        _r(r"\bfusion\b|\brrf\b"),
        raw=True,
    ),
    Formula(
        "recall_precision",
        _r(r"\brecall\b|\bprecision\s*@|\bprecision\b(?=.*\btop\b)"),
        (),
        ranking.recall_precision,
        "Recall@k relevant documents in the top k Precision@k worked example",
        r"Recall@10 = 3/4|Precision@k",
        _r(r"\bann\b|\bhnsw\b|\bivf\b|nprobe|exact (?:search|neighbou?rs)"),
        raw=True,
    ),
    Formula(
        "unit_distance",
        _r(r"(?=.*(?:\bunit\b|normali[sz]ed|unit-length))(?=.*\bcos)(?=.*(?:distance|euclidean|\bl2\b))"),
        (),
        ranking.unit_distance,
        "unit vectors squared Euclidean distance 2 − 2·cos identity",
        r"2 − 2·cos",
        raw=True,
    ),
    Formula(
        "uniform",
        _r(
            r"(?=.*(?:\buniform(?:ly)?\b|\bat random\b|\bequal probabilit))(?=.*(?:loss|entropy|perplexity|nats?\b|bits?\b))"
        ),
        ("outcomes",),
        _uniform,
        "uniform prediction over a vocabulary of V tokens perplexity V loss ln V",
        r"perplexity V and loss ln V|uniformly",
    ),
    Formula(
        "perplexity",
        _r(r"perplexity|\bppl\b|\bbits\b.*\bnats?\b|\bnats?\b.*\bbits\b"),
        (),
        _perplexity,
        "perplexity is the exponential of the loss PPL = exp(H) nats bits",
        r"PPL = exp\(H\)",
    ),
    Formula(
        "optimal_tokens",
        _r(r"compute[- ]optimal|chinchilla|how many (?:training )?tokens|tokens per parameter"),
        ("N",),
        _optimal_tokens,
        "compute-optimal 20 training tokens per parameter Hoffmann",
        r"20 training tokens per parameter",
    ),
    Formula(
        "training_flops",
        _r(rf"(?=.*(?:{_FLOPS}))(?=.*(?:{_TRAINING}))"),
        ("N",),
        _train_flops,
        "training compute about 6·N FLOPs per token forward backward",
        r"6·N",
    ),
    Formula(
        "forward_flops",
        _r(rf"(?=.*(?:{_FLOPS}))(?=.*(?:forward|inference|generat|per token|decod))"),
        ("N",),
        _forward_flops,
        "forward pass costs about 2·N FLOPs per token 2 FLOPs per parameter",
        r"2·N|2 FLOPs per parameter",
        _r(r"output layer|softmax|logits|per layer|attention|\bmlp\b"),
    ),
    Formula(
        "output_flops",
        _r(rf"(?=.*(?:{_FLOPS}))(?=.*(?:output|softmax|logits?|unembedding|lm head|vocabulary projection))"),
        ("V", "d"),
        _output_flops,
        "output softmax layer costs 2·V·d FLOPs per token",
        r"2·V·d",
    ),
    Formula(
        "logits",
        _r(rf"(?=.*\blogits?\b)(?=.*(?:{_MEMORY}|how many))"),
        ("B", "T", "V"),
        _logits,
        "logits for every position B·T·V numbers memory fp32 bf16",
        r"B·T·V",
    ),
    Formula(
        "attention_ratio",
        _r(r"(?=.*\bratio\b|.*\bshare\b|.*\bfraction\b)(?=.*\battention\b)"),
        ("T", "d"),
        _attention_ratio,
        "ratio of attention-score work to projection and MLP work T / (6·d)",
        r"T / \(6·d\)",
    ),
    Formula(
        "search_cost",
        _r(r"(?=.*(?:multiply-adds|operations|flops|cost|compute))(?=.*(?:search|query|brute[- ]force|exhaustive))"),
        ("n", "d"),
        _search_cost,
        "brute force search costs n·d multiply-adds per query",
        r"n·d multiply-adds",
        _r(r"\bhnsw\b|\bivf\b"),
    ),
    Formula(
        "one_hot",
        _r(r"(?=.*one-?hot)(?=.*(?:multiply|flops|cost|operations))"),
        ("V", "d"),
        _one_hot,
        "one-hot product costs V·d multiply-adds per token lookup",
        r"V·d multiply-adds",
    ),
    Formula(
        "block_params",
        _r(r"(?=.*(?:\bblock|\blayers?\b|transformer))(?=.*(?:parameters|params|weights))"),
        ("d",),
        _block_params,
        "transformer block 12·d² weights per layer attention 4·d² MLP 8·d²",
        r"12·d²",
        _r(r"\btable\b|\bvocab|\bembedding\b|\bposition"),
    ),
    Formula(
        "flops",
        _r(_FLOPS),
        ("d",),
        _layer_flops,
        "compute per token FLOPs attention MLP d squared 24·d² + 4·T·d",
        r"24·d²|8·d²",
    ),
    Formula(
        "training_memory",
        _r(rf"(?=.*(?:{_TRAINING}))(?=.*(?:{_MEMORY}|how much|state))"),
        ("N|V,d",),
        _training_memory,
        "training memory Adam weights gradients moments 16 bytes per parameter",
        r"16 bytes per parameter",
        _r(_FLOPS),
    ),
    Formula(
        "sqrt_heuristic",
        _r(r"√|sqrt|square root|fourth root|\^\s*\(?1/4|rule of thumb|heuristic|1\.5\s*[·*×x]"),
        ("V|outcomes",),
        _sqrt_rule,
        "choosing d 1.5 square root V rule of thumb",
        r"1\.5\s*·\s*√V",
        _r(_FLOPS + r"|\bparameters?\b|\bparams\b|\bnlist\b"),
    ),
    Formula(
        "position_table",
        _r(r"(?=.*\bpositions?\b|.*\bpositional\b)(?=.*(?:parameters?|params|weights|how big|size|memory))"),
        ("T", "d"),
        _position_table,
        "learned absolute position table costs T_max·d parameters",
        r"T_max·d",
    ),
    Formula(
        "alibi",
        _r(r"\balibi\b|linear bias"),
        (),
        _alibi,
        "ALiBi linear bias slope penalty distance softmax weight e^(−2) ≈ 0.135",
        r"slope 1/2|e\^\(−",
        raw=True,
    ),
    Formula(
        "nlist",
        _r(r"\bnlist\b|number of (?:inverted )?lists|how many (?:lists|clusters|centroids|cells)"),
        ("n",),
        _nlist,
        "choosing nlist IVF rule nlist √n to 16·√n training vectors per centroid",
        r"√n",
    ),
    Formula(
        "pq",
        _r(r"(?=.*(?:\bpq\b|product quanti))(?=.*(?:bytes?|code|compress|memory|size|smaller|codebooks?))"),
        ("d", "m"),
        _pq,
        "product quantization code m bytes compression codebooks 256 centroids",
        r"code is|codebooks cost",
        _r(r"\bhnsw\b"),
    ),
    Formula(
        "vector_bytes",
        _r(rf"(?=.*(?:{_MEMORY}))(?=.*(?:\bvectors?\b|\bindex\b|\bembeddings?\b|\bcodes?\b|\brows?\b))"),
        ("d",),
        _index_bytes,
        "bytes per vector d float32 int8 index memory",
        r"bytes per vector",
        _r(r"\btables?\b|\bvocab|\bgap\b|\bdifference\b|\bndcg|\brecall\b|\bmrr\b|\bquality\b|\baccuracy\b"),
    ),
    Formula(
        "bytes",
        _r(_MEMORY + r"|fp32|fp16|bf16|int8|float32|float16|bfloat16|half precision|4-bit|8-bit"),
        ("N|V,d",),
        _table_bytes,
        "bytes per parameter fp32 fp16 bf16 table size V·d",
        r"V·d·b|bytes per parameter",
    ),
    Formula(
        "params",
        _r(r"parameters?|params|weights|how big|\bsize\b|\btable\b"),
        ("V,d",),
        _table_params,
        "counting embedding parameters V times d",
        r"V·d parameters",
    ),
]
_OUTCOMES = re.compile(
    _NUM + r"\s*(?:possible\s+|equally\s+likely\s+|different\s+)?"
    r"(?:tokens?|words?|classes|categories|outcomes|choices|labels|symbols|items|options)\b"
)


def _has(q: dict, need: str) -> bool:
    """'N|V,d': N, or both V and d."""
    return any(all(x in q for x in alt.split(",")) for alt in need.split("|"))


# A number the question gives on its own: not part of a name (GPT-2, fp32, SQ8, L6), an ordinal (3rd), a rank
# (top-10, @10) or an exponent (2^16, 10⁹).
_GIVEN = re.compile(
    r"(?<![\w.@^/-])(\d+(?:,\d{3})+|\d+(?:\.\d+)?)(?:\s*-?\s*(k|K|M|B|T|bn|thousand|million|billion|trillion)(?![a-zA-Z]))?"
    r"(?![\w^⁰¹²³⁴⁵⁶⁷⁸⁹]|\.\d|\s*(?:\^|\*\*))"
)
_STATED = re.compile(
    r"(\d+(?:,\d{3})+|\d+(?:\.\d+)?)(?:\s*-?\s*(k|K|M|B|T|bn|thousand|million|billion|trillion)(?![a-zA-Z]))?"
)


def unused_numbers(question: str, text: str, read: tuple[float, ...] = ()) -> list[str]:
    """The numbers the question gives that the calculator neither read as an input it needs (`read`) nor states
    in its sentence (as written or scaled: 7B is 7,000,000,000; 40% is 0.4). A formula that leaves one unused
    answers another question than the one asked ("7B on 2 trillion tokens at 40% of 989 TFLOP/s" is not Adam's 16
    bytes per parameter)."""
    stated = set(read)
    for m in _STATED.finditer(text.translate(_SUPERSCRIPT)):
        raw = float(m.group(1).replace(",", ""))
        stated |= {raw, raw * _SCALE[m.group(2).lower()] if m.group(2) else raw}
    out = []
    for m in _GIVEN.finditer(question):
        raw = float(m.group(1).replace(",", ""))
        value = raw * _SCALE[m.group(2).lower()] if m.group(2) else raw
        if not any(math.isclose(x, v, rel_tol=1e-9) for x in stated for v in (raw, value, raw / 100)):
            out.append(m.group(0))
    return out


def calculate(question: str) -> CalcResult | None:
    """The first formula in FORMULAS whose quantity the question asks for, whose numbers it gives and whose
    sentence states every number the question gives, applied; None when there is none."""
    question = digits(question)  # "two thousand and forty-eight positions" -> "2048 positions"
    q = read_quantities(question)
    outcomes = _OUTCOMES.search(question)
    if outcomes or "V" in q:
        q["outcomes"] = parse_number(outcomes.group(1), outcomes.group(2)) if outcomes else q["V"]
    low = question.lower()
    for f in FORMULAS:
        if not f.asks.search(question) or (f.unless and f.unless.search(question)):
            continue
        if not all(_has(q, need) for need in f.needs):
            continue
        done = f.compute(question if f.raw else q, low)
        if done is None:
            continue
        values, text = done[:2]
        # read: the numbers the formula needs, and those whose symbol its sentence names ("d + 2·M·4" uses M)
        named = [x for x in q if x != "outcomes" and re.search(rf"(?<!\w){re.escape(x)}(?!\w)", text)]
        read = [q[x] for need in f.needs for alt in need.split("|") for x in alt.split(",") if x in q]
        if unused_numbers(question, text, tuple(read + [q[x] for x in named])):
            continue
        source = {"topic": f.topic, "cite": f.cite} | (done[2] if len(done) > 2 else {})  # a case's own passage
        inputs = {k: _as_int(v) for k, v in q.items() if k != "outcomes"}
        return CalcResult(f.kind, inputs, values, text, source["topic"], source["cite"])
    return None
