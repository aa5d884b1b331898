"""The HTTP schema: strict request models (unknown fields and coerced types refused) and the response models.

Request fields are rag.retrieve.RetrievalSettings; their vocabularies come from where each is declared. Responses
are the same JSON as `rag search --json` and `rag ask --json`.
"""

from __future__ import annotations

from dataclasses import fields
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, create_model, field_validator

from rag.agent.settings import DEFAULT_AGENT, MAX_STEPS_LIMIT, AgentSettings
from rag.answer.llm import LLM_BACKENDS
from rag.config import MAX_QUESTION_CHARS, RagError, check_question
from rag.index.kinds import INDEX_KINDS
from rag.reduce import REDUCERS
from rag.retrieve import FUSIONS, MAX_K, RETRIEVERS, RetrievalSettings

DEFAULTS = RetrievalSettings()
STRICT = ConfigDict(extra="forbid", strict=True)


def vocabulary(names) -> object:
    """A Literal type of the names a field accepts, so OpenAPI lists them (names come from their one declaration)."""
    return Literal[tuple(names)]


class SettingsIn(BaseModel):
    """A question plus rag.retrieve.RetrievalSettings: which corpus, encoder, width d, index kind and retriever."""

    model_config = STRICT

    question: str = Field(
        ...,
        description=f"1 to {MAX_QUESTION_CHARS} characters, not only white space",
        examples=["What does the embedding dimension control?"],
        json_schema_extra={"pattern": r"\S"},
    )
    corpus: str = Field(DEFAULTS.corpus, max_length=200, description="a corpus the server allows (GET /config)")
    encoder: str = Field(DEFAULTS.encoder, max_length=200, description="encoder name, e.g. minilm (GET /config)")
    dim: int | None = Field(
        DEFAULTS.dim, ge=1, le=16384, description="reduced width d; null keeps the encoder's full width"
    )
    index: vocabulary(INDEX_KINDS) = Field(DEFAULTS.index, description="FAISS index kind")
    reduce: vocabulary(REDUCERS) = Field(DEFAULTS.reduce, description="how vectors are reduced to d")
    retriever: vocabulary(RETRIEVERS) = DEFAULTS.retriever
    k: int = Field(DEFAULTS.k, ge=1, le=MAX_K)
    fusion: vocabulary(FUSIONS) = DEFAULTS.fusion
    weight: float = Field(DEFAULTS.weight, ge=0.0, le=1.0, description="weight of the dense side in hybrid fusion")
    where: str | None = Field(
        DEFAULTS.where,
        max_length=500,
        examples=["source=docs/**/*.md"],
        description="filter on passage metadata: source=GLOB, e.g. source=docs/**/*.md",
        json_schema_extra={"pattern": r"^\s*source\s*=\s*\S"},
    )

    @field_validator("question")
    @classmethod
    def question_is_sane(cls, value: str) -> str:
        try:
            return check_question(value)
        except RagError as exc:
            raise ValueError(str(exc)) from None

    def settings(self) -> RetrievalSettings:
        names = {f.name for f in fields(RetrievalSettings)}
        return RetrievalSettings(**{k: v for k, v in self.model_dump().items() if k in names})


class SearchRequest(SettingsIn):
    pass


class AskRequest(SettingsIn):
    llm: vocabulary(LLM_BACKENDS) = Field(
        DEFAULT_AGENT.llm, description="answer backend; the server allows some (GET /config)"
    )
    max_steps: int = Field(
        DEFAULT_AGENT.max_steps, ge=1, le=MAX_STEPS_LIMIT, description="bound on the agent's retrieve/rewrite loop"
    )

    def agent_settings(self) -> AgentSettings:
        return AgentSettings(llm=self.llm, max_steps=self.max_steps).validated()


