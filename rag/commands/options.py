"""Options shared by index build, search, ask and eval agent: one declaration, with help texts generated from the
vocabularies that rag.retrieve.RetrievalSettings validates against (nothing here lists a name of its own)."""

from __future__ import annotations

import functools
import inspect
import typing
from typing import Annotated, Optional

import typer

from rag.encoders import backend_help, encoder_help
from rag.index.kinds import INDEX_KINDS
from rag.reduce import REDUCERS
from rag.retrieve import FUSIONS, MAX_K, RETRIEVERS, RetrievalSettings


def choices_help(vocabulary: dict[str, str]) -> str:
    return "; ".join(f"{name}: {what}" for name, what in vocabulary.items())


DEFAULTS = RetrievalSettings()
CORPUS_HELP = "builtin, scifact, hotpotqa, squad, or a path to a folder of documents or a BEIR folder."
ENCODER_HELP = encoder_help()
DIM_HELP = "Embedding dimension d (1..encoder width; default: full width)."
INDEX_HELP = choices_help(INDEX_KINDS)
REDUCE_HELP = "How to reach d, fitted on the documents and saved with the index. " + choices_help(REDUCERS)
RETRIEVER_HELP = choices_help(RETRIEVERS)
FUSION_HELP = "Hybrid score fusion. " + choices_help(FUSIONS)

CorpusOpt = Annotated[str, typer.Option(help=CORPUS_HELP)]
EncoderOpt = Annotated[str, typer.Option(help=ENCODER_HELP)]
DimOpt = Annotated[Optional[int], typer.Option(help=DIM_HELP)]
IndexOpt = Annotated[str, typer.Option("--index", help=INDEX_HELP)]
ReduceOpt = Annotated[str, typer.Option(help=REDUCE_HELP)]
RetrieverOpt = Annotated[str, typer.Option(help=RETRIEVER_HELP)]
KOpt = Annotated[int, typer.Option("-k", "--k", help=f"How many passages (1..{MAX_K}).")]
FusionOpt = Annotated[str, typer.Option(help=FUSION_HELP)]
WeightOpt = Annotated[float, typer.Option(help="Weight of the dense side in hybrid fusion (0..1).")]
BackendOpt = Annotated[Optional[str], typer.Option(help="How the encoder runs. " + backend_help())]
WhereOpt = Annotated[
    Optional[str],
    typer.Option(
        help="Only passages whose source path matches a glob, e.g. 'source=docs/**/*.md' (k results still come back)."
    ),
]


NO_UPDATE_HELP = (
    "A folder whose files changed since its index was built is updated first (only the changed passages are "
    "encoded); --no-update refuses the stale index instead."
)
NoUpdateOpt = Annotated[bool, typer.Option("--no-update", help=NO_UPDATE_HELP)]

RETRIEVAL_OPTIONS = {  # option name -> (type with its typer.Option, default); the order --help shows
    "corpus": (CorpusOpt, DEFAULTS.corpus),
    "encoder": (EncoderOpt, DEFAULTS.encoder),
    "dim": (DimOpt, DEFAULTS.dim),
    "index": (IndexOpt, DEFAULTS.index),
    "reduce": (ReduceOpt, DEFAULTS.reduce),
    "retriever": (RetrieverOpt, DEFAULTS.retriever),
    "k": (KOpt, DEFAULTS.k),
    "fusion": (FusionOpt, DEFAULTS.fusion),
    "weight": (WeightOpt, DEFAULTS.weight),
    "where": (WhereOpt, DEFAULTS.where),
    "backend": (BackendOpt, DEFAULTS.backend),
}


def retrieval_options(command):
    """Give a command every retrieval option (declared once, above); it receives them as `settings`, an
    unvalidated RetrievalSettings (validate with .validated(), or send it to a server that validates it)."""
    hints = typing.get_type_hints(command, include_extras=True)  # resolved in the command's own module
    signature = inspect.signature(command)
    own = [
        p.replace(annotation=hints.get(name, p.annotation))
        for name, p in signature.parameters.items()
        if name != "settings"
    ]
    added = [
        inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation)
        for name, (annotation, default) in RETRIEVAL_OPTIONS.items()
    ]
    positional = [p for p in own if p.kind is not inspect.Parameter.KEYWORD_ONLY]
    keyword = [p for p in own if p.kind is inspect.Parameter.KEYWORD_ONLY]

    @functools.wraps(command)
    def wrapper(*args, **kwargs):
        chosen = {name: kwargs.pop(name) for name in RETRIEVAL_OPTIONS if name in kwargs}
        return command(*args, settings=RetrievalSettings(**chosen), **kwargs)

    wrapper.__signature__ = signature.replace(parameters=positional + added + keyword)
    wrapper.__annotations__ = {
        **{p.name: p.annotation for p in own},
        **{n: a for n, (a, _) in RETRIEVAL_OPTIONS.items()},
    }
    del wrapper.__wrapped__  # typer must read the new signature, not the wrapped one
    return wrapper
