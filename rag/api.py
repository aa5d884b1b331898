"""The Python API: search and ask over any corpus from your own code (the README's "Python API" section).

    import rag
    docs = rag.open_retriever("path/to/docs")                 # builds the index on first use
    for hit in docs.search("how do I install it?", k=3, where="source=guide/**/*.md"):
        print(hit.score, hit.passage.source, hit.passage.title)
    result = rag.ask("how do I install it?", corpus="path/to/docs")    # the dict `rag ask --json` prints
    lc = rag.as_langchain_retriever(corpus="path/to/docs", search_kwargs={"k": 3})

Every keyword beyond the corpus is a rag.retrieve.RetrievalSettings field (encoder, dim, index, reduce, retriever,
k, fusion, weight, where) and is validated the same way as the CLI's options: a RagError names a bad one.
"""

from __future__ import annotations

import difflib
from dataclasses import fields, replace

from rag.agent.settings import DEFAULT_AGENT, AgentSettings
from rag.config import RagError, check_question
from rag.retrieve import Hit, RetrievalSettings
from rag.retrieve import open_retriever as pooled_retriever

__all__ = ["Searcher", "open_retriever", "ask", "as_langchain_retriever"]


def retrieval_settings(corpus: str, settings: dict) -> RetrievalSettings:
    """RetrievalSettings from keywords; an unknown keyword is a RagError that lists the accepted names and suggests
    the closest (`dimension` -> `dim`), not a TypeError from the dataclass."""
    accepted = [f.name for f in fields(RetrievalSettings) if f.name != "corpus"]
    for name in settings:
        if name not in accepted:
            close = [a for a in accepted if len(a) > 1 and (name.startswith(a) or a.startswith(name))]
            close = close or difflib.get_close_matches(name, accepted, n=1, cutoff=0.5)
            hint = f"did you mean {close[0]}? " if close else ""
            raise RagError(f"unknown setting '{name}'; {hint}accepted: {', '.join(accepted)}")
    return RetrievalSettings(corpus=str(corpus), **settings)


class Searcher:
    """Searches one corpus with fixed settings; k and where can change per call. Each call goes through the shared
    retriever pool, so an index rebuilt on disk (rag index update) is picked up without reopening."""

    def __init__(self, settings: RetrievalSettings):
        self.settings = settings.validated()

    def search(self, query: str, k: int | None = None, where: str | None = None) -> list[Hit]:
        """The top-k hits (each with .passage and .score; .as_dict() for JSON). where: e.g. 'source=docs/**/*.md'."""
        settings = replace(
            self.settings, k=self.settings.k if k is None else k, where=self.settings.where if where is None else where
        ).validated()
        return pooled_retriever(settings).search(check_question(query))

    @property
    def retriever(self):
        """The open rag.retrieve.Retriever behind this searcher (its corpus, passages and timings)."""
        return pooled_retriever(self.settings)

    def __repr__(self) -> str:
        return f"Searcher({self.settings!r})"


def open_retriever(corpus: str = "builtin", **settings) -> Searcher:
    """A Searcher over a corpus (builtin, scifact, hotpotqa, squad, a folder or a BEIR folder); the index is loaded
    now, and built first if it is missing."""
    searcher = Searcher(retrieval_settings(corpus, settings))
    _ = searcher.retriever  # open (or build) now, so that errors surface here and the first search is fast
    return searcher


def ask(
    question: str,
    corpus: str = "builtin",
    *,
    llm: str = DEFAULT_AGENT.llm,
    max_steps: int = DEFAULT_AGENT.max_steps,
    **settings,
) -> dict:
    """Answer with the agent: the same dict as `rag ask --json` ({question, answer, citations, steps, timings, ...})."""
    from rag.agent import run_agent

    agent = AgentSettings(llm=llm, max_steps=max_steps).validated()
    validated = retrieval_settings(corpus, settings).validated()
    return run_agent(check_question(question), validated, agent)


def as_langchain_retriever(corpus: str = "builtin", search_kwargs: dict | None = None, **settings):
    """A langchain-core BaseRetriever over a corpus. search_kwargs: {"k": n, "where": "source=GLOB"}, the defaults
    of every invoke; `retriever.invoke(query, k=1)` overrides them for one call."""
    from rag.agent.tools import make_langchain_retriever

    return make_langchain_retriever(open_retriever(corpus, **settings), search_kwargs=search_kwargs)
