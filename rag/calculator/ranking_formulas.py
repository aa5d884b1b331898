"""The calculator's ranking formulas: the scores and metrics the corpus states (bm25.md, sentence-pooling.md, ndcg.md,
recall-and-mrr.md, hybrid-fusion.md), applied to the numbers a question gives.

  BM25 term score   IDF = ln((N − n + 0.5)/(n + 0.5) + 1), times f·(k₁ + 1) / (f + k₁·(1 − b + b·|D|/avgdl));
                    k₁ = 1.5 and b = 0.75 when the question gives none, |D| = avgdl when it gives no length
  IDF               idf(w) = log(N / df(w)), natural log; with two words, how many times the weight
  DCG / nDCG@k      Σ (2^rel − 1) / log₂(i + 1) over the grades in rank order (linear gain rel when asked),
                    IDCG from the grades sorted; one relevant document at rank r: 1 / log₂(r + 1)
  reciprocal rank   1/r for the first relevant rank r, 0 when none; MRR is their mean over queries
  Recall@k          relevant in the top k / all relevant; Precision@k = relevant in the top k / k
  RRF               Σ 1 / (k + rank), k = 60 by convention
  unit vectors      ‖a − b‖² = 2 − 2·cos(a, b), either way round (unit-vector-distance-identity.md)

Each `compute(question, low)` reads the question as written (N and n differ only by case) and returns (values,
sentence) or None when the question does not give the numbers. The sentence states every number it read, so
rag.calculator.formulas' guard (every given number is used) holds. The table entries live in rag.calculator.formulas.FORMULAS.
"""

from __future__ import annotations

import math
import re

_NUM = r"(\d+(?:,\d{3})+|\d+(?:\.\d+)?)"
_I = re.IGNORECASE
_WORDED = {"twice": 2.0, "double": 2.0, "half": 0.5, "triple": 3.0, "thrice": 3.0}  # "three times": digits first


def _num(text: str) -> float:
    return float(text.replace(",", ""))


def _fmt(x: float, places: int = 3) -> str:
    """1000 -> '1,000'; 0.75 -> '0.75'; 4.55719 -> '4.557' (at most `places` decimals, no trailing zeros)."""
    if float(x).is_integer():
        return f"{int(x):,}"
    return f"{x:,.{places}f}".rstrip("0").rstrip(".")


def _first(patterns: list[str], text: str, flags=_I) -> float | None:
    for pattern in patterns:
        m = re.search(pattern, text, flags)
        if m:
            return _num(m.group(1))
    return None


def _about(x: float) -> str:
    """Two significant figures: 389.3 -> '390'."""
    if x <= 0:
        return "0"
    digits = max(0, 1 - int(math.floor(math.log10(x))))
    return _fmt(round(x, -int(math.floor(math.log10(x))) + 1), digits)


# ---- BM25 ----

_COLLECTION = [
    r"\bN\s*=\s*" + _NUM,
    _NUM + r"[\s-]*(?:documents?|docs?|passages?|pages?)[\s-]+(?:collection|corpus|index)",
    r"\b(?:collection|corpus|index)\s+(?:of|with|holding|containing|has)\s+" + _NUM,
    r"\b(?:out of|among|of)\s+" + _NUM + r"\s+(?:documents|docs|passages)\b",
    _NUM + r"\s+(?:documents|docs|passages)\s+(?:in total|overall|altogether)",
]
_CONTAINING = [
    r"\bn(?:\(q\)|_q)?\s*=\s*" + _NUM,
    r"\bdf(?:\(\w+\))?\s*=\s*" + _NUM,
    r"\b(?:appears?|occurs?|shows? up|is found|found|is present|present|contained)\s+in\s+(?:only\s+)?" + _NUM,
    r"\b(?:term|word)\s+in\s+" + _NUM,
    _NUM + r"\s+(?:documents?|docs?|passages?)\s+(?:contain|have|hold|include)",
]
_FREQUENCY = [
    r"\b(?:tf|f)\s*=\s*" + _NUM,
    r"\b(?:term frequency|frequency|tf)\s+(?:of\s+|is\s+)?" + _NUM,
    _NUM + r"\s+times\b(?!\s+(?:the\s+)?(?:average|mean|avgdl|as\s+long|longer))",
    _NUM + r"\s+occurrences\b",
]


