"""The OpenAI-compatible endpoints, so that existing clients and chat UIs work unchanged.

GET /v1/models lists the served configurations as models, e.g. `rag-builtin-minilm-d384-flat-hybrid`
(rag-<corpus>-<index name>-<retriever>; `rag-<corpus>-bm25` for BM25 alone; `rag` is the default configuration).
POST /v1/chat/completions answers the last user message with the agent (extractive unless the operator allowed
another backend), its [n] citations listed under the answer. With `stream: true` it sends OpenAI chunks: the
agent's steps as they happen (as `reasoning_content`, what chat UIs show as thinking), then the answer, then
`data: [DONE]`. The full `rag ask --json` result rides along in the non-streaming response's `rag` field.
"""

from __future__ import annotations

import json
import time
import uuid
from typing import Literal

from fastapi import FastAPI, HTTPException, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import StreamingResponse
from pydantic import BaseModel, ConfigDict, Field
from starlette.background import BackgroundTask

from rag.agent.settings import DEFAULT_AGENT
from rag.config import RagError, check_question
from rag.index.spec import IndexSpec
from rag.index.store import list_indexes
from rag.retrieve import SPARSE_RETRIEVER, RetrievalSettings
from rag.serve.models import error_responses, sse_content
from rag.serve.service import Service

DEFAULT_MODEL = "rag"


class ContentPart(BaseModel):
    type: str
    text: str | None = None


class ChatMessage(BaseModel):
    role: Literal["system", "user", "assistant", "tool", "developer", "function"]
    content: str | list[ContentPart] | None = None


class ChatRequest(BaseModel):
    """OpenAI's chat request. Sampling options (temperature, top_p, max_tokens, ...) are accepted and ignored:
    the agent answers from passages."""

    model_config = ConfigDict(extra="allow")

    model: str = Field(DEFAULT_MODEL, description="a model id from GET /v1/models")
    messages: list[ChatMessage] = Field(..., min_length=1)
    stream: bool = False


def model_table(service: Service) -> dict[str, RetrievalSettings]:
    """Every servable configuration by model id: the default, each built index the policy allows, each corpus's
    BM25. Only what would be served now is listed: built (BM25 too, for hybrid), or buildable where the operator
    allows builds; a model that would answer 404 is not offered."""
    policy = service.policy
    table = {}
    if servable(service, RetrievalSettings()):
        table[DEFAULT_MODEL] = RetrievalSettings()
    for m in list_indexes():
        corpus, encoder = policy.served_name(m.get("corpus", "")), policy.served_encoder(m["encoder"])
        for retriever in ("hybrid", "dense"):
            settings = RetrievalSettings(
                corpus=corpus, encoder=encoder, dim=m["dim"], index=m["kind"], reduce=m["reduce"], retriever=retriever
            )
            if allowed(service, settings) and "/" not in encoder and servable(service, settings):
                name = IndexSpec.from_manifest(m).name
                table[f"rag-{corpus}-{name}-{retriever}"] = settings
    for corpus in policy.allowed("corpus"):
        settings = RetrievalSettings(corpus=corpus, retriever=SPARSE_RETRIEVER)
        if allowed(service, settings) and servable(service, settings):
            table[f"rag-{corpus}-{SPARSE_RETRIEVER}"] = settings
    return table


def servable(service: Service, settings: RetrievalSettings) -> bool:
    """Allowed by the policy, and built (or buildable under it): see ServePool.servable."""
    if not allowed(service, settings):
        return False
    try:
        real = service.policy.check_request(settings)
    except RagError:
        return False
    return service.pool.servable(real)


def served_configurations(service: Service) -> list[dict]:
    """What GET /config lists for the page's pickers: each servable configuration with its model id."""
    fields = ("corpus", "encoder", "dim", "index", "reduce", "retriever")
    return [{"model": name, **{f: getattr(s, f) for f in fields}} for name, s in model_table(service).items()]


