"""The extractive answer on evalsets/seed_questions.jsonl: does it contain the key phrase and cite the passage
that answers the question? Run: .venv/bin/python scripts/seed_answers.py [hybrid|dense|bm25]"""

import json
import sys
import time
from pathlib import Path

from rag.agent import run_agent
from rag.retrieve import RetrievalSettings

rows = [json.loads(line) for line in open(Path(__file__).resolve().parent.parent / "evalsets/seed_questions.jsonl")]
settings = RetrievalSettings(corpus="builtin", retriever=sys.argv[1] if len(sys.argv) > 1 else "hybrid")
phrase = cited = both = 0
t0 = time.time()
for r in rows:
    result = run_agent(r["question"], settings)
    has = r["key_phrase"].lower() in result["answer"].lower()
    cites = r["passage"] in [c["id"] for c in result["citations"]]
    phrase, cited, both = phrase + has, cited + cites, both + (has and cites)
    print(
        f"{r['_id']} key phrase {'yes' if has else 'no '} · cites {r['passage']}: {'yes' if cites else 'no '} | "
        f"{result['answer'][:160]}"
    )
print(
    f"{len(rows)} questions: key phrase {phrase}/{len(rows)}, right passage cited {cited}/{len(rows)}, "
    f"both {both}/{len(rows)} ({time.time() - t0:.0f} s)"
)
