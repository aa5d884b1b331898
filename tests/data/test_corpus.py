"""Corpus loading: the built-in corpus, BEIR and SQuAD from RAG_DATA_DIR, folders, chunking, bad bytes."""

from rag.config import BUILTIN_CORPUS_DIR
from rag.data.chunking import chunk_markdown
from rag.data.corpus import load_corpus, safe_corpus_name
from rag.data.judgments import subset


def test_builtin_corpus_has_30_documents_chunked_with_stable_ids():
    docs = [p for p in BUILTIN_CORPUS_DIR.glob("*.md") if p.name != "README.md"]
    assert len(docs) >= 30
    corpus = load_corpus("builtin")
    assert len({p.source for p in corpus.passages}) >= 30
    ids = [p.id for p in corpus.passages]
    assert len(ids) == len(set(ids))
    assert all("#" in i and i.split("#")[0].endswith(".md") for i in ids)
    assert load_corpus("builtin").content_hash == corpus.content_hash  # stable across loads
    assert all(p.title for p in corpus.passages)


def test_chunking_splits_long_sections_at_paragraphs():
    text = "# Doc\n\n## A\n\n" + "\n\n".join(["word " * 100] * 3) + "\n\n## B\n\nshort"
    chunks = chunk_markdown(text, max_words=180)
    assert [h for h, _ in chunks] == ["A", "A", "A", "B"]
    assert all(len(c.split()) <= 180 for _, c in chunks)


def test_beir_and_squad_load_from_data_dir(data_dir):
    scifact = load_corpus("scifact")
    assert len(scifact.passages) == 5183 and len(scifact.qrels) == 300
    hotpot = load_corpus("hotpotqa")
    assert hotpot.queries[0].metadata["gold_titles"]
    squad = load_corpus("squad")
    assert len(squad.passages) == 2067
    small = subset(scifact, 10, 50)
    assert len(small.queries) == 10
    assert {d for rel in small.qrels.values() for d in rel} <= {p.id for p in small.passages}


def test_invalid_utf8_is_replaced_and_counted(tmp_path):
    (tmp_path / "good.md").write_text("# Good\n\nAll fine here.")
    (tmp_path / "bad.txt").write_bytes(b"Latin-1 caf\xe9 and \xff\xfe bytes")
    corpus = load_corpus(str(tmp_path))
    assert corpus.invalid_utf8 == 1
    assert any("\ufffd" in p.text for p in corpus.passages)


def test_path_corpora_get_a_safe_folder_name(tmp_path):
    name = safe_corpus_name("../x")
    assert "/" not in name and ".." not in name and name.startswith("x-")
    assert "/" not in safe_corpus_name(str(tmp_path))
