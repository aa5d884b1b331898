"""Sharded indexes: a real local Ray (2 CPUs), real MiniLM, real FAISS, real SciFact subsets; checked against the
single index built from the same vectors."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time

import numpy as np
import pytest

from rag.index.spec import IndexSpec

ray = pytest.importorskip("ray", reason="the scale extra (pip install -e '.[scale]') is not installed")

pytestmark = pytest.mark.slow  # one local Ray instance (about 20 s to start on a busy 2-core box)


@pytest.fixture(scope="module")
def local_ray():
    from rag.index.shards import connect

    yield connect(num_cpus=2)
    ray.shutdown()


@pytest.fixture(scope="module")
def small_corpus(data_dir):
    """About 20 real SciFact abstracts: small enough for Ray Data to encode them in a test."""
    from rag.data.corpus import load_corpus
    from rag.data.judgments import subset

    return subset(load_corpus("scifact"), n_queries=6, n_extra_docs=12, seed=3)


def single_top(corpus, kind, vectors, k=10):
    from rag.index.store import load_index

    return load_index(corpus, IndexSpec("minilm", 384, kind, "pca")).index.search(vectors, k)


def test_ray_data_encodes_like_one_process_and_two_flat_shards_match_the_single_index(
    local_ray, small_corpus, tmp_path, monkeypatch
):
    from rag.encoders import get_encoder
    from rag.encoders.base import document_text
    from rag.index.shards import ShardSet, build_sharded
    from rag.index.store import build_and_save

    monkeypatch.setenv("RAG_CACHE_DIR", str(tmp_path / "cache"))  # nothing cached: Ray Data must encode
    summary = build_sharded(small_corpus, IndexSpec("minilm", None, "flat", "pca"), shards=2)
    assert summary["encoded_by"] == "ray-data" and summary["shards"] == 2
    assert sum(summary["shard_vectors"]) == len(small_corpus.passages)
    from rag.encoders.cache import cached_embeddings

    ray_vectors = cached_embeddings(small_corpus, "minilm")[0]
    texts = [document_text(p) for p in small_corpus.passages[:12]]
    assert np.allclose(ray_vectors[:12], get_encoder("minilm").encode(texts, kind="document"), atol=1e-5)

    build_and_save(
        small_corpus, IndexSpec("minilm", None, "flat", "pca")
    )  # the single index, from the same cached vectors
    queries = [q.text for q in small_corpus.queries[:6]]
    for engine in ("local", "ray"):
        shard_set = ShardSet(summary["path"], engine)
        q = shard_set.encode(queries)
        hits = shard_set.search(q, 10)
        _, rows = single_top(small_corpus, "flat", q)
        assert np.array_equal(hits.rows, rows), engine  # the same top-10, in the same order
        assert hits.answered == [0, 1] and not hits.missing
        ids = [small_corpus.passages[r].id for r in rows[0]]
        assert [p.id for p in hits.passages[0]] == ids
        shard_set.close()


def test_ivf_and_sq8_shards_share_one_quantizer_and_keep_the_single_recall(pool_vectors):
    """Two shards over 10k MiniLM-like vectors against one index over all of them, both against exact search."""
    from rag.index.kinds import import_faiss, set_search_params
    from rag.index.search_index import SearchIndex
    from rag.index.shards import build_part, merge_topk, train_template

    faiss = import_faiss()
    base, queries = pool_vectors
    exact = np.argsort(-(queries @ base.T), axis=1)[:, :10]

    def recall(rows):
        return np.mean([len(set(r) & set(t)) / 10 for r, t in zip(rows.tolist(), exact.tolist())])

    for kind in ("ivf-flat", "ivf-pq", "sq8"):
        template = train_template(base, kind)
        one = faiss.deserialize_index(np.frombuffer(build_part(base, kind, template)[0], np.uint8))
        set_search_params(kind, one)
        _, single = SearchIndex(kind, one, 32, "cpu").search(queries, 10)
        parts, half = [], len(base) // 2
        for offset, part in ((0, base[:half]), (half, base[half:])):
            index = faiss.deserialize_index(np.frombuffer(build_part(part, kind, template)[0], np.uint8))
            set_search_params(kind, index)
            s, r = index.search(queries, 10)
            parts.append((s, np.where(r >= 0, r + offset, -1)))
        _, sharded = merge_topk(parts, 10)
        assert abs(recall(sharded) - recall(single)) <= 0.005, (kind, recall(sharded), recall(single))


@pytest.fixture(scope="module")
def pool_vectors(scifact_small):
    from rag.bench.scale import GaussianFit
    from rag.encoders import get_encoder
    from rag.encoders.cache import cached_embeddings, embed_corpus
    from rag.reduce import Reducer

    cached = cached_embeddings(scifact_small, "minilm")
    pool = cached[0] if cached else embed_corpus(scifact_small, get_encoder("minilm"))
    x = GaussianFit(pool).sample(10_200, np.random.default_rng(0))
    x = Reducer.fit(x, 32, "pca").transform(x)
    return x[:10_000], x[10_000:]


@pytest.fixture(scope="module")
def built_shards(local_ray, scifact_small):
    """Two flat shards of the SciFact subset at full width and two at d=64 (vectors from the cache)."""
    from rag.index.shards import build_sharded

    return (
        build_sharded(scifact_small, IndexSpec("minilm", None, "flat", "pca"), shards=2),
        build_sharded(scifact_small, IndexSpec("minilm", 64, "flat", "pca"), shards=2),
    )


@pytest.fixture
def shard_copy(built_shards, tmp_path):
    """A private copy of the 384-d shard set (tests below break it)."""
    import shutil

    root = tmp_path / "set"
    shutil.copytree(os.path.dirname(built_shards[0]["path"]), root, symlinks=True)
    return root / os.path.basename(built_shards[0]["path"])


def test_a_shard_whose_manifest_disagrees_is_refused(built_shards, shard_copy):
    from rag.index.shards import ShardMismatch, ShardSet

    other = os.path.realpath(os.path.join(built_shards[1]["path"], "shard-1"))  # the d=64 set's shard-1
    (shard_copy / "shard-1").unlink()
    os.symlink(other, shard_copy / "shard-1")
    with pytest.raises(ShardMismatch, match=r"shard-1.* on dim \(64"):
        ShardSet(shard_copy)


def test_a_missing_shard_is_named_unless_partial_results_are_allowed(shard_copy, scifact_small):
    from rag.index.shards import ShardLost, ShardSet

    (shard_copy / "shard-1").unlink()
    with pytest.raises(ShardLost, match="shard-1 of 2 missing"):
        ShardSet(shard_copy)
    partial = ShardSet(shard_copy, allow_partial=True)
    hits = partial.search(partial.encode(["cancer"]), 5)
    assert hits.answered == [0] and hits.missing == ["shard-1"]
    assert (hits.rows < len(scifact_small.passages) // 2).all()


def wait_until_dead(actor, seconds: float = 30.0) -> None:
    """Return once the killed actor no longer answers (its calls raise RayActorError)."""
    import time

    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            ray.get(actor.__ray_ready__.remote(), timeout=5)
        except (ray.exceptions.RayActorError, ray.exceptions.GetTimeoutError):
            return
        time.sleep(0.2)
    raise AssertionError("the killed actor still answers")


def test_a_shard_actor_lost_at_query_time_is_an_error_naming_it(built_shards):
    from rag.index.shards import ShardLost, ShardSet

    shard_set = ShardSet(built_shards[0]["path"], "ray", timeout_s=30)
    q = shard_set.encode(["vitamin D deficiency"])
    ray.kill(shard_set.shards[1])
    wait_until_dead(shard_set.shards[1])  # ray.kill is asynchronous: a call sent at once may still be answered
    with pytest.raises(ShardLost, match="shard-1"):
        shard_set.search(q, 5)
    shard_set.allow_partial = True
    hits = shard_set.search(q, 5)
    assert hits.answered == [0] and "shard-1" in hits.missing[0] and len(hits.rows[0]) == 5
    shard_set.close()


def test_unreachable_address_fails_fast_and_names_it(local_ray, scifact_small):
    from rag.config import RagError
    from rag.index.shards import build_sharded

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    start = time.monotonic()
    with pytest.raises(RagError, match=f"127.0.0.1:{port}"):
        build_sharded(
            scifact_small, IndexSpec("minilm", None, "flat", "pca"), shards=2, address=f"ray://127.0.0.1:{port}"
        )
    assert time.monotonic() - start < 30


def test_searching_shards_locally_never_imports_ray(built_shards):
    code = (
        "import sys, cli; from rag.index.shards import ShardSet; s = ShardSet(sys.argv[1]); "
        "h = s.search(s.encode(['protein folding']), 3); print(len(h.rows[0]), 'ray' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, built_shards[0]["path"]],
        capture_output=True,
        text=True,
        timeout=120,
        env=os.environ,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["3", "False"]


def test_engine_ray_without_ray_is_one_line_naming_the_extra(tmp_path):
    code = (
        "import sys; sys.modules['ray'] = None; from typer.testing import CliRunner; from cli import app; "
        "r = CliRunner().invoke(app, ['index', 'build', '--corpus', 'builtin', '--engine', 'ray']); "
        "print(r.exit_code); print(r.output)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=os.environ)
    code_line, *rest = out.stdout.strip().splitlines()
    assert code_line == "1", out.stdout + out.stderr
    message = " ".join(rest)
    assert "Traceback" not in message and ".[scale]" in message and "Ray" in message


def test_cli_builds_and_searches_shards_like_the_single_index(cli, local_ray):
    r = cli(["index", "build", "--corpus", "builtin", "--engine", "ray", "--shards", "2", "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["shards"] == 2
    assert cli(["index", "build", "--corpus", "builtin", "--no-screen"]).exit_code == 0
    question = "How many parameters does an embedding table with vocabulary V and dimension d hold?"
    r = cli(["shards", "search", question, "--corpus", "builtin", "-k", "5", "--json"])
    assert r.exit_code == 0, r.output
    sharded = [h["id"] for h in json.loads(r.output)["hits"]]
    r = cli(["search", question, "--corpus", "builtin", "--retriever", "dense", "-k", "5", "--json"])
    assert r.exit_code == 0, r.output
    single = [h["id"] for h in json.loads(r.output)["passages"]]
    assert sharded == single


@pytest.mark.parametrize(
    "args, words",
    [
        (["--shards", "0"], ["--shards", "1 to"]),
        (["--engine", "spark"], ["spark", "ray"]),
        (["--address", "nonsense"], ["nonsense"]),
    ],
)
def test_cli_sharded_build_bad_input_is_one_line(cli, local_ray, args, words):
    r = cli(["index", "build", "--corpus", "builtin", "--engine", "ray", *args])
    assert r.exit_code != 0 and "Traceback" not in r.output
    assert all(w in r.output for w in words), r.output