def allowed(service: Service, settings: RetrievalSettings) -> bool:
    policy = service.policy
    try:
        for name in ("corpus", "encoder", "retriever") + (("index", "reduce", "dim") if settings.kind.dense else ()):
            policy.check(name, getattr(settings, name))
    except Exception:
        return False
    return True


def last_user_text(messages: list[ChatMessage]) -> str:
    for message in reversed(messages):
        if message.role == "user":
            content = message.content
            if isinstance(content, list):
                content = " ".join(p.text or "" for p in content if p.type == "text")
            if content and content.strip():
                return content
    raise HTTPException(422, 'messages: no user message with text; send {"role": "user", "content": "..."}')


def with_sources(result: dict) -> str:
    lines = [result["answer"]]
    if result["citations"]:
        lines += ["", "Sources:"] + [f"[{c['n']}] {c['title']} ({c['id']})" for c in result["citations"]]
    if result["warnings"]:
        lines += ["", "Warnings:"] + [f"- {w}" for w in result["warnings"]]
    return "\n".join(lines)


def step_text(step: dict) -> str:
    """One line per agent step for a chat UI's thinking pane."""
    details = {k: v for k, v in step.items() if k not in ("node", "ms", "hits")}
    if "hits" in step:
        details["hits"] = [h["title"] for h in step["hits"]]
    return f"{step['node']}: {json.dumps(details, ensure_ascii=False)}\n"


def add_openai_routes(app: FastAPI, service: Service) -> None:
    @app.get("/v1/models")
    def models() -> dict:
        """The served configurations as OpenAI models."""
        created = int(time.time())
        return {
            "object": "list",
            "data": [
                {"id": name, "object": "model", "created": created, "owned_by": "rag"} for name in model_table(service)
            ],
        }

    @app.post(
        "/v1/chat/completions",
        responses={
            200: {"content": sse_content("with stream: true, chat.completion.chunk objects as data, then [DONE]")},
            **error_responses(400, 403, 404, 413, 422, 503),
        },
    )
    async def chat(request: ChatRequest, http: Request):
        """Answer the last user message with the agent (OpenAI's chat completion format; `stream: true` for SSE)."""
        settings = (await run_in_threadpool(model_table, service)).get(request.model)
        if settings is None:
            raise HTTPException(404, f"model '{request.model}' is not served here; GET /v1/models lists the models")
        question = last_user_text(request.messages)
        try:
            question = check_question(question)
        except RagError as exc:
            raise HTTPException(422, f"messages: {exc}") from None
        agent = DEFAULT_AGENT  # the model id names the retrieval; the answer is the default agent's
        retriever = await run_in_threadpool(service.open, settings, agent.llm)
        run = service.agent(question, retriever, agent)
        chunk_id, created = f"chatcmpl-{uuid.uuid4().hex[:24]}", int(time.time())
        if not request.stream:
            result = await service.ask(run, http.is_disconnected)
            text = with_sources(result)
            return {
                "id": chunk_id,
                "object": "chat.completion",
                "created": created,
                "model": request.model,
                "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
                "usage": {
                    "prompt_tokens": len(question.split()),
                    "completion_tokens": len(text.split()),
                    "total_tokens": len(question.split()) + len(text.split()),
                },
                "citations": result["citations"],
                "rag": result,
            }

        def chunk(delta: dict, finish: str | None = None) -> str:
            body = {
                "id": chunk_id,
                "object": "chat.completion.chunk",
                "created": created,
                "model": request.model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
            }
            return f"data: {json.dumps(body, ensure_ascii=False)}\n\n"

        ticket = await service.slots.enter()  # a 503 when full, before the stream starts

        async def stream():
            yield chunk({"role": "assistant", "content": ""})
            async for event, data in service.events(run, ticket):
                if event == "step":
                    yield chunk({"reasoning_content": step_text(data)})
                elif event == "answer":
                    yield chunk({"content": with_sources(data)})
                else:
                    yield chunk({"content": f"error: {data['detail']}"})
            yield chunk({}, "stop")
            yield "data: [DONE]\n\n"

        return StreamingResponse(
            stream(),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-cache"},
            background=BackgroundTask(ticket.drop),  # the slot back if the stream never started
        )
