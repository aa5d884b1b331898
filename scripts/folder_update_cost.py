#!/usr/bin/env python
"""The cost of one changed file in a folder of about 5,000 passages: what `rag search` pays before it searches.

    .venv/bin/python scripts/folder_update_cost.py [--passages 5000] [--folder /tmp/rag-folder-5k] [--runs 3]
                                                  [--out docs/scale/folder_update_cost.json]

Writes SciFact abstracts (RAG_DATA_DIR) as Markdown files, one per abstract, until the folder reads as at least
--passages passages, and builds its MiniLM flat index (the first run encodes them all: minutes on 2 cores; later
runs reuse the per-passage cache). It times one read of the folder with every file parsed (the parsed-file cache,
rag.data.parsed_cache, emptied first). Then, --runs times, it edits one file and times what a search of the changed
folder does first: reading the folder (the edited file parsed, the others from the parsed-file cache, the content
hashed), and the update that encodes only the changed passage, rebuilds the index from cached vectors and swaps it
in. Prints each phase in seconds; --out writes them as JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
import warnings
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from rag.config import RagWarning, data_dir, runtime_environment  # noqa: E402

runtime_environment()


def write_folder(folder: Path, passages: int) -> int:
    """Files until the folder reads as `passages` passages (a long abstract is chunked into two or three)."""
    from rag.data.corpus import load_corpus

    folder.mkdir(parents=True, exist_ok=True)
    with open(data_dir() / "scifact" / "corpus.jsonl", encoding="utf-8") as f:
        docs = [json.loads(line) for line in f]
    written, have = 0, 0
    while written < len(docs) and have < passages:
        for doc in docs[written : written + max(1, (passages - have) // 2)]:
            (folder / f"{doc['_id']}.md").write_text(f"# {doc['title']}\n\n{doc['text']}\n", encoding="utf-8")
            written += 1
        have = len(load_corpus(str(folder)).passages)
    return written


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--passages", type=int, default=5000)
    parser.add_argument("--folder", type=Path, default=Path("/tmp/rag-folder-5k"))
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--out", type=Path, default=None, help="write the figures here as JSON")
    args = parser.parse_args()

    from rag.data.corpus import load_corpus
    from rag.data.parsed_cache import ParsedFiles
    from rag.index.spec import IndexSpec
    from rag.index.store import build_and_save, load_index
    from rag.index.update import refresh_if_changed

    write_folder(args.folder, args.passages)
    files = sum(1 for _ in args.folder.glob("*.md"))  # a folder from an earlier run keeps its files
    spec = IndexSpec().validated()
    corpus = load_corpus(str(args.folder))
    print(f"folder: {files:,} files, {len(corpus.passages):,} passages", flush=True)
    t = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RagWarning)
        build_and_save(corpus, spec)
    print(f"initial build (encodes what the cache lacks): {time.perf_counter() - t:.1f} s", flush=True)
    ParsedFiles(args.folder, "words").path.unlink(missing_ok=True)
    t = time.perf_counter()
    _ = load_corpus(str(args.folder)).content_hash
    cold = time.perf_counter() - t
    print(f"read folder, every file parsed: {cold:.2f} s", flush=True)
    target = sorted(args.folder.glob("*.md"))[0]
    rows = []
    for run in range(args.runs):
        target.write_text(target.read_text(encoding="utf-8") + f"\nEdited {run} {os.urandom(4).hex()}.\n")
        t0 = time.perf_counter()
        changed = load_corpus(str(args.folder))
        _ = changed.content_hash
        t1 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RagWarning)
            result = refresh_if_changed(changed, spec)
        t2 = time.perf_counter()
        load_index(changed, spec)
        t3 = time.perf_counter()
        rows.append((t1 - t0, t2 - t1, t3 - t2, t3 - t0))
        print(
            f"run {run + 1}: read folder {t1 - t0:.2f} s · update {t2 - t1:.2f} s "
            f"(encoded {result['encoded']} passage(s); {result['changed']} changed) · load index {t3 - t2:.2f} s · "
            f"total {t3 - t0:.2f} s",
            flush=True,
        )
    med = [statistics.median(c) for c in zip(*rows)]
    load = os.getloadavg()[0]
    print(
        f"median of {len(rows)}: read folder {med[0]:.2f} s, update {med[1]:.2f} s, load index {med[2]:.2f} s, "
        f"total {med[3]:.2f} s for one changed file in {len(corpus.passages):,} passages; "
        f"load average {load:.1f}"
    )
    if args.out:
        figures = {
            "command": "python scripts/folder_update_cost.py" + (f" --runs {args.runs}" if args.runs != 3 else ""),
            "files": files,
            "passages": len(corpus.passages),
            "read_every_file_parsed_s": round(cold, 3),
            "runs": [
                dict(zip(("read_s", "update_s", "load_index_s", "total_s"), map(lambda v: round(v, 3), r)))
                for r in rows
            ],
            "median": dict(zip(("read_s", "update_s", "load_index_s", "total_s"), map(lambda v: round(v, 3), med))),
            "load_average": round(load, 1),
            "cpus": os.cpu_count(),
        }
        args.out.write_text(json.dumps(figures, indent=2) + "\n")


if __name__ == "__main__":
    main()
