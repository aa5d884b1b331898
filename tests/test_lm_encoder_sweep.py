"""The lm:<checkpoint> retrieval encoder and a miniature `rag lm sweep` end to end."""
import csv
import json

import numpy as np
import pytest
import torch
from typer.testing import CliRunner

from rag.config import RagError
from rag.lm import checkpoint
from rag.lm.data import prepare
from rag.lm.encoder import load_lm_encoder
from rag.lm.model import GPT, GPTConfig
from rag.lm.sweep import COLUMNS, fit_exponent


@pytest.fixture(scope="module")
def corpus(tmp_path_factory, wiki_slice):
    return wiki_slice(tmp_path_factory.mktemp("wiki") / "slice", 100_000)


def test_lm_encoder_mean_pools_input_embedding_rows(corpus, tmp_path):
    tok = prepare(str(corpus), 400)
    torch.manual_seed(0)
    model = GPT(GPTConfig(vocab=400, dim=24, layers=1, heads=2, context=16))  # randomly initialised
    run = tmp_path / "run"
    run.mkdir()
    checkpoint.save(run, model, None, {"step": 0})
    (run / "tokenizer.json").write_bytes(tok.tokenizer_path.read_bytes())
    enc = load_lm_encoder(f"lm:{run}")
    assert enc.dim == 24 and enc.name == f"lm:{run}"
    texts = ["The history of the city", "An album was released in 1998 ."]
    vecs = enc.encode(texts, kind="document")
    assert vecs.shape == (2, 24) and vecs.dtype == np.float32
    from rag.lm.data import load_tokenizer

    ids = load_tokenizer(run / "tokenizer.json").encode(texts[0]).ids
    table = model.wte.weight.detach().numpy()
    np.testing.assert_allclose(vecs[0], table[ids].mean(0), rtol=1e-5, atol=1e-6)
    idf = load_lm_encoder(f"lm:{run}#idf")
    idf.fit(texts * 3 + ["the the the"])
    assert idf.encode(texts, kind="query").shape == (2, 24)
    with pytest.raises(RagError, match="not an LM checkpoint"):
        load_lm_encoder(f"lm:{tmp_path / 'nothing'}")


def test_fit_exponent_recovers_power_law():
    assert fit_exponent([128, 256, 512, 1024], [3 * d ** 1.7 for d in (128, 256, 512, 1024)]) == pytest.approx(1.7)


def test_sweep_writes_csv_json_report_and_plots(corpus, tmp_path):
    from rag.commands.lm import app

    out = tmp_path / "sweep"
    args = ["sweep", "--corpus", str(corpus), "--dims", "16,32", "--layers", "1", "--heads", "2", "--vocab", "400",
            "--context", "32", "--batch", "8", "--tokens", str(15 * 8 * 32), "--threads", "1", "--precision", "fp32",
            "--eval-tokens", "1024", "--out", str(out)]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    with open(out / "results.csv") as f:
        reader = csv.DictReader(f)
        rows = list(reader)
    assert reader.fieldnames == COLUMNS and [int(r["dim"]) for r in rows] == [16, 32]
    assert all(int(r["embedding_params"]) == 400 * int(r["dim"]) for r in rows)
    assert all(int(r["tokens_seen"]) == 15 * 8 * 32 for r in rows)  # the same token budget for every d
    data = json.loads((out / "results.json").read_text())
    assert len(data["rows"]) == 2 and data["plan"]["tokens_per_d"] == 15 * 8 * 32
    report = (out / "report.md").read_text()
    for png in ("val_ppl_vs_d.png", "epoch_time_vs_d.png", "peak_mem_vs_d.png", "loss_curves.png", "params_vs_d.png"):
        assert (out / png).stat().st_size > 1000 and png in report
    assert "Epoch time grows as d^" in report and "best validation perplexity" in report
    res = CliRunner().invoke(app, args)  # a second sweep into the same folder is refused without --resume
    assert res.exit_code == 1 and "--resume" in res.output
    res = CliRunner().invoke(app, args + ["--resume"])  # finished d are reused, nothing retrained
    assert res.exit_code == 0, res.output
    res = CliRunner().invoke(app, ["sweep", "--dims", "128,x"])
    assert res.exit_code == 1 and "--dims" in res.output


def test_budget_is_sized_from_measured_rates(corpus):
    from rag.lm.sweep import default_base, measure_rates, size_budget

    base = default_base(corpus=str(corpus), vocab=400, layers=1, heads=2, context=32, batch=4, threads=1,
                        precision="fp32", eval_tokens=1024, slice_eval_tokens=256)
    rates = measure_rates(base, [16, 32])
    assert set(rates) == {16, 32} and all(r > 0 for r in rates.values())
    tokens = size_budget(rates, 0.5, base)
    assert tokens % (4 * 32) == 0  # whole steps
    expected = 0.8 * 30 / sum(1 / r for r in rates.values()) - (2 * 1024 + 4 * 256) / 3
    assert tokens == max(10 * 128, int(expected // 128) * 128)
    assert size_budget({16: 1000.0, 32: 1000.0}, 0.5, base) < size_budget({16: 2000.0, 32: 2000.0}, 0.5, base)
