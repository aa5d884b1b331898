"""Run-directory checkpoints: safetensors weights, optimiser state, state.json and the loss curve.

Layout of a run directory:
  config.json         model + training configuration (written at start)
  tokenizer.json      the BPE tokenizer the run was trained with
  ckpt/model.safetensors, ckpt/optimizer.pt, ckpt/rng.pt, ckpt/state.json   the last completed slice
  best/model.safetensors, best/state.json   the best validation slice so far (with best_val)
  curve.jsonl         one line per logged step: {"step", "tokens", "loss", "lr"[, "val_loss"]}
  result.json         the final figures (written when the run completes)
A checkpoint is written into ckpt.new/ and swapped in by rename, so a kill leaves a whole one.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from rag.config import RagError

SHAPE_KEYS = ("vocab", "dim", "layers", "heads", "context", "tie", "pos")


def ckpt_dir(run: Path) -> Path:
    run = Path(run)
    if not (run / "ckpt").is_dir() and (run / "ckpt.old").is_dir():
        return run / "ckpt.old"  # killed between the two renames of a swap
    return run / "ckpt"


def save(run: Path, model, optimizer, state: dict, rng=None) -> None:
    """Write the weights (safetensors), the optimiser state and torch's RNG state (torch.save) and state.json
    atomically."""
    import torch
    from safetensors.torch import save_file

    run = Path(run)
    new, cur, old = run / "ckpt.new", run / "ckpt", run / "ckpt.old"
    shutil.rmtree(new, ignore_errors=True)
    new.mkdir(parents=True)
    weights = {k: v.detach().contiguous().cpu() for k, v in model.state_dict().items()}
    if model.cfg.tie:
        weights.pop("head.weight", None)
    save_file(weights, str(new / "model.safetensors"), metadata={"config": json.dumps(model.cfg.to_dict())})
    if optimizer is not None:
        torch.save(optimizer.state_dict(), new / "optimizer.pt")
    if rng is not None:
        torch.save(rng, new / "rng.pt")
    (new / "state.json").write_text(json.dumps(state, indent=1))
    for f in new.iterdir():
        with open(f, "rb") as fh:
            os.fsync(fh.fileno())
    shutil.rmtree(old, ignore_errors=True)
    if cur.exists():
        cur.rename(old)
    new.rename(cur)
    shutil.rmtree(old, ignore_errors=True)


def best_dir(run: Path) -> Path:
    return Path(run) / "best"


def save_best(run: Path, model, state: dict) -> None:
    """The best-validation weights so far into run/best/ (written beside, swapped in by rename)."""
    from safetensors.torch import save_file

    run = Path(run)
    new, cur = run / "best.new", best_dir(run)
    shutil.rmtree(new, ignore_errors=True)
    new.mkdir(parents=True)
    weights = {k: v.detach().contiguous().cpu() for k, v in model.state_dict().items()}
    if model.cfg.tie:
        weights.pop("head.weight", None)
    save_file(weights, str(new / "model.safetensors"), metadata={"config": json.dumps(model.cfg.to_dict())})
    (new / "state.json").write_text(
        json.dumps({"step": state.get("best_step"), "val_loss": state.get("best_val_loss")})
    )
    shutil.rmtree(cur, ignore_errors=True)
    new.rename(cur)


def read_json(path: Path, fresh: str) -> dict:
    """A JSON file the run wrote; a corrupt one raises one line naming it and how to start fresh."""
    try:
        value = json.loads(Path(path).read_text())
        if not isinstance(value, dict):
            raise ValueError("not a JSON object")
        return value
    except (ValueError, UnicodeDecodeError) as exc:
        raise RagError(f"{path} is corrupt ({str(exc).splitlines()[0]}); {fresh}") from exc


def fresh_hint(run: Path) -> str:
    return f"delete {run} (or pick another --out) to start fresh"


def read_state(run: Path) -> dict | None:
    path = ckpt_dir(run) / "state.json"
    return read_json(path, fresh_hint(run)) if path.exists() else None


def check_shape(saved: dict, wanted: dict, run: Path) -> None:
    """Refuse to resume a checkpoint whose model shape differs from the one asked for."""
    diff = [f"{k}={saved.get(k)} (asked {wanted.get(k)})" for k in SHAPE_KEYS if saved.get(k) != wanted.get(k)]
    if diff:
        raise RagError(
            f"--resume refused: the checkpoint in {run} has another shape: {', '.join(diff)}; "
            "use the same options or a new --out"
        )


def load_weights(model, folder: Path) -> None:
    """Load folder/model.safetensors into model (a tied model has no separate head tensor)."""
    from safetensors.torch import load_file

    path = Path(folder) / "model.safetensors"
    try:
        weights = load_file(str(path))
        model.load_state_dict(weights, strict=not model.cfg.tie)
    except Exception as exc:  # safetensors raises its own error types for truncated or garbled files
        raise RagError(
            f"{path} is corrupt or does not fit the model ({str(exc).splitlines()[0][:120]}); "
            f"{fresh_hint(Path(folder).parent)}"
        ) from exc


def load_optimizer(optimizer, run: Path) -> None:
    import torch

    path = ckpt_dir(run) / "optimizer.pt"
    if path.exists():
        try:
            optimizer.load_state_dict(torch.load(path, map_location="cpu", weights_only=True))
        except Exception as exc:  # truncated zip, pickle errors, mismatched groups
            raise RagError(f"{path} is corrupt ({str(exc).splitlines()[0][:120]}); {fresh_hint(run)}") from exc


def rng_state() -> dict:
    """torch's RNG states (CPU, and CUDA where present): the dropout masks a resumed run must draw alike."""
    import torch

    state = {"cpu": torch.get_rng_state()}
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        state["cuda"] = torch.cuda.get_rng_state()
    return state


