"""The `rag lm` options: declared once, defaults read from the settings dataclasses, one builder for the TrainConfig."""

import pytest
import typer.main
from typer.testing import CliRunner

from rag.commands.lm import app
from rag.config import RagError
from rag.lm.settings import OPTION_FIELDS, GPTConfig, TrainConfig, training_config


def params(command: str) -> dict:
    return {p.name: p for p in typer.main.get_command(app).commands[command].params}


def test_train_defaults_are_the_settings_defaults_and_config_is_no_option():
    model, train = GPTConfig(), TrainConfig()
    options = params("train")
    assert "config" not in options
    for name in OPTION_FIELDS:
        if name in ("out", "lr", "threads", "epochs", "tokens", "minutes"):
            continue  # required, or None: a rule or a budget chosen at run time
        expected = getattr(model if name in GPTConfig.__dataclass_fields__ else train, name)
        assert options[name].default == expected, name


def test_an_option_shared_by_the_training_commands_has_one_help_and_one_bound():
    commands = ("train", "sweep", "lr-scan", "info")
    for name in ("layers", "heads", "vocab", "context", "batch", "seed", "threads", "init"):
        seen = {
            (p.help, getattr(p, "min", None), getattr(p, "max", None)) for c in commands if (p := params(c).get(name))
        }
        assert len(seen) == 1, (name, seen)


def test_training_config_splits_the_model_fields_and_checks_as_the_options_do(tmp_path):
    cfg = training_config(dim=64, layers=2, batch=4, eval_tokens=0, out=str(tmp_path / "run"))
    assert (cfg.model.dim, cfg.model.layers, cfg.batch, cfg.eval_tokens) == (64, 2, 4, None)
    (tmp_path / "file").write_text("x")
    with pytest.raises(RagError, match="is a file; give a folder"):
        training_config(out=str(tmp_path / "file"))
    for name in ("epochs", "minutes", "lr"):
        with pytest.raises(RagError, match=f"--{name} must be greater than 0"):
            training_config(**{name: 0})


def test_info_takes_the_bounds_of_the_commands_that_train():
    res = CliRunner().invoke(app, ["info", "--vocab", "100"])
    assert res.exit_code == 2 and "--vocab" in res.output
