"""`rag index build --stream [--resume] [--chunk N]`: the streaming build (rag.index.stream_build), and the options it adds."""

from __future__ import annotations

import typer

from rag.commands.common import console, handle_errors, print_json, progress_bars, safe

StreamOpt = typer.Option(
    False,
    "--stream",
    help="Read the corpus as a stream and encode it chunk by chunk into a "
    "memory-mapped file: bounded memory for corpora of any size (a BEIR folder's corpus.jsonl).",
)
ResumeOpt = typer.Option(
    False,
    "--resume",
    help="Go on with a killed --stream build from its last finished chunk "
    "(same corpus and settings; implies --stream).",
)
ChunkOpt = typer.Option(20_000, "--chunk", help="With --stream: passages per chunk (encoded, written, recorded).")


@handle_errors
def build_streamed_cmd(corpus: str, spec, chunk: int, resume: bool, as_json: bool) -> None:
    """Run rag.index.stream_build.stream_build with progress bars, then print the manifest and this run's figures."""
    from rag.index.stream_build import stream_build

    with progress_bars(enabled=not as_json) as progress:
        manifest = stream_build(corpus, spec, chunk=chunk, resume=resume, progress=progress)
    if as_json:
        return print_json(manifest)
    s = manifest["streamed"]
    resumed = f", resumed at row {manifest['resumed_from']:,}" if manifest["resumed_from"] else ""
    console.print(
        f"[green]built[/] {safe(manifest['path'])} as a stream: {manifest['vectors']:,} vectors, "
        f"d={manifest['dim']}, {manifest['kind']}, {manifest['index_bytes']:,} bytes; {s['chunks']} chunks of "
        f"{s['chunk']:,}{resumed}; encode {s['encode_s']:.1f} s, reducer fit {s['fit_s']:.1f} s, index "
        f"{manifest['build_s']:.1f} s; this run {manifest['run_s']:.1f} s, peak RSS "
        f"{manifest['peak_rss_mb'] or 0:,.0f} MB",
        highlight=False,
    )
