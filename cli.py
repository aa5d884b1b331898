"""The `rag` command line: parses options, calls the `rag` library, renders with rich. No logic of its own.

Heavy libraries (torch, faiss, transformers, langgraph) are imported inside the commands, so `rag --help` stays fast.
Whatever goes wrong ends in one line on stderr and exit code 1 (`--debug` shows the traceback); every RagWarning
the library raises is printed once as one `warning:` line, every RagNote as one plain line.
"""

from __future__ import annotations

import os
import sys
import traceback
import warnings

import typer
from typer.core import TyperGroup, TyperOption

try:  # typer ≥ 0.2x carries its own copy of click; its exceptions are the ones it handles
    from typer._click.exceptions import ClickException
except ImportError:  # pragma: no cover - an older typer on the real click
    from click import ClickException

from rag.config import RagNote, RagWarning, runtime_environment

runtime_environment()  # before torch or faiss start their thread pools

from rag.commands import (  # noqa: E402
    ablation,
    advise,
    agent,
    bench,
    corpus,
    evaluate,
    index,
    lm,
    prepare,
    scale,
    search,
    serve,
    train,
)
from rag.commands.common import err_console, note, safe, warn  # noqa: E402


def one_line(exc: BaseException) -> str:
    """An exception as one printable line: its type, its message, no control characters or undecodable bytes."""
    message = " ".join(str(exc).split()) or "(no message)"
    message = message.encode("utf-8", "backslashreplace").decode("utf-8")
    return f"{type(exc).__name__}: {message}"[:500]


def flag_display_type(display_type_rich):
    """typer shows `<bool>` beside an on/off flag such as --json, as if it took a value (`--json true` is an error):
    flags show no placeholder."""

    def display(self, ctx):
        return None if self.is_flag else display_type_rich(self, ctx)

    return display


TyperOption.display_type_rich = flag_display_type(TyperOption.display_type_rich)


def usage_line(exc: ClickException) -> str:
    """A usage error as one line: the message and where help is (exit code 2, the convention, is kept)."""
    where = getattr(getattr(exc, "ctx", None), "command_path", "") or "rag"
    return f"{' '.join(exc.format_message().split())} (see {where} --help)"


def shows_help(exc: ClickException) -> bool:
    """`rag` or `rag index` alone: the help is the answer, shown as typer shows it."""
    return type(exc).__name__ == "NoArgsIsHelpError"


def quiet_broken_pipe() -> None:
    """The reader of our output went away (`rag index list | head -1`): point stdout at /dev/null so that the final
    flush cannot fail either, and stop without a word, exit code 1 (Python's recipe, and what rich does for help)."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    raise typer.Exit(1)


def rag_warnings_once(shown):
    """A warnings.showwarning that prints each distinct RagWarning once per command (the same index kind too small
    at three d is one line): RagNotes as plain lines, others as `warning:` lines; other warnings go to `shown`."""
    said: set[str] = set()

    def show(message, category, *args, **kwargs):
        if not issubclass(category, RagWarning):
            return shown(message, category, *args, **kwargs)
        line = str(message)
        if line not in said:
            said.add(line)
            (note if issubclass(category, RagNote) else warn)(line)

    return show


class RagGroup(TyperGroup):
    """The root group: RagWarnings become `warning:` lines (RagNotes plain lines), each said once, and no exception
    leaves as a traceback."""

    def make_context(self, info_name, args, parent=None, **extra):
        """The root's own options (`rag --bogus`): a usage error in one line too."""
        try:
            return super().make_context(info_name, args, parent=parent, **extra)
        except ClickException as exc:
            if shows_help(exc):
                raise
            err_console.print(f"[bold red]error:[/] {safe(usage_line(exc))}", highlight=False, soft_wrap=True)
            raise typer.Exit(exc.exit_code) from None

    def invoke(self, ctx):
        debug = bool(ctx.params.get("debug"))
        with warnings.catch_warnings():
            warnings.simplefilter("always", RagWarning)
            warnings.showwarning = rag_warnings_once(warnings.showwarning)
            try:
                return super().invoke(ctx)
            except ClickException as exc:  # a usage error: one line, not rich's box
                if shows_help(exc):
                    raise
                err_console.print(f"[bold red]error:[/] {safe(usage_line(exc))}", highlight=False, soft_wrap=True)
                raise typer.Exit(exc.exit_code) from None
            except BrokenPipeError:
                quiet_broken_pipe()
            except (typer.Exit, typer.Abort, SystemExit):
                raise
            except Exception as exc:  # noqa: BLE001 - the last line of defence
                if debug:
                    err_console.print(safe(traceback.format_exc()), highlight=False, soft_wrap=True)
                err_console.print(
                    f"[bold red]error:[/] {safe(one_line(exc))} (run with --debug for the traceback)",
                    highlight=False,
                    soft_wrap=True,
                )
                raise typer.Exit(1) from None


app = typer.Typer(
    name="rag",
    cls=RagGroup,
    help="Agentic RAG at any embedding dimension d: corpora, encoders, FAISS indexes, an agent, and the d studies.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


@app.callback()
def main(debug: bool = typer.Option(False, "--debug", help="On an unexpected error, print the full traceback.")):
    """Agentic RAG at any embedding dimension d: corpora, encoders, FAISS indexes, an agent, and the d studies."""


app.command("ask")(agent.ask)
app.command("advise")(advise.advise)
app.command("search")(search.search)
app.command("prepare")(prepare.prepare)
app.command("serve")(serve.serve)
app.add_typer(corpus.app, name="corpus")
app.add_typer(index.app, name="index")
app.add_typer(scale.shards_app, name="shards")
app.add_typer(lm.app, name="lm")

eval_app = typer.Typer(help="Evaluations: retrieval quality and cost against d, and the agent.", no_args_is_help=True)
eval_app.command("retrieval")(evaluate.retrieval)
eval_app.command("agent")(agent.eval_agent)
eval_app.command("answers")(evaluate.eval_answers)
eval_app.command("ablation")(ablation.eval_ablation)
app.add_typer(eval_app, name="eval")

train_app = typer.Typer(
    help="Training: the learned span reader, the injection screen and its verifier, and the multi-hop decision.",
    no_args_is_help=True,
)
train_app.command("reader")(train.train_reader)
train_app.command("screen")(train.train_screen)
train_app.command("screen-head")(train.train_screen_head)
train_app.command("screen-verifier")(train.train_screen_verifier)
train_app.command("hop")(train.train_hop)
train_app.command("abstain")(train.train_abstain)
train_app.command("sentences")(train.train_sentences)
app.add_typer(train_app, name="train")

bench_app = typer.Typer(
    help="Benchmarks: commands that print figures and ratios measured side by side.", no_args_is_help=True
)
bench_app.command("search")(bench.bench_search)
bench_app.command("serve")(serve.bench_serve)
bench_app.command("scale")(scale.bench_scale)
app.add_typer(bench_app, name="bench")

if __name__ == "__main__":
    app()
