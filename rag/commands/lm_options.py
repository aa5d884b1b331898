"""Options of the `rag lm` commands, each declared once with its help and bounds. Defaults come from the settings
dataclasses of rag.lm (MODEL, TRAIN, CONVERGE, GRID below), vocabularies from the tuples those settings check
against; a command lists the aliases it takes and builds its TrainConfig with one call (`with_config`)."""

from __future__ import annotations

import functools
import inspect
import typing
from typing import Annotated, Optional

import typer

from rag.lm.isoflop import MIN_HEAD, GridSettings
from rag.lm.runtime import PRECISIONS
from rag.lm.settings import OPTION_FIELDS, POSITIONS, ConvergeSettings, GPTConfig, TrainConfig, training_config

MODEL, TRAIN, CONVERGE, GRID = GPTConfig(), TrainConfig(), ConvergeSettings(), GridSettings()


def one_of(names) -> str:
    return ", ".join(names[:-1]) + " or " + names[-1]


CORPUS_HELP = (
    "wiki-lm (in RAG_DATA_DIR), wikitext-2 (downloaded if missing), or a folder with wiki.{train,valid,test}.raw"
)
PRECISION_HELP = "auto (GPU: bf16; AMX CPU: bf16 from d=256, bf16 head below), fp32, bf16, bf16-head."
INIT_HELP = f"gpt2: weights ~ N(0, {MODEL.init_std:g}); scaled: N(0, 1/sqrt(d))."

# The model's shape (GPTConfig).
CorpusOpt = Annotated[str, typer.Option(help=CORPUS_HELP)]
DimOpt = Annotated[int, typer.Option(min=1, help="Embedding dimension d.")]
DimsOpt = Annotated[str, typer.Option(help="Comma-separated d.")]
LayersOpt = Annotated[int, typer.Option(min=1, help="Transformer blocks.")]
HeadsOpt = Annotated[int, typer.Option(min=1, help="Attention heads per block.")]
VocabOpt = Annotated[int, typer.Option(min=257, max=65535, help="BPE vocabulary size V.")]
ContextOpt = Annotated[int, typer.Option(min=2, help="Context length T.")]
TieOpt = Annotated[bool, typer.Option("--tie/--no-tie", help="Tie the output head to the input embedding.")]
PosOpt = Annotated[str, typer.Option(help=one_of(POSITIONS) + ".")]
InitOpt = Annotated[str, typer.Option(help=INIT_HELP)]

# One training run (TrainConfig).
BatchOpt = Annotated[int, typer.Option(min=1, help="Sequences per training step.")]
LrOpt = Annotated[Optional[float], typer.Option(help="Peak LR (default 2e-3·sqrt(128/d)).")]
SeedOpt = Annotated[int, typer.Option(help="Random seed.")]
ThreadsOpt = Annotated[Optional[int], typer.Option(min=1, help="torch threads (default: all).")]
PrecisionOpt = Annotated[str, typer.Option(help=PRECISION_HELP)]
CompileOpt = Annotated[str, typer.Option(help="torch.compile: auto (GPU only), on, off.")]
EvalTokensOpt = Annotated[
    int, typer.Option(min=0, help="Valid/test tokens scored at the end of each run (0: whole split).")
]
SlicesOpt = Annotated[
    int, typer.Option(min=1, help="Validation points and checkpoints per run (at least one per epoch).")
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print the result as JSON.")]

# The grids (GridSettings): one precision for every d, every run in its own process.
GridHeadsOpt = Annotated[int, typer.Option(min=1, help=f"Heads (fewer where d/heads < {MIN_HEAD}).")]
GridPrecisionOpt = Annotated[
    str, typer.Option(help=one_of([p for p in PRECISIONS if p != "auto"]) + ": one for every d.")
]
GridEvalTokensOpt = Annotated[int, typer.Option(min=256, help="Valid/test targets scored per run.")]
GridSlicesOpt = Annotated[int, typer.Option(min=1, help="Validation checkpoints per run (the best is scored).")]
RunThreadsOpt = Annotated[int, typer.Option(min=1, help="torch threads per run.")]
ParallelOpt = Annotated[int, typer.Option(min=1, help="Runs at a time (worker processes).")]
SeedsOpt = Annotated[str, typer.Option(help="Comma-separated seeds (each (budget, d) once per seed).")]
KnOrdersOpt = Annotated[str, typer.Option(help="Modified Kneser-Ney orders scored on the same targets ('' for none).")]


def with_config(command):
    """Hand the command `config`: config(**fields) builds a TrainConfig (rag.lm.settings.training_config) from the
    command's options named in OPTION_FIELDS, the keyword fields given overriding them. `config` is no option."""
    hints = typing.get_type_hints(command, include_extras=True)  # resolved in the command's own module
    signature = inspect.signature(command)
    own = [p.replace(annotation=hints.get(n, p.annotation)) for n, p in signature.parameters.items() if n != "config"]

    @functools.wraps(command)
    def wrapper(**kwargs):
        chosen = {name: value for name, value in kwargs.items() if name in OPTION_FIELDS}
        return command(config=functools.partial(training_config, **chosen), **kwargs)

    wrapper.__signature__ = signature.replace(parameters=own)
    wrapper.__annotations__ = {p.name: p.annotation for p in own}
    del wrapper.__wrapped__  # typer must read the new signature, not the wrapped one
    return wrapper