def load_rng(run: Path) -> None:
    """Restore torch's RNG states from the checkpoint, when the checkpoint holds them."""
    import torch

    path = ckpt_dir(run) / "rng.pt"
    if path.exists():
        try:
            state = torch.load(path, map_location="cpu", weights_only=True)
            torch.set_rng_state(state["cpu"])
            if "cuda" in state and torch.cuda.is_available():
                torch.cuda.set_rng_state(state["cuda"])
        except Exception as exc:
            raise RagError(f"{path} is corrupt ({str(exc).splitlines()[0][:120]}); {fresh_hint(run)}") from exc


def read_curve(run: Path) -> list[dict]:
    path = Path(run) / "curve.jsonl"
    if not path.exists():
        return []
    rows = []
    for line in path.read_text().splitlines():
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:  # a line cut by a kill
            break
    return rows


def truncate_curve(run: Path, step: int) -> None:
    """Keep the curve up to the checkpointed step, so a resumed run continues it without gaps or repeats."""
    rows = [r for r in read_curve(run) if r["step"] <= step]
    (Path(run) / "curve.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def load_model(run: str | Path, device: str = "cpu"):
    """A trained GPT from a run directory (or its ckpt/ folder), in eval mode."""
    from safetensors import safe_open

    from rag.lm.model import GPT, GPTConfig

    run = Path(run)
    folder = run if (run / "model.safetensors").exists() else ckpt_dir(run)
    path = folder / "model.safetensors"
    if not path.exists():
        raise RagError(f"no checkpoint in {run} (expected {path}); train one with rag lm train --out {run}")
    try:
        with safe_open(str(path), "pt") as f:
            cfg = GPTConfig(**json.loads(f.metadata()["config"]))
    except Exception as exc:
        raise RagError(
            f"{path} is corrupt or not one of our checkpoints ({str(exc).splitlines()[0][:120]}); "
            f"retrain with rag lm train --out {run}"
        ) from exc
    model = GPT(cfg)
    load_weights(model, folder)
    return model.to(device).eval()
