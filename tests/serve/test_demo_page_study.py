"""The demo page's two endpoints over real HTTP (no browser): GET /study reads results files under the study
folders, bounded and without server paths; POST /passages returns cited passages under the serving policy."""

from __future__ import annotations

import json
import math

import httpx
import pytest
from serve_helpers import inprocess_server  # noqa: F401  (a fixture)

from rag.serve.demo import MAX_BYTES, MAX_IDS
from rag.studies.report import write_csv

ROW = {
    "dataset": "scifact",
    "encoder": "minilm",
    "reduce": "pca",
    "dim": 64,
    "index": "flat",
    "retriever": "dense",
    "device": "cpu",
    "ndcg@10": 0.54,
    "bytes_per_vector": 256.0,
}


@pytest.fixture
def study_dir(tmp_path, monkeypatch):
    root, outside = tmp_path / "study", tmp_path / "outside"
    write = lambda folder, name, text: (folder.mkdir(parents=True, exist_ok=True), (folder / name).write_text(text))  # noqa: E731
    (root / "grid").mkdir(parents=True)
    write_csv([ROW, {**ROW, "dim": 32, "ndcg@10": math.nan}], root / "grid" / "results.csv")
    (root / "grid" / "results.json").write_text("{not read: the csv beside it wins")
    rows = [{"dim": 128, "val_ppl": 315.0, "nested": {"dropped": 1}}, {"dim": 256, "val_ppl": float("inf")}]
    write(root / "sweep", "results.json", json.dumps({"rows": rows, "machine": "x"}))
    write(root / "broken", "results.json", "[{")
    write(root / "huge", "results.csv", "dim,ndcg@10\n" + "1,0.5\n" * (MAX_BYTES // 6 + 1))
    write(root / "1" / "2" / "3" / "4" / "5", "results.csv", "dim,ndcg@10\n1,0.5\n")  # deeper than MAX_DEPTH
    write(outside, "results.csv", "dim,ndcg@10\n7,0.7\n")
    (root / "linked").mkdir()
    (root / "linked" / "results.csv").symlink_to(outside / "results.csv")  # a file link out of the root
    (root / "dirlink").symlink_to(outside, target_is_directory=True)  # a folder link out of the root
    monkeypatch.setenv("RAG_STUDY_DIR", str(root))
    return tmp_path


def test_study_reads_results_bounded_and_names_no_path(inprocess_server, study_dir):
    url = inprocess_server(warm=[])
    response = httpx.get(url + "/study", timeout=30)
    assert response.status_code == 200
    assert str(study_dir) not in response.text and "outside" not in response.text
    studies = {s["name"]: s for s in response.json()["studies"]}
    assert {"study/grid", "study/sweep", "study/broken", "study/huge"} <= set(studies)
    assert not {"study/linked", "study/dirlink", "study/1/2/3/4/5"} & set(studies)
    assert "docs/lm" in studies and studies["docs/lm"]["kind"] == "lm"  # the committed LM sweep
    grid = studies["study/grid"]
    assert grid["kind"] == "retrieval" and [r["dim"] for r in grid["rows"]] == [64, 32]
    assert grid["rows"][0]["ndcg@10"] == 0.54 and grid["rows"][1]["ndcg@10"] is None  # NaN -> null
    sweep = studies["study/sweep"]
    assert sweep["kind"] == "lm" and sweep["rows"] == [{"dim": 128, "val_ppl": 315.0}, {"dim": 256, "val_ppl": None}]
    assert studies["study/broken"]["kind"] == "skipped" and "unreadable" in studies["study/broken"]["note"]
    assert studies["study/huge"]["kind"] == "skipped" and "limit" in studies["study/huge"]["note"]


def test_passages_follow_the_policy(inprocess_server, tmp_path):
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "gears.txt").write_text("Gears mesh with other gears.\n\nFlywheels store rotational energy.\n")
    url = inprocess_server(corpora=[f"notes={folder}"], build_missing=True, warm=[])
    base = {"question": "flywheel energy", "corpus": "notes", "retriever": "bm25"}
    hits = httpx.post(url + "/search", json=base, timeout=60).json()["passages"]
    wanted = [hits[0]["id"], "no-such-passage"]
    response = httpx.post(url + "/passages", json={**base, "ids": wanted}, timeout=60)
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["missing"] == ["no-such-passage"] and str(folder) not in response.text
    assert body["passages"] == [{k: hits[0][k] for k in ("id", "title", "source", "text")}]
    for bad, status in (
        ({"ids": []}, 422),
        ({"ids": ["x"] * (MAX_IDS + 1)}, 422),
        ({"ids": "x"}, 422),
        ({"ids": ["x"], "corpus": "elsewhere"}, 403),
        ({"ids": ["x"], "path": "/etc"}, 422),
    ):
        response = httpx.post(url + "/passages", json={**base, **bad}, timeout=60)
        assert response.status_code == status, (bad, response.text)
