"""What every command shares: the consoles, safe text, one-line errors, progress and JSON output."""

from __future__ import annotations

import functools
import json
import sys
import time
from contextlib import contextmanager

import typer
from rich.console import Console
from rich.markup import escape

from rag.config import RagError, escape_controls, strip_controls

console = Console()
err_console = Console(stderr=True)


def safe(text) -> str:
    """User or document text made safe to print: terminal escape sequences and control characters removed,
    rich markup escaped (so `[x]`, `[/b]` and `[1]` print as written)."""
    return escape(strip_controls(str(text)))


def safe_name(name) -> str:
    """A file name, id or title as one printable line: every control character (newline included) shown as an
    escape, rich markup escaped."""
    return escape(escape_controls(str(name)))


def fail(message: str, code: int = 1):
    err_console.print(f"[bold red]error:[/] {safe(message)}", highlight=False, soft_wrap=True)
    raise typer.Exit(code)


def warn(message: str) -> None:
    """Something the user should act on, as one `warning:` line on stderr."""
    err_console.print(f"[yellow]warning:[/] {safe(message)}", highlight=False, soft_wrap=True)


def note(message: str) -> None:
    """News that asks nothing of the user, as one plain line on stderr (no label)."""
    err_console.print(safe(message), highlight=False, soft_wrap=True)


def handle_errors(func):
    """Turn RagError (bad input, missing data, refused index) into a one-line error and exit code 1."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        try:
            return func(*args, **kwargs)
        except RagError as e:
            fail(str(e))
        except MemoryError:
            fail("out of memory; try a smaller --dim, a smaller corpus or a smaller batch")

    return wrapper


def print_json(obj) -> None:
    sys.stdout.write(json.dumps(obj, indent=2, default=str) + "\n")
    sys.stdout.flush()


class PlainProgress:
    """Progress for logs (stderr is not a terminal): one plain line when a stage starts, every 25%, and at its end."""

    def __init__(self):
        self.started: dict[str, float] = {}
        self.shown: dict[str, int] = {}

    def __call__(self, name: str, done: int, total: int) -> None:
        now = time.monotonic()
        if name not in self.started:
            self.started[name], self.shown[name] = now, -1
        quarter = 4 * done // max(total, 1)
        if quarter > self.shown[name]:
            self.shown[name] = quarter
            elapsed = now - self.started[name]
            err_console.print(f"{safe(name)}: {done:,}/{total:,} ({elapsed:.1f} s)", highlight=False)


@contextmanager
def progress_bars(enabled: bool = True):
    """Yield a progress(name, done, total) callback: one rich bar per name on a terminal, plain lines in logs.

    Nothing is drawn for work that never reports progress, or when disabled.
    """
    if not enabled:
        yield None
        return
    if not err_console.is_terminal:
        yield PlainProgress()
        return
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    bar = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=err_console,
    )
    tasks: dict[str, int] = {}

    def update(name: str, done: int, total: int) -> None:
        if not tasks:
            bar.start()
        if name not in tasks:
            tasks[name] = bar.add_task(safe(name), total=total)
        bar.update(tasks[name], completed=done, total=total)

    try:
        yield update
    finally:
        if tasks:
            bar.stop()


@contextmanager
def progress_bar(description: str, enabled: bool = True):
    """Yield a progress(done, total) callback for one stage (see progress_bars)."""
    with progress_bars(enabled) as bars:
        yield (lambda done, total: bars(description, done, total)) if bars else None


def key_table(columns: list[tuple[str, bool]], rows: list[list[str]], **options):
    """A rich Table whose key columns (True: names, d, kinds, counts) stay whole at any width, down to 80 columns;
    the other columns (paths, notes) fold onto more lines instead of being cut with an ellipsis. A key column whose
    cells run over 24 characters (a folder corpus's long name) folds too, so that the short ones keep their room."""
    from rich.table import Table

    table = Table(**options)
    for i, (name, key) in enumerate(columns):
        if key:
            width = max([len(name)] + [len(str(row[i])) for row in rows])
            long = width > 24
            table.add_column(name, no_wrap=not long, min_width=12 if long else width, overflow="fold")
        else:
            table.add_column(name, overflow="fold")
    for row in rows:
        table.add_row(*row)
    return table