def _length_ratio(text: str) -> tuple[float, str] | None:
    """(|D|/avgdl, how the sentence states it), or None when the question gives no length."""
    low = text.lower()
    m = re.search(r"\|d\|\s*=\s*" + _NUM + r"\b(?!\s*[·*×x]?\s*avgdl).*?\bavgdl\s*=\s*" + _NUM, low)
    m = m or re.search(r"\blength\s+(?:of\s+|is\s+)?" + _NUM + r".*?\b(?:average|mean|avgdl)\b\D{0,20}?" + _NUM, low)
    if m:
        a, b = _num(m.group(1)), _num(m.group(2))
        return a / b, f"|D|/avgdl = {_fmt(a)}/{_fmt(b)} = {_fmt(a / b)}"
    m = re.search(_NUM + r"\s*(?:x|×|times)\s+(?:the\s+|as\s+long\s+as\s+the\s+)?(?:average|mean|avgdl)", low)
    m = m or re.search(r"\|d\|\s*=\s*" + _NUM + r"\s*[·*×x]?\s*avgdl", low)
    if m:
        r = _num(m.group(1))
        return r, f"|D|/avgdl = {_fmt(r)}"
    for word, r in _WORDED.items():
        if re.search(rf"\b{word}\b(?:\s+(?:as\s+long\s+as\s+)?the)?\s+(?:average|mean|avgdl)", low):
            return r, f"|D|/avgdl = {_fmt(r)} ({word} the average length)"
    if re.search(r"\baverage[- ]length\b|\|d\|\s*=\s*avgdl|\bof average length\b", low):
        return 1.0, "|D| = avgdl"
    return None


def _collection_size(question: str) -> float | None:
    """N, the documents in the collection: "N = 1000" read by case (n is those with the term), the rest in any."""
    return _first(_COLLECTION, question, 0) or _first(_COLLECTION[1:], question)


def _containing(question: str) -> float | None:
    """n (or df), the documents that hold the term: "n = 10" and "df = 10" read by case, the rest in any."""
    return _first(_CONTAINING, question, 0) or _first(_CONTAINING[2:], question)


def bm25_term(question: str, low: str):
    big_n, n = _collection_size(question), _containing(question)
    if big_n is None or n is None or not 0 < n <= big_n:
        return None
    idf = math.log((big_n - n + 0.5) / (n + 0.5) + 1)
    idf_text = (
        f"IDF = ln((N − n + 0.5)/(n + 0.5) + 1) = ln(({_fmt(big_n)} − {_fmt(n)} + 0.5)/({_fmt(n)} + 0.5) + 1) "
        f"= ln({_fmt((big_n - n + 0.5) / (n + 0.5) + 1, 2)}) ≈ {idf:.3f}"
    )
    f = _first(_FREQUENCY, question)
    if f is None:
        if not re.search(r"\bidf\b|inverse document frequency", low):
            return None
        return {"N": big_n, "n": n, "idf": round(idf, 4)}, f"In BM25, {idf_text}."
    k1 = _first([r"\bk\s*[1₁]\s*=\s*" + _NUM, r"\bk_1\s*=\s*" + _NUM], question)
    b = _first([r"(?<![\w|])b\s*=\s*" + _NUM], question)
    ratio = _length_ratio(question)
    k1_said, b_said = k1 is not None, b is not None
    k1, b = (1.5 if k1 is None else k1), (0.75 if b is None else b)
    r, r_text = ratio if ratio else (1.0, "|D| = avgdl (no length given: an average-length document)")
    norm = 1 - b + b * r
    tf = f * (k1 + 1) / (f + k1 * norm)
    score = idf * tf
    defaults = [x for x, said in (("k₁ = 1.5", k1_said), ("b = 0.75", b_said)) if not said]
    setting = f"k₁ = {_fmt(k1)}, b = {_fmt(b)}" + (
        f" ({' and '.join(defaults)}, the usual defaults)" if defaults else ""
    )
    text = (
        f"BM25 with {setting}, N = {_fmt(big_n)} documents, the term in n = {_fmt(n)} of them and f = {_fmt(f)} "
        f"occurrences: {idf_text}; length factor 1 − b + b·|D|/avgdl with {r_text}: 1 − {_fmt(b)} + {_fmt(b)} × "
        f"{_fmt(r)} = {_fmt(norm)}; term-frequency part f·(k₁ + 1)/(f + k₁·{_fmt(norm)}) = {_fmt(f)} × "
        f"{_fmt(k1 + 1)}/({_fmt(f)} + {_fmt(k1 * norm)}) ≈ {tf:.3f}; the term contributes ≈ {idf:.3f} × {tf:.3f} "
        f"≈ {score:.2f}."
    )
    values = {"N": big_n, "n": n, "f": f, "k1": k1, "b": b, "length_ratio": r, "idf": round(idf, 4)}
    return values | {"tf_part": round(tf, 4), "score": round(score, 4)}, text


