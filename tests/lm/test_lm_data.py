"""rag.lm.data: corpus resolution, the wikitext-2 download (real HTTP on 127.0.0.1), tokenizer and bad input."""

import functools
import http.server
import io
import threading
import zipfile

import numpy as np
import pytest

from rag.config import RagError
from rag.lm.data import prepare, resolve_corpus, train_batch


@pytest.fixture
def http_server(tmp_path):
    """Serve tmp_path/www over real HTTP on 127.0.0.1; yields the base URL."""
    www = tmp_path / "www"
    www.mkdir()
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(www))
    handler.log_message = lambda *a, **k: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", www
    server.shutdown()


def test_wikitext2_downloads_when_missing(tmp_path, monkeypatch, http_server, wiki_slice):
    url, www = http_server
    src = wiki_slice(tmp_path / "src", 60_000)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:  # the official archive's layout
        for split in ("train", "valid", "test"):
            z.write(src / f"wiki.{split}.raw", f"wikitext-2-raw/wiki.{split}.raw")
    (www / "wikitext-2-raw-v1.zip").write_bytes(buf.getvalue())
    data = tmp_path / "data"
    (data / "wikitext-2").mkdir(parents=True)  # like the shared data: valid/test only, no train split
    (data / "wikitext-2" / "wiki.valid.tokens").write_text("x\n")
    monkeypatch.setenv("RAG_DATA_DIR", str(data))
    monkeypatch.setenv("RAG_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("RAG_WIKITEXT2_URL", f"{url}/wikitext-2-raw-v1.zip")
    files = resolve_corpus("wikitext-2")
    assert files.folder == tmp_path / "cache" / "lm" / "data" / "wikitext-2"
    assert files.files["train"].read_bytes() == (src / "wiki.train.raw").read_bytes()
    (www / "wikitext-2-raw-v1.zip").unlink()  # second call uses the cached copy, no network
    assert resolve_corpus("wikitext-2").folder == files.folder


def test_wikitext2_download_failure_is_clear(tmp_path, monkeypatch, http_server):
    url, _ = http_server
    monkeypatch.setenv("RAG_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("RAG_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("RAG_WIKITEXT2_URL", f"{url}/missing.zip")
    with pytest.raises(RagError, match="download from .*missing.zip failed.*--corpus wiki-lm"):
        resolve_corpus("wikitext-2")


def test_missing_split_names_the_file(tmp_path, wiki_slice):
    folder = wiki_slice(tmp_path / "c", 20_000)
    (folder / "wiki.valid.raw").unlink()
    with pytest.raises(RagError, match=r"missing .*wiki\.valid\.raw"):
        resolve_corpus(str(folder))
    with pytest.raises(RagError, match="not found"):
        resolve_corpus(str(tmp_path / "nowhere"))


def test_tokens_layout_accepted(tmp_path):
    folder = tmp_path / "t"
    folder.mkdir()
    for split in ("train", "valid", "test"):
        (folder / f"wiki.{split}.tokens").write_text(" = Title = \n the cat @-@ sat <unk> .\n")
    assert resolve_corpus(str(folder)).files["train"].name == "wiki.train.tokens"


def test_corpus_too_small_for_vocab_states_counts(tmp_path, monkeypatch, wiki_slice):
    monkeypatch.setenv("RAG_CACHE_DIR", str(tmp_path / "cache"))
    folder = wiki_slice(tmp_path / "tiny", 3_000)
    with pytest.raises(
        RagError,
        match=r"corpus too small for the vocabulary: the train split \(\d+ words, 3000 "
        r"characters\) yields only \d+ BPE tokens, but --vocab is 10000",
    ):
        prepare(str(folder), 10000)


def test_prepare_tokenizes_once_and_batches_are_reproducible(tmp_path, monkeypatch, wiki_slice):
    monkeypatch.setenv("RAG_CACHE_DIR", str(tmp_path / "cache"))
    folder = wiki_slice(tmp_path / "c", 60_000)
    tok = prepare(str(folder), 500)
    assert tok.ids["train"].dtype == np.uint16 and tok.ids["train"].max() < 500
    assert tok.tokenizer_path.exists() and tok.words["test"] > 0
    mtime = (tok.folder / "train.npy").stat().st_mtime_ns
    again = prepare(str(folder), 500)
    assert (again.folder / "train.npy").stat().st_mtime_ns == mtime  # cached, not re-tokenized
    x1, y1 = train_batch(tok.ids["train"], 7, 4, 16, seed=1)
    x2, y2 = train_batch(tok.ids["train"], 7, 4, 16, seed=1)
    assert (x1 == x2).all() and (x1[:, 1:] == y1[:, :-1]).all()
    assert not (train_batch(tok.ids["train"], 8, 4, 16, seed=1)[0] == x1).all()
