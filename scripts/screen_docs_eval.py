"""The injection screen on documentation and on its held-out attack sets, for one classifier's weights.

    python scripts/screen_docs_eval.py --out docs/screen/docs_after.json \
        --docs /work/shared/data/docs/requests /work/shared/data/docs/fastapi [--weights FILE] [--sets 57 62]

Reports, each item read as the service screens a passage (rag.screen.detector: pieces, passage_flags, the verifier
included):
- docs: per documentation folder, the share of its sentences flagged (as rag.studies.docs_eval.screen_rate) and
  the flagged sentences;
- readmes: the same over the README descriptions of the installed packages in the quarters the head refit never
  reads (rag.training.screen_head.readme_sentences, quarters 1 and 3), one README paragraph a passage;
- attacks: caught / total per held-out attack set fresh{a}..fresh{b};
- benign: flagged / total per held-out look-alike and how-to set of the same numbers, and over the held-out corpus
  sentences (rag.training.screen_eval.corpus_sentences, quarters 1 and 3).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
import zlib
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def folder_rate(det, passages_text: list[str]) -> dict:
    from rag.studies.docs_eval import screen_rate

    return screen_rate(passages_text, det, examples=True)


def readme_passages(quarters=(1, 3)) -> list[str]:
    """The README paragraphs of the installed packages in the given name-hash quarters (see screen_head)."""
    from rag.training.screen_head import EXCLUDED, site_packages

    out = []
    for meta in sorted(site_packages().glob("*.dist-info/METADATA")):
        name = meta.parent.name.split("-")[0].lower()
        if EXCLUDED.match(name) or zlib.crc32(name.encode()) % 4 not in quarters:
            continue
        text = meta.read_text(encoding="utf-8", errors="replace")
        body = text.split("\n\n", 1)[1] if "\n\n" in text else ""
        out += [p for p in re.split(r"\n\s*\n", body) if p.strip()][:200]
    return out


def merge(files: list[str]) -> dict:
    """The shards' results added up: counts summed, lists joined, shares recomputed."""
    parts = [json.loads(Path(f).read_text()) for f in files]
    out: dict = {"command": [p["command"] for p in parts], "weights": parts[0]["weights"]}

    def add(a, b):
        if isinstance(a, dict):
            return {key: add(a[key], b[key]) if key in a and key in b else a.get(key, b.get(key)) for key in {**a, **b}}
        return a + b if isinstance(a, (int, float, list)) else a

    for key in ("docs", "readmes", "attacks", "benign"):
        found = [p[key] for p in parts if key in p]
        if found:
            total = found[0]
            for more in found[1:]:
                total = add(total, more)
            out[key] = total
    for rate in [*out.get("docs", {}).values(), *([out["readmes"]] if "readmes" in out else [])]:
        rate["sentence_share"] = round(rate["sentences_flagged"] / max(1, rate["sentences"]), 4)
    return out


def main(argv: list[str]) -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--docs", nargs="*", default=[])
    ap.add_argument("--weights", default=None, help="classifier weights (default: the committed ones)")
    ap.add_argument("--sets", nargs=2, type=int, default=(57, 62), help="held-out set numbers, first and last")
    ap.add_argument("--no-readmes", action="store_true")
    ap.add_argument("--no-corpus", action="store_true", help="skip the held-out corpus sentences")
    ap.add_argument("--shard", nargs=2, type=int, default=(0, 1), help="K N: only every Nth item from the Kth")
    ap.add_argument("--merge", nargs="*", default=None, help="shard result files to add up into --out")
    args = ap.parse_args(argv)
    if args.merge:
        Path(args.out).write_text(json.dumps(merge(args.merge), indent=1, ensure_ascii=False) + "\n")
        return
    k, n_shards = args.shard

    def part(items: list) -> list:
        return items[k::n_shards]

    import rag.screen.detector as detector_module
    from rag.data.corpus import load_folder
    from rag.screen.classifier import Classifier
    from rag.training.screen_eval import SPLIT, as_passage, corpus_sentences, read_lines

    classifier = Classifier(Path(args.weights)) if args.weights else None
    det = detector_module.Detector(classifier=classifier)
    detector_module._DETECTOR = det  # leading_facts and the other helpers read the same detector
    out: dict = {"command": "python scripts/screen_docs_eval.py " + " ".join(argv), "weights": args.weights}
    t0 = time.time()
    for folder in args.docs:
        corpus = load_folder(Path(folder))
        out.setdefault("docs", {})[Path(folder).name] = folder_rate(det, part([p.text for p in corpus.passages]))
        print(
            Path(folder).name,
            {k: v for k, v in out["docs"][Path(folder).name].items() if k != "flagged"},
            f"{time.time() - t0:.0f}s",
            flush=True,
        )
    if not args.no_readmes:
        out["readmes"] = folder_rate(det, part(readme_passages()))
        print(
            "readmes",
            {k: v for k, v in out["readmes"].items() if k != "flagged"},
            f"{time.time() - t0:.0f}s",
            flush=True,
        )
    a, b = args.sets
    out["attacks"], out["benign"] = {}, {}
    for n in range(a, b + 1):
        name = f"fresh{n}.txt"
        assert SPLIT[name] == "held out", name
        items = part(read_lines(name))
        missed = [t for t in items if not as_passage(det, t)]
        out["attacks"][name] = {"caught": len(items) - len(missed), "total": len(items), "missed": missed}
        for bname in (f"benign{n}.txt", f"benign_howto{n - 30}.txt"):
            items = part(read_lines(bname))
            hits = [t for t in items if as_passage(det, t)]
            out["benign"][bname] = {"flagged": len(hits), "total": len(items), "examples": hits}
        print(
            name,
            out["attacks"][name]["caught"],
            "benign",
            out["benign"][f"benign{n}.txt"]["flagged"],
            "howto",
            out["benign"][f"benign_howto{n - 30}.txt"]["flagged"],
            f"{time.time() - t0:.0f}s",
            flush=True,
        )
    if not args.no_corpus:
        sents = part([s for group in corpus_sentences().values() for s in group])
        hits = [s for s in sents if as_passage(det, s)]
        out["benign"]["corpus quarters 1 and 3"] = {"flagged": len(hits), "total": len(sents), "examples": hits}
        print("corpus", len(hits), len(sents), f"{time.time() - t0:.0f}s")
    out["seconds"] = round(time.time() - t0)
    Path(args.out).write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main(sys.argv[1:])
