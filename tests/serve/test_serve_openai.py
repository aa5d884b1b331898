"""The OpenAI-compatible endpoints with the real `openai` client, and /ask streaming over server-sent events."""

from __future__ import annotations

import json

import httpx
import pytest
from serve_helpers import inprocess_server  # noqa: F401  (a fixture)

KEY = "test-key-0123456789abcdef"
QUESTION = "How many parameters does an embedding table with vocabulary V and dimension d hold?"


@pytest.fixture
def served(inprocess_server):
    return inprocess_server(api_key=KEY)


def test_openai_client_lists_models_and_answers(served):
    from openai import OpenAI

    client = OpenAI(base_url=served + "/v1", api_key=KEY)
    models = [m.id for m in client.models.list()]
    assert "rag-builtin-minilm-d384-flat-hybrid" in models and "rag" in models
    reply = client.chat.completions.create(
        model="rag-builtin-minilm-d384-flat-hybrid",
        messages=[{"role": "system", "content": "be brief"}, {"role": "user", "content": QUESTION}],
    )
    text = reply.choices[0].message.content
    assert "V·d" in text and "Sources:" in text and "[1]" in text
    assert reply.choices[0].finish_reason == "stop"


def test_openai_client_streams_steps_then_the_answer(served):
    from openai import OpenAI

    client = OpenAI(base_url=served + "/v1", api_key=KEY)
    stream = client.chat.completions.create(model="rag", stream=True, messages=[{"role": "user", "content": QUESTION}])
    chunks = list(stream)
    deltas = [c.choices[0].delta for c in chunks]
    thinking = [getattr(d, "reasoning_content", None) or (d.model_extra or {}).get("reasoning_content") for d in deltas]
    steps = [t for t in thinking if t]
    assert [s.split(":")[0] for s in steps][:3] == ["analyze", "retrieve", "grade"]
    answer = "".join(d.content or "" for d in deltas)
    assert "V·d" in answer and "Sources:" in answer
    assert chunks[-1].choices[0].finish_reason == "stop"


def test_openai_errors(served):
    from openai import AuthenticationError, NotFoundError, OpenAI

    with pytest.raises(AuthenticationError):
        OpenAI(base_url=served + "/v1", api_key="wrong-key").models.list()
    client = OpenAI(base_url=served + "/v1", api_key=KEY)
    with pytest.raises(NotFoundError, match="not served here"):
        client.chat.completions.create(model="gpt-4", messages=[{"role": "user", "content": "x"}])


def test_ask_streams_steps_then_the_same_json(served):
    headers = {"authorization": f"Bearer {KEY}", "accept": "text/event-stream"}
    body = {"question": QUESTION, "llm": "extractive"}
    events = []
    with httpx.stream("POST", served + "/ask", json=body, headers=headers, timeout=600) as response:
        assert response.status_code == 200 and response.headers["content-type"].startswith("text/event-stream")
        event = None
        for line in response.iter_lines():
            if line.startswith("event: "):
                event = line[7:]
            elif line.startswith("data: "):
                events.append((event, json.loads(line[6:])))
    names = [e for e, _ in events]
    assert names[-2:] == ["answer", "done"] and set(names[:-2]) == {"step"}
    answer = events[-2][1]
    assert [d["node"] for e, d in events if e == "step"] == [s["node"] for s in answer["steps"]]
    plain = httpx.post(served + "/ask", json=body, headers={"authorization": f"Bearer {KEY}"}, timeout=600).json()
    assert plain["answer"] == answer["answer"] and plain["citations"] == answer["citations"]
    assert set(plain) == set(answer) >= {"question", "answer", "citations", "steps", "timings", "warnings"}


def test_search_json_matches_the_cli(served, cli):
    remote = httpx.post(
        served + "/search", json={"question": QUESTION, "k": 3}, headers={"authorization": f"Bearer {KEY}"}, timeout=60
    ).json()
    local = json.loads(cli(["search", QUESTION, "-k", "3", "--json"]).stdout)
    assert set(remote) == set(local)
    assert [p["id"] for p in remote["passages"]] == [p["id"] for p in local["passages"]]
