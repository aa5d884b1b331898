"""What the thread that loads the answer step's models buys a `rag ask` from the CLI: the same ask as a fresh process,
alternately with the thread (as shipped) and without it (rag.agent.prepare.load_answer_models replaced by a no-op in
that child only), wall time of each.

    python scripts/ask_thread_ab.py --corpus ../shared/data/docs/requests --out docs/speed/ask_thread_ab.json

The index must be built and the models prepared (`rag index build --corpus ...`). Run it on a quiet machine: the
thread only helps where a second core is free.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CHILD = """
import runpy, sys
if sys.argv[1] == "without":
    import rag.agent.prepare
    rag.agent.prepare.load_answer_models = lambda: None
sys.argv = ["rag", "ask", "--json", "--corpus", sys.argv[2], sys.argv[3]]
runpy.run_path("cli.py", run_name="__main__")
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--question", default="How do I set a timeout on a request?")
    ap.add_argument("--runs", type=int, default=6, help="asks of each kind, alternately")
    args = ap.parse_args()
    corpus = str(Path(args.corpus).resolve())
    times: dict[str, list[float]] = {"with": [], "without": []}
    load = round(os.getloadavg()[0], 2)
    for _ in range(args.runs):
        for kind in times:
            start = time.perf_counter()
            done = subprocess.run(
                [sys.executable, "-c", CHILD, kind, corpus, args.question], cwd=REPO, capture_output=True, text=True
            )
            if done.returncode != 0:
                sys.exit(done.stderr[-2000:])
            times[kind].append(round(time.perf_counter() - start, 3))
    medians = {kind: round(statistics.median(values), 3) for kind, values in times.items()}
    result = {
        "command": f"python scripts/ask_thread_ab.py --corpus {args.corpus} --out {args.out}",
        "question": args.question,
        "load_before": load,
        "wall_s": times,
        "median_s": medians,
        "saved_s": round(medians["without"] - medians["with"], 3),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
