"""Train each d until it stops improving (`rag lm sweep --to-convergence`), and summarise each run in one small file.

Per d: the seed's model (tied embeddings; V, layers and heads as given) with dropout and weight decay (a preset per
width unless given), a warm-up + cosine schedule over a fixed epoch cap, validation on the whole validation split
every `eval_every` of an epoch (the test split is scored at the same points for the FLOPs curve; it never chooses
anything), early stopping after `patience` validations without improvement, and the best-validation checkpoint
scored on the whole test split. A killed run resumes exactly from its last checkpoint (weights, AdamW state, RNG;
the schedule and the batches are functions of the step).

Layout of --out: converge.json (the settings, checked on --resume), d<D>/ (a run directory, see rag.lm.checkpoint),
d<D>/summary.json (the figures of one width, small enough to commit).
"""

from __future__ import annotations

import gc
import json
import math
from dataclasses import replace
from pathlib import Path

from rag.config import RagError
from rag.lm.checkpoint import read_curve, read_json, read_state
from rag.lm.settings import ConvergeSettings, TrainConfig
from rag.lm.train import train


def base_fields(settings: ConvergeSettings) -> dict:
    """The TrainConfig fields a study fixes whatever the sweep's other options say (run_convergence sets each width's
    budget and evaluation itself); no matmul peaks are measured."""
    return {
        "epochs": settings.max_epochs,
        "tokens": None,
        "minutes": None,
        "eval_tokens": 0,
        "slices": 4,
        "measure_peak": False,
    }


def plan_of(base: TrainConfig, dims: list[int], settings: ConvergeSettings) -> dict:
    m = base.model
    return {
        "mode": "to-convergence",
        "dims": dims,
        "max_epochs": settings.max_epochs,
        "eval_every": settings.eval_every,
        "patience": settings.patience,
        "regularisation": {str(d): dict(zip(("dropout", "weight_decay"), settings.regularisation(d))) for d in dims},
        "vocab": m.vocab,
        "layers": m.layers,
        "heads": m.heads,
        "context": m.context,
        "tie": m.tie,
        "pos": m.pos,
        "batch": base.batch,
        "seed": base.seed,
        "lr": base.lr,
        "corpus": base.corpus,
    }


def check_resume(saved: dict, plan: dict, path: Path) -> None:
    """Refuse a resume whose settings differ from the saved ones (one line naming the first differences)."""
    keys = [k for k in plan if k not in ("dims", "regularisation", "corpus")]
    diff = [f"{k}={saved.get(k)} (asked {plan[k]})" for k in keys if saved.get(k) != plan[k]]
    for d in plan["dims"]:
        old = saved.get("regularisation", {}).get(str(d))
        if old is not None and old != plan["regularisation"][str(d)]:
            diff.append(f"d={d} regularisation {old} (asked {plan['regularisation'][str(d)]})")
    if diff:
        raise RagError(
            f"--resume refused: {path} was started with other settings: {', '.join(diff[:3])}; "
            "use the same options or another --out"
        )


def check_run_folders(out_dir: Path, plan: dict) -> None:
    """A run folder whose checkpoint is of another width or vocabulary than its name and the plan say is refused."""
    for run in sorted(out_dir.glob("d*")):
        if not run.is_dir():
            continue
        state = read_state(run)
        if state is None:
            continue
        model = state["model"]
        if run.name != f"d{model['dim']}" or model["vocab"] != plan["vocab"]:
            raise RagError(
                f"--resume refused: {run} holds a checkpoint of d={model['dim']}, vocab {model['vocab']}, "
                f"not d={run.name[1:]}, vocab {plan['vocab']}; delete it or use another --out"
            )


