"""Options shared by index build, search, ask and eval agent: one declaration, with help texts generated from the
vocabularies that rag.retrieve.RetrievalSettings validates against (nothing here lists a name of its own)."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from rag.encoders import encoder_help
from rag.index import INDEX_KINDS
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


def settings_from_options(corpus: str, encoder: str, dim: int | None, index: str, reduce: str, retriever: str,
                          k: int = DEFAULTS.k, fusion: str = DEFAULTS.fusion,
                          weight: float = DEFAULTS.weight) -> RetrievalSettings:
    """The validated settings for a command's options (a RagError names the bad option and its valid values)."""
    return RetrievalSettings(corpus=corpus, encoder=encoder, dim=dim, index=index, reduce=reduce,
                             retriever=retriever, k=k, fusion=fusion, weight=weight).validated()
