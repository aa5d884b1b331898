"""Measure the injection screen (rag.screen.detector): the false-positive rate on benign text and the recall on
attack phrasings, each set reported on its own, and which split each set belongs to.

Benign: real sentences from every named corpus that is available (builtin, scifact, hotpotqa, squad), from the
passages whose id hash falls in the held-out quarters 1 and 3 (the classifier trains on quarter 0 and the
threshold was chosen on quarter 2), plus the look-alike and how-to sets in evalsets/injection/. Attacks: one file
per set (one variant per line, a literal \\n between its sentences); a variant counts as caught when any of its
sentences is flagged, and an item is screened as the service screens a passage (split into sentences).

SPLIT says what each set is for. Each set from fresh4/benign5 on was written by an engineer who had not seen the
screen or its training data, and was measured once, as held out, before anything was changed from it.
- trained: the classifier's training data (every set up to fresh32 and benign32);
- held out: fresh33..62, benign33..62 and benign_howto4..32 are held out from the classifier; the verifier
  (rag.screen.verifier) trains on the flagged items of fresh33..56 and their look-alikes, so fresh57..62 and
  benign57..62 are held out from every part of the screen.
docs/screen.md gives the current figures; docs/screen/heldout.csv the three latest held-out sets.

    python -m rag.training.screen_eval            # prints both rates per set (about 13 minutes on 2 cores)
"""

from __future__ import annotations

import sys
import zlib

from rag.config import EVALSETS_DIR

SETS = EVALSETS_DIR / "injection"
ATTACK_SETS = (  # in the order they were written
    ("dev.txt", "heldout.txt", "fresh.txt", "fresh2.txt", "styles.txt", "fresh3.txt")
    + tuple(f"fresh{n}.txt" for n in range(4, 63))
)
BENIGN_SETS = (  # from benign34 on, each look-alike set comes with a how-to set (benign_howto{n - 30})
    ("benign_howto.txt", "benign_howto2.txt", "benign_howto3.txt", "benign_ai.txt")
    + tuple(f"benign{n}.txt" for n in range(5, 34))
    + tuple(name for n in range(34, 63) for name in (f"benign{n}.txt", f"benign_howto{n - 30}.txt"))
)
SPLIT = {  # what each set was used for (see the module doc)
    **{name: "trained" for name in ATTACK_SETS[:7] + BENIGN_SETS[:4]},
    "fresh5.txt": "trained",
    "benign5.txt": "trained",
    "fresh6.txt": "trained",
    "benign6.txt": "trained",
    "fresh7.txt": "trained",
    "benign7.txt": "trained",
    "fresh8.txt": "trained",
    "benign8.txt": "trained",
    "fresh9.txt": "trained",
    "benign9.txt": "trained",
    "fresh10.txt": "trained",
    "benign10.txt": "trained",
    **{f"fresh{n}.txt": "trained" for n in range(11, 25)},
    **{f"benign{n}.txt": "trained" for n in range(11, 25)},
    **{f"fresh{n}.txt": "trained" for n in range(25, 33)},
    **{f"benign{n}.txt": "trained" for n in range(25, 33)},
    # held out from the classifier (fresh33..56 train the verifier; fresh57..62 are held out from every part)
    **{f"{kind}{n}.txt": "held out" for n in range(33, 63) for kind in ("fresh", "benign")},
    **{f"benign_howto{n}.txt": "held out" for n in range(4, 33)},
}
CORPORA = ("builtin", "scifact", "hotpotqa", "squad")


def read_lines(name: str, skip_hash_lines: bool = False) -> list[str]:
    """A set's items, one per line, without its first line when that is a "# ..." header. An item may itself be a
    Markdown heading ("# Setup" is a look-alike, "### Instruction:" an attack), so later lines are never headers.
    skip_hash_lines=True drops every line starting "# " instead: the reading the shipped classifier was trained with
    (rag.training.screen_fit), kept so that its re-train command reproduces it."""
    path = SETS / name
    if not path.exists():
        return []
    lines = path.read_text(encoding="utf-8").splitlines()
    if skip_hash_lines:
        return [line for line in lines if line.strip() and not line.startswith("# ")]
    if lines and lines[0].startswith("# "):
        lines = lines[1:]
    return [line for line in lines if line.strip()]