def run_convergence(
    base: TrainConfig, dims: list[int], out: str, settings: ConvergeSettings, progress=None, on_result=None
) -> dict:
    """Train every d to convergence (resuming where a run stopped); returns {'plan', 'summaries'}."""
    from rag.lm.sweep import check_out

    settings.check()
    for d in dims:
        replace(base.model, dim=d, dropout=settings.regularisation(d)[0]).check()
    out_dir = Path(out)
    check_out(out_dir)
    plan = plan_of(base, dims, settings)
    plan_path = out_dir / "converge.json"
    if plan_path.exists():
        if not base.resume:
            raise RagError(
                f"{out_dir} already holds a to-convergence study; add --resume to continue it or pick another --out"
            )
        saved = read_json(plan_path, f"delete {out_dir} (or pick another --out) to start fresh")
        check_resume(saved, plan, plan_path)
        plan["dims"] = list(dict.fromkeys(saved.get("dims", []) + dims))
        plan["regularisation"] = {**saved.get("regularisation", {}), **plan["regularisation"]}
        check_run_folders(out_dir, plan)
    elif base.resume:
        raise RagError(f"--resume: {out_dir} holds no to-convergence study (no converge.json); start without --resume")
    out_dir.mkdir(parents=True, exist_ok=True)
    plan_path.write_text(json.dumps(plan, indent=1))
    summaries = []
    for d in dims:
        run = out_dir / f"d{d}"
        if (run / "summary.json").exists():
            summaries.append(read_json(run / "summary.json", f"delete {run / 'summary.json'} and resume"))
        else:
            dropout, wd = settings.regularisation(d)
            cfg = replace(
                base,
                model=replace(base.model, dim=d, dropout=dropout),
                weight_decay=wd,
                out=str(run),
                tokens=None,
                minutes=None,
                epochs=settings.max_epochs,
                eval_every=settings.eval_every,
                patience=settings.patience,
                best_val=True,
                eval_tokens=None,  # whole splits at the end
                slice_eval_tokens=0,  # and at every validation
                curve_test=True,
                resume=read_state(run) is not None,
            )
            result = train(cfg, progress=progress)
            summaries.append(summarize(result, read_curve(run), plan))
            (run / "summary.json").write_text(json.dumps(summaries[-1], indent=1))
            gc.collect()
        if on_result:
            on_result(summaries[-1])
    return {"plan": plan, "summaries": summaries}


def summarize(result: dict, curve: list[dict], plan: dict) -> dict:
    """The figures of one width: best validation, its test score, where it peaked, cost, and the per-eval curve."""
    per_epoch = result["train_tokens_per_epoch"]
    fpt = result["flops_per_token"]
    targets, nbytes = result["eval_tokens"], result["eval_bytes"]
    bpb = lambda nats, split: round(nats * targets[split] / math.log(2) / nbytes[split], 4)  # noqa: E731
    points = [
        {
            "epoch": round(r["tokens"] / per_epoch, 3),
            "tokens": r["tokens"],
            "flops": r["tokens"] * fpt,
            "train_loss": r["loss"],
            "val_bpb": bpb(r["val_loss"], "valid"),
            "test_bpb": bpb(r["test_loss"], "test") if "test_loss" in r else None,
            "val_ppl": round(math.exp(r["val_loss"]), 2),
            "test_ppl": round(math.exp(r["test_loss"]), 2) if "test_loss" in r else None,
        }
        for r in curve
        if "val_loss" in r
    ]
    best_tokens = (result["best_step"] or result["steps"]) * result["batch"] * result["context"]
    return {
        "dim": result["dim"],
        "layers": result["layers"],
        "heads": result["heads"],
        "vocab": result["vocab"],
        "tied": result["tied"],
        "params": result["params"],
        "embedding_params": result["embedding_params"],
        "rest_params": result["params"] - result["embedding_params"],
        "dropout": plan["regularisation"][str(result["dim"])]["dropout"],
        "weight_decay": plan["regularisation"][str(result["dim"])]["weight_decay"],
        "lr": result["lr"],
        "batch": result["batch"],
        "context": result["context"],
        "max_epochs": plan["max_epochs"],
        "eval_every": plan["eval_every"],
        "patience": plan["patience"],
        "best_val_ppl": result["val_ppl"],
        "best_val_bpb": result["val_bpb"],
        "test_ppl": result["test_ppl"],
        "test_bpb": result["test_bpb"],
        "peak_epoch": round(best_tokens / per_epoch, 3),
        "tokens_to_best": best_tokens,
        "flops_to_best": best_tokens * fpt,
        "epochs_run": round(result["tokens_seen"] / per_epoch, 3),
        "stopped_early": result["stopped_early_at"] is not None,
        "epoch_s": result["epoch_s"],
        "tokens_per_s": result["tokens_per_s"],
        "train_s": result["train_s"],
        "peak_mem_bytes": result["peak_mem_bytes"],
        "flops_per_token": fpt,
        "device": result["device"],
        "precision": result["precision"],
        "eval_targets": targets,
        "eval_bytes": nbytes,
        "whole_split": True,
        "finished": True,
        "curve": points,
    }


