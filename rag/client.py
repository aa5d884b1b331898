"""HTTP client for a running `rag serve`: what `rag ask --server URL` calls instead of loading models."""

from __future__ import annotations

import httpx

from rag.config import RagError


def _post(url: str, path: str, payload: dict, timeout: float) -> dict:
    endpoint = url.rstrip("/") + path
    try:
        response = httpx.post(endpoint, json=payload, timeout=timeout)
    except httpx.TimeoutException:
        raise RagError(f"the server at {url} did not answer within {timeout:g} s; raise --timeout or check the server") from None
    except httpx.HTTPError as exc:
        raise RagError(f"cannot reach the server at {url} ({exc.__class__.__name__}); start it with `rag serve` or fix --server") from None
    if response.status_code >= 400:
        raise RagError(f"server refused the request ({response.status_code}): {_detail(response)}")
    try:
        return response.json()
    except ValueError:
        raise RagError(f"the server at {url} sent a reply that is not JSON; is {url} a `rag serve` address?") from None


def _detail(response: httpx.Response) -> str:
    try:
        detail = response.json().get("detail")
    except (ValueError, AttributeError):
        detail = None
    return str(detail) if detail else response.text[:200]


def ask_remote(url: str, payload: dict, timeout: float = 300.0) -> dict:
    """POST payload ({question, corpus?, encoder?, dim?, index?, llm?, max_steps?}) to URL/ask; the same dict as `ask --json`.

    Raises RagError with the server's message on 4xx/5xx, and when the server cannot be reached.
    """
    return _post(url, "/ask", {key: value for key, value in payload.items() if value is not None}, timeout)


def search_remote(url: str, payload: dict, timeout: float = 60.0) -> dict:
    """POST payload ({question, corpus?, encoder?, dim?, index?, retriever?, k?}) to URL/search."""
    return _post(url, "/search", {key: value for key, value in payload.items() if value is not None}, timeout)
