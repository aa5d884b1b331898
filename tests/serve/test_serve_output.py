"""What the API sends back carries no server detail and no terminal control: a 409 names a folder corpus by its
served name only, and document text reaches clients without ESC/OSC sequences (as the CLI prints it)."""

from __future__ import annotations

import json

import httpx
from serve_helpers import inprocess_server  # noqa: F401  (a fixture)

ESC_TEXT = (
    "The kiwi \x1b[31mis a flightless\x1b[0m bird \x1b]8;;https://evil.example\x07from New Zealand\x1b]8;;\x07. "
    "\x1b]0;owned\x1b\\It lays \x1b[2Jlarge eggs\x07 and \x9b31m sleeps by day.\n"
)


def test_a_409_names_the_served_corpus_not_its_folder(inprocess_server, tmp_path, index_dir):
    folder = tmp_path / "secret-project-folder"
    folder.mkdir()
    (folder / "kiwi.md").write_text("# Kiwi\n\nThe kiwi is a flightless bird from New Zealand.\n")
    body = {"question": "flightless bird", "corpus": "notes", "retriever": "dense"}
    built = inprocess_server(warm=[], corpora=[f"notes={folder}"], build_missing=True)
    assert httpx.post(built + "/search", json=body, timeout=300).status_code == 200
    for faiss_file in index_dir.rglob("index.faiss"):
        faiss_file.write_bytes(b"not an index")
    url = inprocess_server(warm=[], corpora=[f"notes={folder}"])  # a fresh pool: opens the broken files
    response = httpx.post(url + "/search", json=body, timeout=300)
    assert response.status_code == 409, response.text
    detail = response.json()["detail"]
    assert "secret-project-folder" not in detail and str(tmp_path) not in detail, detail
    assert "notes" in detail


def test_document_control_sequences_do_not_reach_api_clients(inprocess_server, tmp_path):
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "kiwi.md").write_text("# Kiwi \x1b[1mbird\x1b[0m\n\n" + ESC_TEXT)
    url = inprocess_server(warm=[], corpora=[str(folder)], build_missing=True)
    question = {"question": "Which flightless bird lays large eggs?", "corpus": "notes", "retriever": "bm25"}
    search = httpx.post(url + "/search", json=question, timeout=300)
    assert search.status_code == 200 and search.json()["passages"], search.text
    ask = httpx.post(url + "/ask", json=question, timeout=300)
    assert ask.status_code == 200, ask.text
    stream = httpx.post(url + "/ask", json=question, headers={"accept": "text/event-stream"}, timeout=300)
    assert "event: answer" in stream.text
    chat = httpx.post(
        url + "/v1/chat/completions",
        json={
            "model": "rag-notes-bm25",
            "messages": [{"role": "user", "content": question["question"]}],
            "stream": True,
        },
        timeout=300,
    )
    assert chat.status_code == 200 and "[DONE]" in chat.text
    for response in (search, ask, stream, chat):
        text = response.text
        decoded = json.dumps(response.json()) if not text.startswith(("event:", "data:")) else text
        for mark in ("\x1b", "\\u001b", "\x9b", "\\u009b", "\x07", "\\u0007", "evil.example", "owned"):
            assert mark not in text and mark not in decoded, (mark, text[:300])
    passage = search.json()["passages"][0]
    assert "flightless bird" in passage["text"] and "large eggs" in passage["text"], passage
    assert "Kiwi bird" in passage["title"], passage