def variants(name: str) -> list[list[str]]:
    return [line.split("\\n") for line in read_lines(name)]


def corpus_sentences(quarters=(1, 3), per_corpus: int = 700, per_passage: int = 4) -> dict[str, list[str]]:
    """Up to per_corpus sentences (30-400 characters, the first per_passage of each passage) of each available
    corpus, from the passages whose id hash falls in the given quarters (1 and 3: held out; 0: training; 2: dev)."""
    from rag.config import RagError
    from rag.data.corpus import load_corpus
    from rag.lexicon import sentences

    out: dict[str, list[str]] = {}
    for name in CORPORA:
        try:
            passages = load_corpus(name).passages
        except RagError:
            continue  # not available here
        taken: list[str] = []
        for p in passages:
            if zlib.crc32(p.id.encode()) % 4 not in quarters:
                continue
            taken += [s for s in sentences(p.text)[:per_passage] if 30 <= len(s) <= 400]
            if len(taken) >= per_corpus:
                break
        out[name] = taken[:per_corpus]
    return out


def as_passage(det, item: str) -> bool:
    """Whether the screen flags any sentence of an item read as the service reads a passage: split into sentences
    (rag.screen.detector.pieces), a literal \\n as a line break."""
    from rag.screen.detector import pieces

    return any(det.passage_flags(pieces(item.replace("\\n", "\n"))))


def measure(per_corpus: int = 700) -> dict:
    """{'benign': {source: (flagged, total, examples)}, 'attacks': {set: (caught, total, missed)},
    'passages': {set: (hits, total)}}: the sets line by line (a literal \\n piece is one sentence; a benign item by
    its first line) and, in 'passages', each item as the service screens a passage (as_passage)."""
    from rag.screen.detector import detector

    det = detector()
    benign = {**corpus_sentences(per_corpus=per_corpus), **{name: read_lines(name) for name in BENIGN_SETS}}
    out: dict = {"benign": {}, "attacks": {}, "passages": {}}
    for source, sents in benign.items():
        flagged = [s for s in sents if any(det.flags([s]))]
        out["benign"][source] = (len(flagged), len(sents), flagged)
    for name in ATTACK_SETS:
        sets = variants(name)
        missed = [v for v in sets if not any(det.flags(v))]
        if sets:
            out["attacks"][name] = (len(sets) - len(missed), len(sets), missed)
    for name in ATTACK_SETS + BENIGN_SETS:
        items = read_lines(name) if SPLIT.get(name) == "held out" else []
        if items:
            out["passages"][name] = (sum(as_passage(det, t) for t in items), len(items))
    return out


def main(argv: list[str]) -> None:
    per_corpus = int(argv[0]) if argv else 700
    result = measure(per_corpus)
    total_fp = sum(f for f, _, _ in result["benign"].values())
    total_b = sum(n for _, n, _ in result["benign"].values())
    print("benign sentences (false positives):")
    for source, (f, n, examples) in result["benign"].items():
        print(f"  {source:18s} {f:4d} / {n:5d} flagged  ({f / max(n, 1):.2%})  {SPLIT.get(source, 'held out')}")
        for s in examples[:5]:
            print(f"      e.g. {s[:110]}")
    print(f"  {'all':18s} {total_fp:4d} / {total_b:5d} flagged  ({total_fp / max(total_b, 1):.2%})")
    print("attack phrasings (recall):")
    for name, (c, n, missed) in result["attacks"].items():
        print(f"  {name:18s} {c:4d} / {n:4d} caught   ({c / max(n, 1):.1%})  {SPLIT[name]}")
        for v in missed[:6]:
            print(f"      missed: {' | '.join(v)[:110]}")
    print("held-out sets read as the service screens a passage (any sentence flagged):")
    for name, (hits, n) in result["passages"].items():
        what = "caught" if name.startswith("fresh") else "flagged"
        print(f"  {name:18s} {hits:4d} / {n:4d} {what}  ({hits / max(n, 1):.1%})")


if __name__ == "__main__":
    main(sys.argv[1:])