def with_every_setting(model: type[BaseModel]) -> type[BaseModel]:
    """The model plus any RetrievalSettings field it does not declare yet (same name and default, checked by
    RetrievalSettings.validated()), so a new retrieval setting reaches the service without a schema edit here."""
    missing = {
        f.name: (type(f.default) if f.default is not None else str | None, f.default)
        for f in fields(RetrievalSettings)
        if f.name not in model.model_fields
    }
    return create_model(model.__name__, __base__=model, **missing) if missing else model


SearchRequest = with_every_setting(SearchRequest)
AskRequest = with_every_setting(AskRequest)


class PassageOut(BaseModel):
    id: str
    title: str
    source: str
    score: float
    text: str


class SearchResponse(BaseModel):
    """`rag search --json`."""

    model_config = ConfigDict(extra="allow")

    question: str
    passages: list[PassageOut]
    corpus: str
    retriever: str
    encoder: str | None = None
    dim: int | None = None
    index: str | None = None
    reduce: str | None = None
    device: str
    timings_ms: dict[str, float]


class CitationOut(BaseModel):
    n: int
    id: str
    title: str
    score: float


class RetrievedOut(BaseModel):
    model_config = ConfigDict(extra="allow")

    id: str
    title: str
    score: float
    round: int
    via: str
    kept: bool


class SpanOut(BaseModel):
    """The reader's answer span: citation n, passage id, the text, its characters [start, end) in the passage."""

    n: int
    id: str
    text: str
    start: int
    end: int


class AskResponse(BaseModel):
    """`rag ask --json`: the answer with [n] citations, the agent's steps (one dict per node), timings and warnings."""

    model_config = ConfigDict(extra="allow")

    question: str
    answer: str
    citations: list[CitationOut]
    spans: list[SpanOut] = []
    steps: list[dict[str, Any]]
    timings: dict[str, float]
    warnings: list[str]
    mode: str
    sub_questions: list[str]
    rounds: int
    retrieved: list[RetrievedOut]
    abstained: bool = False  # the answer says the documents do not answer the question


class ErrorItem(BaseModel):
    loc: list[str | int]
    msg: str
    type: str


class ErrorOut(BaseModel):
    """Every error: `detail` is one line saying what went wrong and what to do; validation errors add `errors`."""

    detail: str
    errors: list[ErrorItem] | None = None


def sse_content(description: str) -> dict:
    """The OpenAPI content entry of a server-sent-event stream: each event is {event, data (one JSON text)}."""
    return {
        "text/event-stream": {
            "schema": {
                "type": "object",
                "description": description,
                "required": ["data"],
                "properties": {"event": {"type": "string"}, "data": {"type": "string"}, "id": {"type": "string"}},
            }
        }
    }


def error_responses(*codes: int) -> dict:
    """OpenAPI entries for the error statuses an endpoint can answer with (all ErrorOut)."""
    text = {
        400: "the body is not text (invalid UTF-8, lone surrogate)",
        401: "missing or wrong API key",
        403: "a value the operator does not serve",
        404: "unknown or not built",
        409: "index on disk is broken",
        413: "body over the limit",
        422: "invalid request",
        503: "busy or unavailable; retry later",
        408: "the body did not arrive within the body deadline",
        504: "the request took longer than the server's limit",
    }
    return {code: {"model": ErrorOut, "description": text[code]} for code in codes}


def one_line(errors) -> str:
    parts = []
    for error in errors:
        if error.get("type") == "json_invalid":
            parts.append('the request body is not valid JSON; send an object such as {"question": "..."}')
            continue
        where = ".".join(str(p) for p in error.get("loc", ()) if p != "body")
        message = str(error.get("msg", "invalid")).removeprefix("Value error, ")
        if error.get("type") == "extra_forbidden":
            message = "unknown field; see the schema at /docs"
        parts.append(f"{where}: {message}" if where else message)
    return "; ".join(parts) or "invalid request"


def plain(errors) -> list[dict]:
    return [
        {
            "loc": [p if isinstance(p, int) else str(p) for p in e.get("loc", ())],
            "msg": str(e.get("msg", "")),
            "type": str(e.get("type", "")),
        }
        for e in errors
    ]
