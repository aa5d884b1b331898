"""HTTP client for a running `rag serve`: what `rag ask --server URL` calls instead of loading models."""

from __future__ import annotations

import os

import httpx

from rag.agent.settings import DEFAULT_AGENT, AgentSettings
from rag.config import RagError
from rag.retrieve import RetrievalSettings


def post(url: str, path: str, payload: dict, timeout: float) -> dict:
    endpoint = url.rstrip("/") + path
    try:
        response = httpx.post(endpoint, json=payload, timeout=timeout, headers=auth_headers())
    except httpx.TimeoutException:
        raise RagError(
            f"the server at {url} did not answer within {timeout:g} s; raise --timeout or check the server"
        ) from None
    except httpx.HTTPError as exc:
        raise RagError(
            f"cannot reach the server at {url} ({exc.__class__.__name__}); start it with `rag serve` or fix --server"
        ) from None
    if response.status_code >= 400:
        raise RagError(f"server refused the request ({response.status_code}): {error_detail(response)}")
    try:
        return response.json()
    except ValueError:
        raise RagError(f"the server at {url} sent a reply that is not JSON; is {url} a `rag serve` address?") from None


def auth_headers() -> dict:
    """`Authorization: Bearer $RAG_API_KEY` when the key is set (a server started with a key needs it)."""
    key = os.environ.get("RAG_API_KEY", "").strip()
    return {"Authorization": f"Bearer {key}"} if key else {}


def error_detail(response: httpx.Response) -> str:
    try:
        detail = response.json().get("detail")
    except (ValueError, AttributeError):
        detail = None
    return str(detail) if detail else response.text[:200]


def request_body(question: str, settings: RetrievalSettings, **extra) -> dict:
    """Every retrieval setting, so the server answers with exactly what the user chose (dim None = full width)."""
    return {"question": question, **settings.as_dict(), **extra}


def ask_remote(
    url: str,
    question: str,
    settings: RetrievalSettings,
    agent: AgentSettings = DEFAULT_AGENT,
    *,
    timeout: float = 300.0,
) -> dict:
    """POST to URL/ask; the same dict as `rag ask --json`. A RagError carries the server's message on 4xx/5xx."""
    return post(url, "/ask", request_body(question, settings, llm=agent.llm, max_steps=agent.max_steps), timeout)


def search_remote(url: str, question: str, settings: RetrievalSettings, timeout: float = 60.0) -> dict:
    """POST to URL/search; the same dict as `rag search --json`."""
    return post(url, "/search", request_body(question, settings), timeout)