# ---- plain IDF (IDF-weighted pooling) ----

_QUOTED_DF = re.compile(r"['\"‘“]([^'\"’”]{1,30})['\"’”][^0-9'\"‘“]{0,40}?\b(\d+(?:,\d{3})*)\b(?!\d|\.\d)")


def idf_weight(question: str, low: str):
    big_n = _collection_size(question)
    if big_n is None:
        return None
    pairs = [(m.group(1), _num(m.group(2))) for m in _QUOTED_DF.finditer(question)]
    pairs = [(w, df) for w, df in pairs if 0 < df <= big_n]
    if not pairs:
        df = _containing(question)
        if df is None or not 0 < df <= big_n:
            return None
        pairs = [("the word", df)]
    parts, values = [], {"N": big_n}
    for word, df in pairs[:3]:
        idf = math.log(big_n / df)
        values[f"idf_{word}"] = round(idf, 4)
        label = f"'{word}'" if word != "the word" else "a word"
        parts.append(f"{label} in df = {_fmt(df)} of them: log({_fmt(big_n)}/{_fmt(df)}) ≈ {idf:.3f}")
    text = f"idf(w) = log(N / df(w)) (natural log), with N = {_fmt(big_n)}: " + "; ".join(parts)
    if len(pairs) >= 2:
        (w1, d1), (w2, d2) = pairs[0], pairs[1]
        i1, i2 = math.log(big_n / d1), math.log(big_n / d2)
        if i1 > 0 and i2 > 0:
            hi, lo = (w1, w2) if i1 >= i2 else (w2, w1)
            ratio = max(i1, i2) / min(i1, i2)
            values["ratio"] = round(ratio, 2)
            text += f"; '{hi}' carries {max(i1, i2):.3f} / {min(i1, i2):.4f} ≈ {ratio:.1f}, about {_about(ratio)} "
            text += f"times the weight of '{lo}'"
    return values, text + "."


# ---- DCG and nDCG ----

_LIST = re.compile(r"(?<![\d.,])(\d{1,2}(?:\s*(?:,\s*(?:and\s+)?|\s+and\s+|;\s*|\s+)\d{1,2}){2,})(?!\d|\.\d)")


def _cutoff(question: str) -> int | None:
    m = re.search(r"@\s*(\d+)|\btop[- ](\d+)\b|\bfirst\s+(\d+)\b", question, _I)
    if m:
        return int(next(g for g in m.groups() if g))
    words = {"ten": 10, "five": 5, "three": 3, "twenty": 20, "hundred": 100}
    m = re.search(r"\btop[- ](ten|five|three|twenty|hundred)\b", question, _I)
    return words[m.group(1).lower()] if m else None


def dcg(question: str, low: str):
    k = _cutoff(question)
    m = _LIST.search(question)
    if m:
        grades = [int(x) for x in re.findall(r"\d+", m.group(1))]
        if max(grades) > 10:
            return None
        k = k or len(grades)
        linear = bool(re.search(r"\blinear\b|\bgain\s*(?:=|of|is)\s*rel\b", low))
        gain = (lambda g: float(g)) if linear else (lambda g: 2.0**g - 1)
        gain_text = "rel" if linear else "2^rel − 1"

        def total(gs):
            return sum(gain(g) / math.log2(i + 2) for i, g in enumerate(gs[:k]))

        terms = [
            f"rank {i + 1}: {_fmt(gain(g))}/{math.log2(i + 2):.3f} = {gain(g) / math.log2(i + 2):.3f}"
            for i, g in enumerate(grades[:k])
            if g
        ]
        got, ideal = total(grades), total(sorted(grades, reverse=True))
        listed = ", ".join(str(g) for g in grades)
        text = (
            f"DCG@{k} = Σ ({gain_text}) / log₂(i + 1) over the grades {listed}: " + "; ".join(terms) + f"; DCG@{k} "
            f"≈ {got:.3f}. The ideal order {', '.join(str(g) for g in sorted(grades, reverse=True) if g)} gives "
            f"IDCG@{k} ≈ {ideal:.3f}, so nDCG@{k} = {got:.3f} / {ideal:.3f} ≈ "
            + (f"{got / ideal:.3f}." if ideal else "0 (no relevant document: IDCG = 0, usually excluded).")
        )
        return {"dcg": round(got, 4), "idcg": round(ideal, 4), "ndcg": round(got / ideal, 4) if ideal else 0.0}, text
    single = re.search(
        r"\b(?:one|single|a|only|1)\s+(?:single\s+)?relevant\s+(?:document|doc|passage|result|item)\b.*?"
        r"(?:rank(?:ed)?|position|place)\s*(?:#\s*)?(\d+)|(?:rank(?:ed)?|position|place)\s*(?:#\s*)?(\d+)\b.*?\b"
        r"(?:only|single|one)\s+relevant",
        question,
        _I | re.S,
    )
    single = single or re.search(r"\b(?:only|single|one)\s+relevant\b.*?\b(\d+)(?:st|nd|rd|th)\b()", question, _I)
    if single:
        r = int(single.group(1) or single.group(2))
        k = k or 10
        value = 1 / math.log2(r + 1) if r <= k else 0.0
        text = (
            f"With one relevant document (binary grades), nDCG@{k} = 1/log₂(r + 1) for rank r ≤ {k}: at rank {r}, "
            + (f"1/log₂({r + 1}) ≈ {value:.3f}." if r <= k else f"0, because {r} > {k}.")
        )
        return {"rank": r, "ndcg": round(value, 4)}, text
    return None


