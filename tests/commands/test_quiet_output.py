"""What the CLI prints besides its answer: FAISS's own k-means lines replaced by one line per index too small for its
kind, each RagWarning said once, and news (RagNote) without the `warning:` label."""

import warnings

import numpy as np
import pytest

from cli import rag_warnings_once
from rag.config import RagNote, RagWarning
from rag.index.search_index import build_index


@pytest.mark.parametrize("kind", ["opq-pq", "ivf-pq", "ivf-pq-rerank"])
def test_a_pq_index_on_few_vectors_says_so_once_and_faiss_stays_quiet(kind, capfd):
    """The quick eval's corpus: 241 vectors, too few for 32 centroids per sub-quantizer. faiss printed "WARNING
    clustering 241 points to 32 centroids" from C++ at every k-means run (456 lines in one quick eval)."""
    x = np.random.default_rng(0).standard_normal((241, 32)).astype(np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        index = build_index(x, kind)
    assert len(index) == 241
    said = [str(w.message) for w in caught if issubclass(w.category, RagWarning)]
    assert len(said) == 1 and said[0].startswith(f"{kind} on 241 vectors") and "consider flat or hnsw" in said[0]
    err = capfd.readouterr().err
    assert "clustering" not in err and "WARNING" not in err, err


def test_the_cli_says_each_warning_once_and_news_without_the_label(capsys):
    shown = []
    show = rag_warnings_once(lambda *a, **k: shown.append(a))
    for _ in range(3):
        show(RagWarning("ivf-pq on 241 vectors: too few"), RagWarning, "f.py", 1)
    show(RagNote("updated 1 index of notes in 0.1 s"), RagNote, "f.py", 1)
    show(DeprecationWarning("not ours"), DeprecationWarning, "f.py", 1)
    err = capsys.readouterr().err.splitlines()
    assert err == ["warning: ivf-pq on 241 vectors: too few", "updated 1 index of notes in 0.1 s"], err
    assert len(shown) == 1  # other libraries' warnings keep Python's own display
