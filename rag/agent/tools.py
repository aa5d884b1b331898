"""Agent tools: a langchain-core retriever over rag.retrieve, and the title linker for entity lookups."""

from __future__ import annotations

import re
from typing import Any


def make_langchain_retriever(retriever, k: int = 5, search_kwargs: dict | None = None):
    """Wrap a retriever (rag.retrieve.Retriever or rag.api.Searcher) as a langchain-core BaseRetriever.

    search_kwargs ({"k": n, "where": "source=GLOB"}) are the defaults of every call; `invoke(query, k=1)` and
    `invoke(query, where=...)` override them for one call, as LangChain's standard retriever tests expect."""
    from dataclasses import replace

    from langchain_core.documents import Document
    from langchain_core.retrievers import BaseRetriever

    class RagRetriever(BaseRetriever):
        """langchain-core adapter: each hit becomes a Document with id, title, source, score and the passage's
        metadata (heading, page, mtime where it has them)."""

        inner: Any
        k: int = 5
        search_kwargs: dict = {}

        def _get_relevant_documents(self, query: str, *, run_manager=None, **kwargs) -> list[Document]:
            options = {"k": self.k, **self.search_kwargs, **kwargs}
            k, where = options.pop("k"), options.pop("where", None)
            if options:
                from rag.config import RagError

                raise RagError(f"unknown search option(s) {', '.join(options)}; use k and where")
            inner = self.inner
            if where is not None and hasattr(inner, "settings") and not hasattr(inner, "retriever"):
                inner = replace(inner, settings=replace(inner.settings, where=where), timings={})  # a plain Retriever
                where = None
            hits = inner.search(query, k=k, **({"where": where} if where is not None else {}))
            return [
                Document(
                    page_content=h.passage.text,
                    id=h.passage.id,
                    metadata={k_: v for k_, v in h.as_dict().items() if k_ != "text"},
                )
                for h in hits
            ]

    return RagRetriever(inner=retriever, k=(search_kwargs or {}).get("k", k), search_kwargs=dict(search_kwargs or {}))


class TitleLinker:
    """Entity lookup: the passages whose title (without a trailing "(...)" qualifier) is mentioned in a text.

    This follows the links a reader would: a first-hop passage that names "Shirley Temple" leads to the passage
    titled "Shirley Temple". Matching is exact on lower-cased word spans that start with a capital or a digit,
    longest span first, up to MAX_WORDS words.
    """

    MAX_WORDS = 8
    _WORD = re.compile(r"[\w'’.&-]+")

    def __init__(self, passages):
        self.by_title: dict[str, list[str]] = {}
        for p in passages:
            base = re.sub(r"\s*\(.*?\)\s*$", "", p.title or "").strip().lower()
            if base and len(base) > 2 and base.split()[0] not in _COMMON_STARTS:
                self.by_title.setdefault(base, []).append(p.id)

    def mentions(self, text: str, exclude=()) -> list[str]:
        toks = [(m.group(0), m.start()) for m in self._WORD.finditer(text)]
        out: dict[str, None] = {}
        i = 0
        while i < len(toks):
            width = 1
            if toks[i][0][0].isupper() or toks[i][0][0].isdigit():
                for n in range(min(self.MAX_WORDS, len(toks) - i), 0, -1):
                    end = toks[i + n - 1][1] + len(toks[i + n - 1][0])
                    span = text[toks[i][1] : end].lower().rstrip(".")
                    if span in self.by_title:
                        for pid in self.by_title[span]:
                            if pid not in exclude:
                                out.setdefault(pid, None)
                        width = n
                        break
            i += width
        return list(out)


_COMMON_STARTS = frozenset({"what", "how", "which", "who", "when", "where", "why"})
_LINKERS: dict[str, TitleLinker] = {}


def title_linker(corpus) -> TitleLinker:
    """A TitleLinker per corpus content, built once per process."""
    key = corpus.content_hash
    if key not in _LINKERS:
        _LINKERS[key] = TitleLinker(corpus.passages)
    return _LINKERS[key]