# ---- reciprocal rank and MRR ----

_MISS = (
    r"none|nowhere|not found|missing|absent|missed|no relevant(?: \w+)?|nothing(?: relevant)?|zero relevant(?: \w+)?"
)
_RANK_WORD = re.compile(r"\b(?:ranks?|ranked|positions?|places?)\b", _I)
_NOT_RANKS = re.compile(r"@\s*\d+|\btop[- ]\d+\b|\b\d+\s+(?:quer(?:y|ies)|searches|questions)\b|\bk\s*=\s*\d+", _I)


def _ranks(question: str) -> list[int] | None:
    """The first relevant ranks a question lists, 0 for a query with none: "ranks 1, 3, none and 2", "rank 2, rank
    4, nowhere in the top 10, and rank 1"; None when it names no rank."""
    m = _RANK_WORD.search(question)
    if not m:
        return None
    rest = re.sub(
        rf"\b(?:{_MISS})\b(?:\s+in\s+the\s+top[- ]?\d*)?|\bnot\s+in\s+the\s+top[- ]?\d*",
        " none ",
        question[m.start() :],
        flags=_I,
    )
    rest = _NOT_RANKS.sub(" ", rest)
    tokens = re.findall(r"\b(\d+)(?:st|nd|rd|th)?\b|\b(none)\b", rest, _I)
    ranks = [int(d) if d else 0 for d, _ in tokens]
    return ranks if any(ranks) else None


def reciprocal_rank(question: str, low: str):
    ranks = _ranks(question)
    if not ranks:
        return None
    queries = re.search(r"\b(\d+)\s+(?:quer(?:y|ies)|searches|questions)\b", question, _I)
    if queries and int(queries.group(1)) != len(ranks):
        return None  # "over 4 queries" with 3 ranks read: the list is not what the question says
    k = _cutoff(question)
    rr = [1 / r if r and (k is None or r <= k) else 0.0 for r in ranks]
    shown = [f"1/{r} ≈ {x:.3f}" if x else ("0" if not r else f"0 ({r} > {k})") for r, x in zip(ranks, rr)]
    shown = [s.replace("1/1 ≈ 1.000", "1") for s in shown]
    at = f"@{k}" if k else ""
    if len(ranks) == 1:
        text = f"The reciprocal rank is 1/r for the first relevant rank r: {shown[0]}."
        return {"rr": round(rr[0], 4)}, text
    mean = sum(rr) / len(rr)
    text = (
        f"Reciprocal rank 1/r per query (0 when no relevant document is found): {', '.join(shown)}; "
        f"MRR{at} = ({' + '.join(f'{x:.3f}' for x in rr)}) / {len(rr)} ≈ {_fmt(mean, 4)}" + "."
    )
    return {"rr": [round(x, 4) for x in rr], "mrr": round(mean, 4)}, text


# ---- unit vectors: distance and cosine ----

_COS = re.compile(r"\bcos(?:ine)?(?:\s+similarity)?\s*(?:of|=|is|:)?\s*(-?\d*\.\d+|-?[01](?![\d.]))", _I)
_DIST = re.compile(r"\bdistance\s*(?:of|=|is|:)?\s*(\d*\.\d+|\d+(?![\d.]))", _I)


