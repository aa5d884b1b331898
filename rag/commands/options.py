"""Options that several commands share (index build, search, ask, eval agent): one declaration, one help text."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

CORPUS_HELP = "builtin, scifact, hotpotqa, squad, or a path to a folder of .md/.txt files or a BEIR folder."
ENCODER_HELP = "minilm (384-d), smollm2-input (576-d, IDF-weighted input-table pooling), smollm2-input-mean, smollm2-input-wbm25, or lm:<checkpoint dir>."
DIM_HELP = "Embedding dimension d (1..encoder width; default: full width)."
INDEX_HELP = "flat, ivf-flat, ivf-pq, hnsw, sq8 or binary."
REDUCE_HELP = "How to reach d: pca, truncate or whiten (fitted on the documents, saved with the index)."
RETRIEVER_HELP = "dense, bm25 or hybrid (min-max fusion of dense and BM25; the best on SciFact)."

CorpusOpt = Annotated[str, typer.Option(help=CORPUS_HELP)]
EncoderOpt = Annotated[str, typer.Option(help=ENCODER_HELP)]
DimOpt = Annotated[Optional[int], typer.Option(help=DIM_HELP)]
IndexOpt = Annotated[str, typer.Option("--index", help=INDEX_HELP)]
ReduceOpt = Annotated[str, typer.Option(help=REDUCE_HELP)]
RetrieverOpt = Annotated[str, typer.Option(help=RETRIEVER_HELP)]
