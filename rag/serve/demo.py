"""The demo page at `/` (static files from rag/serve/static: index.html, app.js, style.css, vendored Vega-Lite) and
the two small endpoints it needs besides the API: GET /study (the committed and operator-given evaluation results)
and POST /passages (the text and source of cited passages, under the same policy as /search).

Study folders: the repository's docs/ (when the package runs from a checkout) plus the folders in RAG_STUDY_DIR
(os.pathsep-separated). Clients never send a path: /study lists what it finds, bounded in files, bytes and rows,
and names each result by its folder relative to its root, never by a server path.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
from pathlib import Path

from fastapi import FastAPI
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import FileResponse
from fastapi.staticfiles import StaticFiles
from pydantic import Field

from rag.config import REPO_DIR, RagError
from rag.serve.models import SettingsIn, error_responses
from rag.serve.service import Service

STATIC_DIR = Path(__file__).resolve().parent / "static"
RESULT_NAMES = ("results.csv", "results.json")  # csv first: when a folder has both, the csv is read
MAX_FILES, MAX_BYTES, MAX_ROWS, MAX_DEPTH = 40, 5 * 1024 * 1024, 5000, 4
MAX_IDS = 50
# Vega compiles its expressions with Function(), hence 'unsafe-eval'; no inline script runs, nothing loads from
# another origin, and document text is only ever set with textContent.
PAGE_CSP = (
    "default-src 'self'; script-src 'self' 'unsafe-eval'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'"
)


def swagger_ui_dir() -> Path:
    """The folder of swagger-ui-bundle.js and swagger-ui.css (Swagger UI 5.32, which reads OpenAPI 3.1) inside the
    installed fastapi-offline package, found without importing it."""
    import importlib.util

    spec = importlib.util.find_spec("fastapi_offline")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("fastapi-offline is not installed; pip install -e . installs it (it serves /docs)")
    return Path(spec.submodule_search_locations[0]) / "static"


class PassagesRequest(SettingsIn):
    """The settings a question was asked with, plus the passage ids to show (e.g. an answer's citations)."""

    ids: list[str] = Field(..., min_length=1, max_length=MAX_IDS)


def add_demo(app: FastAPI, service: Service, roots: list[Path] | None = None) -> None:
    """Mount the page at / and /static, and add GET /study and POST /passages."""
    roots = study_roots() if roots is None else roots
    # Swagger UI 5 for /docs comes from the fastapi-offline package (its static files only), mounted before /static
    app.mount("/static/vendor/swagger-ui", StaticFiles(directory=swagger_ui_dir()), name="swagger-ui")
    app.mount("/static", StaticFiles(directory=STATIC_DIR), name="static")
    headers = {
        "Content-Security-Policy": PAGE_CSP,
        "X-Content-Type-Options": "nosniff",
        "Referrer-Policy": "no-referrer",
        "Cache-Control": "no-cache",
    }

    @app.get("/", include_in_schema=False)
    def page() -> FileResponse:
        return FileResponse(STATIC_DIR / "index.html", headers=headers)

    @app.get("/favicon.ico", include_in_schema=False)
    def favicon() -> FileResponse:
        return FileResponse(STATIC_DIR / "favicon.svg", media_type="image/svg+xml")

    @app.get("/study")
    async def study() -> dict:
        """Evaluation results for the study charts: `rag eval retrieval` and LM-sweep results.csv/results.json
        found under the server's study folders (at most 40 files, 5 MB and 5,000 rows each)."""
        return {"studies": await run_in_threadpool(read_studies, roots)}

    @app.post("/passages", responses=error_responses(403, 404, 409, 413, 422, 503))
    def passages(request: PassagesRequest) -> dict:
        """id, title, source and text of the given passages of the corpus these settings retrieve from."""
        retriever = service.open(request.settings())
        by_id = retriever.corpus.passage_by_id
        out = []
        for pid in dict.fromkeys(request.ids):
            if pid in by_id:
                row = by_id[pid].as_dict()
                out.append({k: row[k] for k in ("id", "title", "source", "text")})
        return {"passages": out, "missing": [pid for pid in request.ids if pid not in by_id]}


def study_roots() -> list[Path]:
    roots = [REPO_DIR / "docs"]
    roots += [Path(p).expanduser() for p in os.environ.get("RAG_STUDY_DIR", "").split(os.pathsep) if p.strip()]
    return [root.resolve() for root in roots if root.is_dir()]


def find_results(roots: list[Path]) -> list[tuple[str, Path]]:
    """(name, file) for each results file under the roots: one per folder, symlinks out of a root not followed, at
    most MAX_FILES per root (the committed docs never crowd out the operator's RAG_STUDY_DIR)."""
    found: list[tuple[str, Path]] = []
    for root in roots:
        start = len(found)
        for folder, dirs, files in os.walk(root):
            here = Path(folder)
            depth = len(here.relative_to(root).parts)
            dirs[:] = sorted(d for d in dirs if not d.startswith(".")) if depth < MAX_DEPTH else []
            name = next((n for n in RESULT_NAMES if n in files), None)
            if name is None:
                continue
            path = (here / name).resolve()
            if not path.is_relative_to(root) or not path.is_file():
                continue
            label = "/".join((root.name, *here.relative_to(root).parts))
            found.append((label, path))
            if len(found) - start >= MAX_FILES:
                break
    return found


def read_studies(roots: list[Path]) -> list[dict]:
    out = []
    for name, path in find_results(roots):
        try:
            if path.stat().st_size > MAX_BYTES:
                out.append(
                    {
                        "name": name,
                        "kind": "skipped",
                        "columns": [],
                        "rows": [],
                        "note": f"over the {MAX_BYTES // 2**20} MB limit",
                    }
                )
                continue
            rows = parse_rows(path.name, path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError, RagError) as exc:
            out.append(
                {
                    "name": name,
                    "kind": "skipped",
                    "columns": [],
                    "rows": [],
                    "note": f"unreadable ({type(exc).__name__})",
                }
            )
            continue
        columns = list(dict.fromkeys(k for row in rows for k in row))
        out.append(
            {
                "name": name,
                "kind": study_kind(columns),
                "columns": columns,
                "rows": rows[:MAX_ROWS],
                "truncated": len(rows) > MAX_ROWS,
            }
        )
    return out


def parse_rows(filename: str, text: str) -> list[dict]:
    """Rows of a results.csv (numbers parsed, empty cells None) or results.json (a list, or a dict with 'rows')."""
    if filename.endswith(".csv"):
        return [{k: number(v) for k, v in row.items() if k} for row in csv.DictReader(io.StringIO(text))]
    data = json.loads(text)
    rows = data.get("rows") if isinstance(data, dict) else data
    if not isinstance(rows, list):
        raise RagError("no rows")
    return [
        {str(k): finite(v) for k, v in row.items() if isinstance(v, (str, int, float, bool)) or v is None}
        for row in rows
        if isinstance(row, dict)
    ]


def number(value: str | None):
    if value is None or value == "":
        return None
    for kind in (int, float):
        try:
            return finite(kind(value))
        except ValueError:
            pass
    return {"True": True, "False": False}.get(value, value)


def finite(value):
    """NaN and infinities become None (JSON has no such numbers)."""
    return None if isinstance(value, float) and not math.isfinite(value) else value


def study_kind(columns: list[str]) -> str:
    if "ndcg@10" in columns:
        return "retrieval"
    if "val_ppl" in columns or "val_loss" in columns:
        return "lm"
    return "other"
