"""The first question after a build, into an empty model cache: does it wait for an export?

    python scripts/first_question.py --corpus ../shared/data/docs/requests --out docs/speed/first_question.json \
        [--question "..."] [--cache /tmp/rag-first-question]

Runs, as fresh processes under /usr/bin/time with RAG_CACHE_DIR set to an emptied folder: `rag index build --corpus
C` (which makes the query models the cache lacks), then `rag ask` twice and `rag search` once with the same question.
Records each command's wall time, CPU time (user + system) and peak resident memory, the load average before each,
and which ONNX files the asks added to the cache (none is the goal).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def timed(args: list[str], env: dict) -> dict:
    """One command under /usr/bin/time: wall s, CPU s, peak RSS MiB, exit status."""
    with tempfile.NamedTemporaryFile("r", suffix=".time") as out:
        done = subprocess.run(
            ["/usr/bin/time", "-o", out.name, "-f", "%e %U %S %M", sys.executable, "cli.py", *args],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
        )
        wall, user, system, rss_kb = Path(out.name).read_text().split()[-4:]
    return {
        "command": "rag " + " ".join(args),
        "rc": done.returncode,
        "wall_s": float(wall),
        "cpu_s": round(float(user) + float(system), 2),
        "peak_rss_mib": round(int(rss_kb) / 1024),
        "load_before": round(os.getloadavg()[0], 2),
        "stderr_tail": done.stderr.strip().splitlines()[-3:],
    }


def onnx_files(cache: Path) -> set[str]:
    return {str(p.relative_to(cache)) for p in (cache / "onnx").rglob("*") if p.is_file()} if cache.exists() else set()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--question", default="How do I set a timeout on a request?")
    ap.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "rag-first-question")
    args = ap.parse_args()
    shutil.rmtree(args.cache, ignore_errors=True)
    args.cache.mkdir(parents=True)
    env = {**os.environ, "RAG_CACHE_DIR": str(args.cache), "COLUMNS": "120"}
    runs = [{"step": "build into an empty cache", **timed(["index", "build", "--corpus", args.corpus], env)}]
    after_build = onnx_files(args.cache)
    for name in ("first ask", "second ask"):
        runs.append({"step": name, **timed(["ask", "--corpus", args.corpus, args.question], env)})
    runs.append({"step": "search", **timed(["search", "--corpus", args.corpus, args.question], env)})
    result = {
        "command": f"python scripts/first_question.py --corpus {args.corpus} --out {args.out}",
        "question": args.question,
        "cpus": os.cpu_count(),
        "runs": runs,
        "onnx_files_added_by_the_asks": sorted(onnx_files(args.cache) - after_build),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    for r in runs:
        print(
            f"{r['step']:28s} rc {r['rc']}  wall {r['wall_s']:7.2f} s  cpu {r['cpu_s']:7.2f} s  {r['peak_rss_mib']} MiB"
        )
    print("ONNX files the asks added:", result["onnx_files_added_by_the_asks"] or "none")


if __name__ == "__main__":
    main()
