"""`rag index build|list|info`: build FAISS indexes at a chosen d and look at what is stored."""

from __future__ import annotations

from pathlib import Path

import typer

from rag.commands.common import console, handle_errors, print_json, progress_bar, safe, warn
from rag.commands.options import DEFAULTS, CorpusOpt, DimOpt, EncoderOpt, IndexOpt, ReduceOpt

app = typer.Typer(help="Build FAISS indexes at any dimension d, and inspect them.", no_args_is_help=True)

@app.command("build")
@handle_errors
def build_cmd(corpus: CorpusOpt = DEFAULTS.corpus,
              encoder: EncoderOpt = DEFAULTS.encoder,
              dim: DimOpt = DEFAULTS.dim,
              index: IndexOpt = DEFAULTS.index,
              reduce: ReduceOpt = DEFAULTS.reduce,
              as_json: bool = typer.Option(False, "--json", help="Print the manifest as JSON.")):
    """Encode the corpus (cached at full width), reduce to d, build the index and store it atomically."""
    from rag.corpus import load_corpus
    from rag.store import build_and_save, check_options

    check_options(encoder, dim, index, reduce)  # fail fast, before loading anything
    c = load_corpus(corpus)
    if c.invalid_utf8:
        warn(f"{c.invalid_utf8} documents were not valid UTF-8; bad bytes were replaced")
    with progress_bar(f"encoding {c.name} with {encoder}", enabled=not as_json) as progress:
        manifest = build_and_save(c, encoder, dim, index, reduce, progress=progress)
    manifest["invalid_utf8"] = c.invalid_utf8
    if as_json:
        return print_json(manifest)
    console.print(f"[green]built[/] {safe(manifest['path'])}: {manifest['vectors']} vectors, d={manifest['dim']}, "
                  f"{manifest['kind']}, {manifest['index_bytes']:,} bytes ({manifest['bytes_per_vector']:.1f} B/vector), "
                  f"{manifest['build_s']:.2f} s on {manifest['device']}")


@app.command("list")
@handle_errors
def list_cmd(as_json: bool = typer.Option(False, "--json", help="Machine-readable output.")):
    """Every stored index with its corpus, encoder, d, kind and size."""
    from rich.table import Table

    from rag.store import list_indexes

    rows = list_indexes()
    if as_json:
        return print_json(rows)
    if not rows:
        console.print("No indexes yet. Build one: rag index build --corpus builtin --encoder minilm --index flat")
        return
    table = Table("corpus", "encoder", "d", "kind", "reduce", "vectors", "bytes", "device", "path")
    for m in rows:
        table.add_row(*(safe(m[key]) for key in ("corpus", "encoder", "dim", "kind", "reduce", "vectors")),
                      f"{m['bytes']:,}", safe(m["device"]), safe(m["path"]))
    console.print(table)


@app.command("info")
@handle_errors
def info_cmd(target: str = typer.Argument(..., help="An index folder, or a name like scifact/minilm-d128-ivf-pq."),
             as_json: bool = typer.Option(False, "--json", help="Machine-readable output.")):
    """Show one index's manifest and verify its checksums."""
    from rag.config import RagError, index_dir
    from rag.store import read_manifest, verify_checksums

    path = Path(target)
    if not (path / "manifest.json").exists():
        matches = [p for p in index_dir().glob(f"*/{target}") if (p / "manifest.json").exists()]
        matches += [p for p in [index_dir() / target] if (p / "manifest.json").exists()]
        if not matches:
            raise RagError(f"no index named '{target}' in {index_dir()}; see: rag index list")
        path = matches[0]
    manifest = read_manifest(path.resolve())
    verify_checksums(path.resolve(), manifest, "rag index build ...")
    manifest = {**manifest, "path": str(path), "checksums": "ok"}
    if as_json:
        return print_json(manifest)
    for key, value in manifest.items():
        if key != "files":
            console.print(f"[bold]{safe(key)}[/]: {safe(value)}", highlight=False)
    console.print(f"[bold]files[/]: {safe(', '.join(manifest['files']))} (sha256 verified)", highlight=False)
