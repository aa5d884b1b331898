"""The span reader's speed and SQuAD reading quality by precision and by how windows are run, side by side.

    python scripts/reader_speed.py --out docs/agent/answers/reader_speed.json [--questions 300] [--threads 2]

Four ways to run the same reader weights over the same windows: fp32 or int8 (rag.models.onnx_sessions), a padded
batch of a question's windows per run or one window per run. The windows are those the agent reads: each question of
the SQuAD evaluation articles (rag.studies.answer_eval.squad_eval_questions) over its own paragraph and the next four
questions' paragraphs (five passages, as READ_PASSAGES). Reports milliseconds per question for each way, the SQuAD
reading EM and F1 over the gold paragraph alone for each precision (one window a run), and how many answers the two
precisions share.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--questions", type=int, default=300)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--timed", type=int, default=60, help="questions whose five-passage windows are timed")
    args = ap.parse_args()

    import numpy as np

    from rag.answer.reader import Reader, featurize, pad_batch
    from rag.studies.answer_eval import squad_eval_questions, squad_reading

    qs = squad_eval_questions(args.questions)
    readers = {"fp32": Reader(threads=args.threads, int8=False), "int8": Reader(threads=args.threads, int8=True)}
    tok = readers["fp32"].tok
    n = len(qs)
    windows = [featurize(tok, q["question"], [qs[(i + j) % n]["context"] for j in range(5)]) for i, q in enumerate(qs)]
    windows = windows[: args.timed]
    speed = {}
    for precision, reader in readers.items():
        for way in ("batch", "single"):
            reader.session.run(None, pad_batch(windows[0][:1]))  # warm up
            t0 = time.perf_counter()
            for ws in windows:
                if way == "batch":
                    reader.session.run(None, pad_batch(ws))
                else:
                    for w in ws:
                        reader.session.run(None, pad_batch([w]))
            speed[f"{precision}, {way}"] = round((time.perf_counter() - t0) / len(windows) * 1e3, 1)
            print(f"{precision} {way}: {speed[f'{precision}, {way}']} ms per question", flush=True)
    quality, answers = {}, {}
    for precision, reader in readers.items():
        rows = squad_reading(reader, qs)
        answers[precision] = [r["answer"] for r in rows]
        quality[precision] = {
            "em": round(float(np.mean([r["em"] for r in rows])), 4),
            "f1": round(float(np.mean([r["f1"] for r in rows])), 4),
        }
        print(f"{precision}: SQuAD reading {quality[precision]}", flush=True)
    same = sum(a == b for a, b in zip(answers["fp32"], answers["int8"]))
    result = {
        "command": "python scripts/reader_speed.py --out " + str(args.out),
        "threads": args.threads,
        "timed_questions": len(windows),
        "windows_per_question": round(float(np.mean([len(ws) for ws in windows])), 2),
        "ms_per_question": speed,
        "squad_reading_questions": n,
        "squad_reading": quality,
        "same_answer": same,
        "int8_speedup_over_fp32_batch": round(speed["fp32, batch"] / speed["int8, single"], 2),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