def summarize_unfinished(run: str | Path) -> dict:
    """The figures of a width still training (or killed), from its curve: the best validation point so far and the
    test score of those same weights (each validation point also scored the test split). Marked finished: False;
    the peak memory is measured only at the end of a run, so it is None here."""
    from rag.lm.baselines import eval_targets, token_bytes
    from rag.lm.data import load_tokenizer, prepare
    from rag.lm.model import GPTConfig, accounting

    run = Path(run)
    state = read_state(run)
    config = read_json(run / "config.json", f"delete {run} to start it fresh")
    if state is None:
        raise RagError(f"{run} has no checkpoint yet; wait for its first validation")
    mcfg = GPTConfig(**state["model"])
    train_cfg = config["train"]
    tok = prepare(train_cfg["corpus"], mcfg.vocab)
    nb = token_bytes(load_tokenizer(run / "tokenizer.json"))
    targets, nbytes = {}, {}
    for split in ("valid", "test"):
        pos = eval_targets(len(tok.ids[split]), mcfg.context, None)
        targets[split], nbytes[split] = len(pos), int(nb[tok.ids[split][pos].astype("int64")].sum())
    acc = accounting(mcfg)
    tokens_per_step = train_cfg["batch"] * mcfg.context
    result = {
        "dim": mcfg.dim,
        "layers": mcfg.layers,
        "heads": mcfg.heads,
        "vocab": mcfg.vocab,
        "tied": mcfg.tie,
        "params": acc["params"],
        "embedding_params": acc["embedding_params"],
        "lr": train_cfg["lr"] if train_cfg["lr"] is not None else 2e-3 * math.sqrt(128 / mcfg.dim),
        "batch": train_cfg["batch"],
        "context": mcfg.context,
        "train_tokens_per_epoch": len(tok.ids["train"]),
        "flops_per_token": acc["flops_per_token"],
        "eval_tokens": targets,
        "eval_bytes": nbytes,
        "best_step": state.get("best_step"),
        "steps": state["step"],
        "tokens_seen": state["step"] * tokens_per_step,
        "stopped_early_at": state.get("stopped_early_at"),
        "epoch_s": round(len(tok.ids["train"]) / (state["step"] * tokens_per_step / max(1e-9, state["train_s"])), 1),
        "tokens_per_s": round(state["step"] * tokens_per_step / max(1e-9, state["train_s"]), 1),
        "train_s": round(state["train_s"], 1),
        "peak_mem_bytes": None,
        "device": state.get("runtime"),
        "precision": None,
    }
    curve = [r for r in read_curve(run) if r["step"] <= state["step"]]
    best = min((r for r in curve if "val_loss" in r), key=lambda r: r["val_loss"])
    result.update(
        val_ppl=round(math.exp(best["val_loss"]), 2),
        test_ppl=round(math.exp(best["test_loss"]), 2),
        val_bpb=round(best["val_loss"] * targets["valid"] / math.log(2) / nbytes["valid"], 4),
        test_bpb=round(best["test_loss"] * targets["test"] / math.log(2) / nbytes["test"], 4),
    )
    plan = {
        "max_epochs": train_cfg["epochs"],
        "eval_every": train_cfg["eval_every"],
        "patience": train_cfg["patience"],
        "regularisation": {str(mcfg.dim): {"dropout": mcfg.dropout, "weight_decay": train_cfg["weight_decay"]}},
    }
    summary = summarize(result, curve, plan)
    summary["finished"] = False
    return summary
