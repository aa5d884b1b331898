"""Where one `rag ask` spends its time: the CLI run once under cProfile, summed by part of the answer path.

    python scripts/ask_profile.py --corpus ../shared/data/docs/requests --out docs/speed/ask_profile.json \
        [--question "..."]

Runs `rag ask` in a child Python under cProfile (the index built, the models prepared) and reports the cumulative
seconds of: importing and compiling the LangGraph graph, the span reader, the answerability features, creating
the ONNX Runtime sessions, the sha256 checks of the cached model files, and the sentence ranker's encodes, beside
the whole run. cProfile slows Python-heavy parts (imports) more than native ones (ONNX Runtime), so the shares are
approximate.
"""

from __future__ import annotations

import argparse
import json
import os
import pstats
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PARTS = {
    "import and compile the LangGraph graph": "graph.py:compiled_graph",
    "span reader": "reader.py:logits",
    "answerability features": "abstain.py:evidence_features",
    "ONNX Runtime sessions": "_create_inference_session",
    "sha256 checks of cached models": "verified_bytes",
    "sentence ranker encodes": "sentence_rank.py:<genexpr>",
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--question", default="How do I set a timeout on a request?")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        prof = Path(tmp) / "ask.prof"
        cmd = [sys.executable, "-m", "cProfile", "-o", str(prof), "cli.py", "ask", "--corpus", args.corpus]
        done = subprocess.run([*cmd, args.question], cwd=REPO, capture_output=True, text=True)
        if done.returncode != 0:
            sys.exit(done.stderr[-2000:])
        stats = pstats.Stats(str(prof)).stats
    cumulative = {k: v[3] for k, v in stats.items()}
    part = {
        name: round(sum(t for k, t in cumulative.items() if key in f"{k[0]}:{k[2]}"), 3) for name, key in PARTS.items()
    }
    result = {
        "command": f"python scripts/ask_profile.py --corpus {args.corpus} --out {args.out}",
        "question": args.question,
        "load_before": round(os.getloadavg()[0], 2),
        "total_s": round(max(cumulative.values()), 3),
        "seconds": part,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