def unit_distance(question: str, low: str):
    """‖a − b‖² = 2 − 2·cos(a, b) for unit vectors: the distance from a cosine, or the cosine from a distance."""
    cos = _COS.search(question)
    if cos and re.search(r"distance|euclidean|\bl2\b", low[cos.end() :] + low[: cos.start()]):
        c = float(cos.group(1))
        if not -1 <= c <= 1:
            return None
        sq = 2 - 2 * c
        text = (
            f"For unit vectors ‖a − b‖² = 2 − 2·cos(a, b), so a cosine of {_fmt(c)} gives a squared Euclidean "
            f"distance of 2 − 2 × {_fmt(c)} = {_fmt(sq)} (distance √{_fmt(sq)} ≈ {math.sqrt(sq):.3f})."
        )
        return {"cos": c, "squared_distance": round(sq, 6), "distance": round(math.sqrt(sq), 6)}, text
    dist = _DIST.search(question)
    if dist:
        d = float(dist.group(1))
        squared = bool(re.search(r"squared", low[max(0, dist.start() - 20) : dist.start()]))
        sq = d if squared else d * d
        if not 0 <= sq <= 4:
            return None
        c = 1 - sq / 2
        said = f"a squared distance of {_fmt(d)}" if squared else f"a distance of {_fmt(d)} (squared {_fmt(sq)})"
        text = f"For unit vectors cos(a, b) = 1 − ‖a − b‖²/2, so {said} means a cosine of 1 − {_fmt(sq)}/2 = {_fmt(c)}."
        return {"cos": round(c, 6), "squared_distance": sq}, text
    return None


# ---- Recall@k and Precision@k ----


def recall_precision(question: str, low: str):
    total = _first(
        [
            _NUM + r"\s+(?:relevant|gold|judged relevant)\b",
            r"\brelevant\s+(?:documents?|docs?|passages?)\D{0,12}" + _NUM,
        ],
        question,
    )
    found = _first(
        [
            _NUM + r"\s+of\s+(?:them|those|these|the relevant|the \d+)",
            r"\b(?:contains?|contained|finds?|found|retrieves?|retrieved|returns?|returned|includes?|included|has|"
            r"have|gets?|got|holds?|surfaces?)\s+(?:only\s+|just\s+)?" + _NUM + r"(?!\s+(?:relevant|gold)\b)",
        ],
        question,
    )
    k = _cutoff(question)
    if total is None or found is None or k is None or found > total or found > k or not total:
        return None
    recall, precision = found / total, found / k
    text = (
        f"Recall@{k} = relevant in the top {k} / all relevant = {_fmt(found)}/{_fmt(total)} = {_fmt(recall)}; "
        f"Precision@{k} = {_fmt(found)}/{k} = {_fmt(precision)}."
    )
    return {"recall": round(recall, 4), "precision": round(precision, 4)}, text


# ---- reciprocal rank fusion ----


_ORDINALS = ("first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth")
_ORDINAL = re.compile(r"\b(?:(\d+)(?:st|nd|rd|th)|(" + "|".join(_ORDINALS) + r"))\b", _I)


_SAME_RANK_IN = re.compile(
    r"\b(?:in|by|on|across|for)\s+(both|all\s+(?:three|3)|each\s+of\s+the\s+(?:two|three|2|3))\b", _I
)


def rrf(question: str, low: str):
    """The ranks a question gives a document ("ranked 1st by BM25 and 3rd by dense", "ranks it first", "rank 2")."""
    ranks = [
        int(m.group(1)) if m.group(1) else _ORDINALS.index(m.group(2).lower()) + 1 for m in _ORDINAL.finditer(question)
    ]
    ranks = ranks or [int(x) for x in re.findall(r"\brank(?:ed)?\s+(?:#\s*)?(\d+)\b", question, _I)]
    if not ranks:
        return None
    same = ""
    if len(ranks) == 1:  # "4th in both the BM25 and the dense ranking", "first in all three lists"
        many = _SAME_RANK_IN.search(question)
        if many:
            ranks = ranks * (3 if re.search(r"three|3", many.group(1), _I) else 2)
            same = f"rank {ranks[0]} in each of the {len(ranks)} rankings, "
    k = _first([r"\bk\s*=\s*" + _NUM], question)
    k_said = k is not None
    k = 60.0 if k is None else k
    parts = [1 / (k + r) for r in ranks]
    total = sum(parts)
    setting = f"k = {_fmt(k)}" + ("" if k_said else " (the convention)")
    terms = " + ".join(f"1/({_fmt(k)} + {r})" for r in ranks)
    shown = " + ".join(f"{x:.6f}" for x in parts)
    text = f"RRF(d) = Σ_r 1/(k + rank_r(d)) with {setting}: {same}{terms} ≈ {shown}" + (
        f" = {total:.6f}." if len(parts) > 1 else "."
    )
    return {"k": k, "ranks": ranks, "rrf": round(total, 6)}, text
