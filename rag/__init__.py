"""rag: agentic retrieval at any embedding dimension d.

Stages (one module each): corpus → encoders → index → retrieve → agent; evaluate and lm study d.
The Python API (rag.api: open_retriever, ask, as_langchain_retriever) is imported on first use, so that
`import rag` stays light.
"""

from rag.config import VERSION as __version__  # noqa: F401  (rag.__version__)

__all__ = ["open_retriever", "ask", "as_langchain_retriever"]


def __getattr__(name: str):
    if name in __all__:
        from rag import api

        return getattr(api, name)
    raise AttributeError(f"module 'rag' has no attribute {name!r}")
