"""`rag index build --stream [--resume] [--chunk N]`: the options the streaming build adds (rag.index.stream_build,
run through rag.retrieve.build) and its line."""

from __future__ import annotations

import typer

from rag.commands.common import console, safe
from rag.retrieve.build import DEFAULT_BUILD

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
ChunkOpt = typer.Option(
    DEFAULT_BUILD.chunk, "--chunk", help="With --stream: passages per chunk (encoded, written, recorded)."
)


def render_streamed(manifest: dict) -> None:
    """The streamed build's line: the manifest and this run's figures (rag.index.stream_build)."""
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
