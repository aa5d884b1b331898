"""`rag eval ablation`: each answer component turned off in turn (rag.studies.ablation), on documentation folders,
the built-in sets, SQuAD and HotpotQA."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from rag.commands.common import console, handle_errors, progress_bars
from rag.config import RagError


def eval_ablation(
    sets: list[str] = typer.Option(
        None, "--set", help="docs, builtin, squad-open, hotpotqa (repeat for several; default all)."
    ),
    docs: list[Path] = typer.Option(
        None, "--docs", help="A documentation folder to index and ask (repeat, each with its --questions)."
    ),
    questions: list[Path] = typer.Option(None, "--questions", help="The JSONL question set of each --docs folder."),
    builtin: list[Path] = typer.Option(
        None, "--builtin", help="Built-in question sets (repeat; default the held-out fresh14 and fresh15 sets)."
    ),
    limit: int = typer.Option(100, min=1, help="SQuAD and HotpotQA questions."),
    threads: int = typer.Option(1, help="torch CPU threads."),
    out: Path = typer.Option(Path("results/ablation"), "--out", help="Folder for ablation.json and report.md."),
):
    """Each answer component turned off in turn (the answer step replayed on the same passages), on documentation
    folders, the built-in sets, SQuAD and HotpotQA."""
    _eval_ablation(sets, docs or [], questions or [], builtin, limit, threads, out)


@handle_errors
def _eval_ablation(sets, docs, questions, builtin, limit, threads, out):
    from rag.config import EVALSETS_DIR
    from rag.studies.ablation import SETS, ablate, report_lines

    if len(docs) != len(questions):
        raise RagError(f"{len(docs)} --docs folder(s) but {len(questions)} --questions file(s); give one of each")
    sets = tuple(sets or (SETS if docs else [s for s in SETS if s != "docs"]))
    builtin = builtin or [EVALSETS_DIR / f"builtin_fresh{n}_questions.jsonl" for n in (14, 15)]
    if threads:
        import torch

        torch.set_num_threads(threads)
    out.mkdir(parents=True, exist_ok=True)

    def done(name: str, table: dict) -> None:  # each finished set is kept, whatever happens to the later ones
        (out / f"{name}.partial.json").write_text(json.dumps(table, indent=2) + "\n")

    with progress_bars() as progress:
        result = ablate(
            sets, docs=list(zip(docs, questions)), builtin_files=builtin, limit=limit, progress=progress, done=done
        )
    (out / "ablation.json").write_text(json.dumps(result, indent=2) + "\n")
    (out / "report.md").write_text("\n".join(report_lines(result)))
    for partial in out.glob("*.partial.json"):
        partial.unlink()
    console.print("\n".join(report_lines(result)))
    console.print(f"[dim]wrote {out}/ablation.json, report.md[/]")
