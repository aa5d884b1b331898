"""What every command shares: consoles, one-line errors, progress bars and JSON output."""

from __future__ import annotations

import functools
import json
import sys
from contextlib import contextmanager

import typer
from rich.console import Console

from rag.config import RagError

console = Console()
err_console = Console(stderr=True)


def fail(message: str, code: int = 1):
    err_console.print(f"[bold red]error:[/] {message}", highlight=False, soft_wrap=True)
    raise typer.Exit(code)


def warn(message: str) -> None:
    err_console.print(f"[yellow]warning:[/] {message}", highlight=False, soft_wrap=True)


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


@contextmanager
def progress_bar(description: str, enabled: bool = True):
    """Yield a progress(done, total) callback that draws a rich bar on stderr from its first call on.

    Nothing is drawn when the work never reports progress (e.g. the index was already built) or when disabled.
    """
    if not enabled:
        yield None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                   TimeRemainingColumn(), console=err_console)
    task = None

    def update(done: int, total: int) -> None:
        nonlocal task
        if task is None:
            bar.start()
            task = bar.add_task(description, total=total)
        bar.update(task, completed=done, total=total)

    try:
        yield update
    finally:
        if task is not None:
            bar.stop()
