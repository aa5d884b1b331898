"""`rag index build|list|info|verify`: build FAISS indexes at a chosen d, look at what is stored, and check it."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from rag.commands.common import (
    console,
    err_console,
    handle_errors,
    key_table,
    print_json,
    progress_bars,
    safe,
    warn,
)
from rag.commands.options import DEFAULTS, BackendOpt, CorpusOpt, DimOpt, EncoderOpt, IndexOpt, ReduceOpt
from rag.commands.scale import AddressOpt, EngineOpt, ShardsOpt, render_sharded
from rag.commands.stream import ChunkOpt, ResumeOpt, StreamOpt, render_streamed

app = typer.Typer(help="Build FAISS indexes at any dimension d, and inspect them.", no_args_is_help=True)


@app.command("build")
@handle_errors
def build_cmd(
    corpus: CorpusOpt = DEFAULTS.corpus,
    encoder: EncoderOpt = DEFAULTS.encoder,
    dim: DimOpt = DEFAULTS.dim,
    index: IndexOpt = DEFAULTS.index,
    reduce: ReduceOpt = DEFAULTS.reduce,
    backend: BackendOpt = DEFAULTS.backend,
    engine: str = EngineOpt,
    shards: int = ShardsOpt,
    address: Optional[str] = AddressOpt,
    stream: bool = StreamOpt,
    resume: bool = ResumeOpt,
    chunk: int = ChunkOpt,
    screen: bool = typer.Option(
        True,
        "--screen/--no-screen",
        help="Judge every passage with the injection screen now and store the verdicts, so that `rag ask` reads "
        "them instead of running the screen's models (--no-screen: a quicker build; each passage is judged when a "
        "question first retrieves it). Streamed and sharded builds do not screen.",
    ),
    prepare: bool = typer.Option(
        True,
        "--prepare/--no-prepare",
        help="Then make the query path's models the cache lacks (as `rag prepare` does, one line each) and check "
        "this index's probe set, so that the first question waits for neither.",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the manifest as JSON."),
):
    """Encode the corpus (cached at full width), reduce to d, build the index and store it atomically; build the
    BM25 cache, screen every passage for text addressed to a model and make the models a question needs."""
    from rag.index.spec import IndexSpec
    from rag.retrieve.build import BuildMethod, build_stored

    spec = IndexSpec(encoder, dim, index, reduce, backend)
    method = BuildMethod(engine, shards, address, stream, resume, chunk)
    with progress_bars(enabled=not as_json) as progress:  # the sharded build reports none: nothing is drawn
        manifest = build_stored(corpus, spec, method=method, progress=progress, on_wait=warn, on_warning=warn)
        if screen and not method.sharded and not (method.stream or method.resume):  # in-memory builds
            from rag.data.corpus import load_corpus
            from rag.screen.guard import screen_corpus

            manifest["screened"] = screen_corpus(load_corpus(corpus), progress)
            manifest["wall_s"] = round(manifest["wall_s"] + manifest["screened"]["s"], 2)  # the build's real time
    prepared = None
    if prepare and "path" in manifest and "encoder" in manifest:  # an in-memory build's manifest
        from rag.commands.prepare import run_prepare

        prepared = run_prepare(quiet=as_json, indexes=[manifest])
        manifest["prepared"] = prepared
    if as_json:
        return print_json(manifest)
    if "shard_vectors" in manifest:
        return render_sharded(manifest)
    if "streamed" in manifest:
        return render_streamed(manifest)
    if manifest.get("reused"):
        console.print(
            f"[green]reused[/] {safe(manifest['path'])}: another build of this index finished while this one "
            f"waited for its lock, from the same corpus content and options ({manifest['vectors']} vectors)"
        )
        return
    console.print(
        f"[green]built[/] {safe(manifest['path'])}: {manifest['vectors']} vectors, d={manifest['dim']}, "
        f"{manifest['kind']}, index {manifest['index_bytes']:,} bytes ({manifest['bytes_per_vector']:.1f} B/vector; "
        f"{manifest.get('bytes', 0):,} bytes with passages and reducer); {manifest['wall_s']:.1f} s in all "
        f"(the {manifest['kind']} index itself {manifest['build_s']:.2f} s on {manifest['device']})"
    )
    if screened := manifest.get("screened"):
        console.print(
            f"[green]screened[/] {screened['passages']} passages for text addressed to a model in {screened['s']:.1f} s: "
            f"{screened['flagged']} flagged (their sentences are withheld from answers; `rag ask` reads these verdicts)"
        )
    if prepared is not None:
        from rag.commands.prepare import report_prepared

        report_prepared(prepared)


@app.command("update")
@handle_errors
def update_cmd(
    corpus: CorpusOpt = DEFAULTS.corpus,
    screen: bool = typer.Option(
        True,
        "--screen/--no-screen",
        help="Judge the new and changed passages with the injection screen now and store the verdicts, as "
        "`rag index build` does (the others' verdicts are looked up; --no-screen: each is judged when a question "
        "first retrieves it).",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print one row per index as JSON."),
):
    """Bring every stored index of a corpus up to date after its documents changed: only new or changed passages
    are encoded (the rest come from the per-passage cache); each index is swapped in atomically. New passages are
    screened for text addressed to a model."""
    from rag.data.corpus import folder_warnings, load_corpus
    from rag.index.update import update_indexes

    c = load_corpus(corpus)
    for line in folder_warnings(c):
        warn(line)
    with progress_bars(enabled=not as_json) as progress:
        encoding = f"encoding new passages of {c.name}"
        rows = update_indexes(
            c, progress=(lambda done, total: progress(encoding, done, total)) if progress else None, on_wait=warn
        )
        if screen:
            from rag.screen.guard import screen_corpus

            screened = screen_corpus(c, progress)
            for r in rows:
                r["screened"] = screened
    if as_json:
        return print_json(rows)
    for r in rows:
        change = f"{r['added']} added, {r['changed']} changed, {r['removed']} removed, {r['unchanged']} unchanged"
        if r["status"] == "up to date":
            console.print(f"[green]up to date[/] {safe(r['index'])}: {change}", highlight=False)
        else:
            console.print(
                f"[green]updated[/] {safe(r['index'])}: {change}; {r['encoded']} passages encoded, "
                f"{r['vectors']} vectors, {r['seconds']:.1f} s",
                highlight=False,
            )
    if screen and rows:
        done = rows[0]["screened"]
        console.print(
            f"[green]screened[/] {done['passages']} passages in {done['s']:.1f} s (verdicts stored before are looked "
            f"up): {done['flagged']} flagged",
            highlight=False,
        )


@app.command("prune")
@handle_errors
def prune_cmd(
    keep: int = typer.Option(1, "--keep", help="Versions to keep of each index, the current one included."),
    as_json: bool = typer.Option(False, "--json", help="Machine-readable output."),
):
    """Remove old index versions (never the current one, nor one a running server holds) and cache entries that no
    stored index uses (embeddings and BM25 of other corpus contents: evaluations without an index re-encode)."""
    from rag.index.update import prune

    result = prune(keep, on_wait=warn)
    if as_json:
        return print_json(result)
    for path in result["versions_removed"] + result["cache_removed"]:
        console.print(f"removed {safe(path)}", highlight=False)
    console.print(
        f"[green]pruned[/] {len(result['versions_removed'])} old versions, {len(result['cache_removed'])} "
        f"cache folders and {result['passage_vectors_removed']} cached passage vectors; "
        f"freed {result['bytes_freed'] / 1e6:,.1f} MB",
        highlight=False,
    )


@app.command("list")
@handle_errors
def list_cmd(as_json: bool = typer.Option(False, "--json", help="Machine-readable output.")):
    """Every stored index with its corpus, encoder, d, kind and size (the index structure, and all its files)."""
    from rag.index.store import list_indexes

    rows = list_indexes()
    if as_json:
        return print_json(rows)
    if not rows:
        console.print("No indexes yet. Build one: rag index build --corpus builtin --encoder minilm --index flat")
        return
    from rich import box

    # corpus and name are what `rag index info corpus/name` takes; the name holds encoder, d, kind and reducer
    columns = [(name, True) for name in ("corpus", "name", "vectors", "index B", "files B", "device")]
    cells = [
        [
            safe(m.get("corpus_safe_name") or m["corpus"]),  # a folder corpus by its short name (--json: its path)
            safe(Path(m["path"]).name),
            safe(m["vectors"]),
            f"{m.get('index_bytes', 0):,}",
            f"{m['bytes']:,}",
            safe(m["device"]),
        ]
        for m in rows
    ]
    console.print(key_table(columns, cells, box=box.SIMPLE_HEAD))
    console.print(
        "[dim]name: <encoder>-d<d>-<kind>[-<reducer>] (rag index info <corpus>/<name>; --json gives paths); "
        "index B: the FAISS index alone (what `rag index build` reports); files B: every file of the version "
        "(index, passages, reducer, probe)[/]"
    )


def find_index(target: str) -> Path:
    """An index folder or link, or a name like scifact/minilm-d128-flat or minilm-d128-flat."""
    from rag.config import RagError, index_dir

    path = Path(target)
    if path.is_symlink() or (path / "manifest.json").exists():
        return path
    matches = [p for p in [index_dir() / target, *index_dir().glob(f"*/{target}")] if p.is_symlink() or p.is_dir()]
    if not matches:
        raise RagError(f"no index named '{target}' in {index_dir()}; see: rag index list")
    return matches[0]


@app.command("info")
@handle_errors
def info_cmd(
    target: str = typer.Argument(..., help="An index folder, or a name like scifact/minilm-d128-ivf-pq."),
    as_json: bool = typer.Option(False, "--json", help="Machine-readable output."),
):
    """Show one index's manifest after verifying it (seal, checksums, FAISS shape, reducer, passages)."""
    from rag.config import RagError
    from rag.index.store import verify_index

    path = find_index(target)
    report = verify_index(path)
    if report["status"] != "ok":
        raise RagError(report["problem"])
    manifest = {**report["manifest"], "path": str(path), "checksums": "ok"}
    if as_json:
        return print_json(manifest)
    for key, value in manifest.items():
        if key != "files":
            console.print(f"[bold]{safe(key)}[/]: {safe(value)}", highlight=False)
    console.print(f"[bold]files[/]: {safe(', '.join(manifest['files']))} (sha256 verified)", highlight=False)


@app.command("verify")
@handle_errors
def verify_cmd(
    target: str = typer.Argument(None, help="One index (folder or name); default: every stored index."),
    as_json: bool = typer.Option(False, "--json", help="Machine-readable output."),
):
    """Verify indexes fully: manifest seal, every file's sha256, FAISS d and count, reducer width, passage count.

    One line per index; exit code 1 when any is not whole."""
    from rag.index.store import index_links, verify_index

    reports = [verify_index(p) for p in ([find_index(target)] if target else index_links())]
    if as_json:
        print_json([{k: v for k, v in r.items() if k != "manifest"} for r in reports])
    else:
        if not reports:
            console.print("No indexes yet. Build one: rag index build --corpus builtin --encoder minilm --index flat")
        for r in reports:
            if r["status"] == "ok":
                console.print(
                    f"[green]ok[/] {safe(r['path'])} ({r['manifest'].get('vectors')} vectors)",
                    highlight=False,
                    soft_wrap=True,
                )
            else:
                err_console.print(f"[bold red]{r['status']}:[/] {safe(r['problem'])}", highlight=False, soft_wrap=True)
    if any(r["status"] != "ok" for r in reports):
        raise typer.Exit(1)
