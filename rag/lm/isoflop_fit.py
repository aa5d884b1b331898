"""Fits of an iso-FLOP grid (rag.lm.isoflop): per-budget parabolas in ln d, the d_opt(C) and loss(C) power laws,
the seed comparison and the LR check, over the rows rag.lm.isoflop_summary.collect reads."""

from __future__ import annotations

import math


def fit_parabola(ds: list[float], ys: list[float], sigma: list[float] | None = None, level: float = 0.95) -> dict:
    """y = a + b·x + c·x², x = ln d, by (weighted) least squares; the vertex d* = exp(-b/2c) and min y.

    Intervals from the coefficient covariance by the delta method with a Student t quantile (residual variance
    from the fit, n-3 degrees of freedom; with sigma given and n = 3, sigma alone), reported as
    d* x/÷ exp(t·se(ln d*)) and y* ± t·se(y*).
    """
    import numpy as np
    from scipy import stats

    x, y = np.log(np.asarray(ds, float)), np.asarray(ys, float)
    n = len(x)
    if n < 3:
        return {"ok": False, "why": f"{n} points (a parabola needs 3)"}
    w = np.ones(n) if sigma is None else 1 / np.maximum(np.asarray(sigma, float), 1e-6) ** 2
    X = np.stack([np.ones(n), x, x * x], axis=1)
    W = np.diag(w)
    A = X.T @ W @ X
    coef = np.linalg.solve(A, X.T @ W @ y)
    resid = y - X @ coef
    dof = n - 3
    if dof > 0:
        s2 = float(resid @ W @ resid) / dof
        if sigma is not None:
            s2 = max(s2, 1.0)  # never narrower than the seed noise says
    else:
        s2 = 1.0 if sigma is not None else float("nan")
    cov = s2 * np.linalg.inv(A)
    a, b, c = coef
    out = {
        "ok": bool(c > 0),
        "n": n,
        "dof": dof,
        "coef": [float(a), float(b), float(c)],
        "cov": cov.tolist(),
        "rmse": float(np.sqrt(np.mean(resid**2))),
    }
    if c <= 0:
        out["why"] = "the fitted parabola opens downwards: no minimum"
        return out
    xs = -b / (2 * c)
    ymin = a - b * b / (4 * c)
    g_x = np.array([0, -1 / (2 * c), b / (2 * c * c)])
    g_y = np.array([1, -b / (2 * c), b * b / (4 * c * c)])
    se_x, se_y = float(np.sqrt(g_x @ cov @ g_x)), float(np.sqrt(g_y @ cov @ g_y))
    t = float(stats.t.ppf(0.5 + level / 2, dof)) if dof > 0 else float(stats.norm.ppf(0.5 + level / 2))
    inside = bool(min(x) < xs < max(x))
    below = int((x < xs).sum())
    above = int((x > xs).sum())
    out.update(
        {
            "d_opt": float(math.exp(xs)),
            "ln_d_opt": float(xs),
            "se_ln_d": se_x,
            "d_lo": float(math.exp(xs - t * se_x)),
            "d_hi": float(math.exp(xs + t * se_x)),
            "y_opt": float(ymin),
            "se_y": se_y,
            "y_lo": float(ymin - t * se_y),
            "y_hi": float(ymin + t * se_y),
            "t": t,
            "level": level,
            "inside_grid": inside,
            "points_below": below,
            "points_above": above,
            "bracketed": below >= 2 and above >= 2,
        }
    )
    return out


def fit_power(cs: list[float], ys: list[float], se_ln: list[float], draws: int = 4000, seed: int = 0) -> dict:
    """ln y = ln A + k·ln C by least squares; interval of k and A from draws of ln y ~ N(ln y, se_ln) per point
    (the per-budget fit intervals), combined with the fit's own residual scatter where there are spare points."""
    import numpy as np

    lc, ly, se = np.log(np.asarray(cs, float)), np.log(np.asarray(ys, float)), np.asarray(se_ln, float)
    if len(lc) < 2:
        return {"ok": False, "why": "fewer than 2 budgets with a fitted optimum"}
    k, lnA = np.polyfit(lc, ly, 1)
    rng = np.random.default_rng(seed)
    resid = ly - (lnA + k * lc)
    extra = float(np.sqrt(np.sum(resid**2) / (len(lc) - 2))) if len(lc) > 2 else 0.0
    noise = np.sqrt(se**2 + extra**2)
    ks = np.array([np.polyfit(lc, ly + rng.normal(0, noise), 1)[0] for _ in range(draws)])
    return {
        "ok": True,
        "k": float(k),
        "A": float(np.exp(lnA)),
        "k_lo": float(np.percentile(ks, 2.5)),
        "k_hi": float(np.percentile(ks, 97.5)),
        "residual_sd_ln": extra,
        "n": len(lc),
        "formula": "y = A * C^k",
        "interval": "95% of 4000 draws of each point within its interval",
    }


FIT_WINDOW = 2  # the parabola is fitted to the best measured d and up to this many grid neighbours on each side


def at_rule(rows: list[dict]) -> list[dict]:
    """The runs at the LR rule (factor 1)."""
    return [r for r in rows if r["factor"] == 1.0]


def at_chosen_lr(rows: list[dict], choose) -> list[dict]:
    """Each (budget, d) at the LR factor choose({factor: [validation bpb of each seed run at it]}) picks, with every
    seed run at it."""
    out = []
    for budget, d in sorted({(r["budget"], r["dim"]) for r in rows}):
        mine = [r for r in rows if r["budget"] == budget and r["dim"] == d]
        by_factor: dict[float, list[float]] = {}
        for r in mine:
            by_factor.setdefault(r["factor"], []).append(r["val_bpb"])
        chosen = choose(by_factor)
        out += [r for r in mine if r["factor"] == chosen]
    return out


def _mean(values: list[float]) -> float:
    return sum(values) / len(values)


def at_best_lr(rows: list[dict]) -> list[dict]:
    """Each (budget, d) at its best LR factor, with every seed run at it: the factor whose runs score the lowest mean
    validation bpb (a scan runs one seed per factor; a factor run with more seeds is judged by their mean, so one
    lucky seed at the edge of stability does not choose it)."""
    return at_chosen_lr(rows, lambda runs: min(runs, key=lambda f: _mean(runs[f])))


def at_most_seeded(rows: list[dict]) -> list[dict]:
    """Each (budget, d) at the LR factor it was run with the most seeds (ties: the lowest mean validation bpb), with
    every seed run at it: where a scan's one lucky seed sets at_best_lr, this is the LR the seeds compare widths at."""
    return at_chosen_lr(rows, lambda runs: min(runs, key=lambda f: (-len(runs[f]), _mean(runs[f]))))


def grid_fits(rows: list[dict]) -> dict:
    """Per budget: parabola fits of validation and test bits per byte against ln d (one LR factor per (budget, d):
    pass at_rule(rows) or at_best_lr(rows); several seeds averaged, their spread as weights) over the best measured
    d and up to FIT_WINDOW neighbours on each side (a parabola in ln d describes the bottom of the curve, not its far
    flanks); then d_opt(C) and loss(C) power laws over the budgets whose fitted optimum lies between measured d."""
    import numpy as np

    per_budget = {}
    for budget in sorted({r["budget"] for r in rows}):
        mine = [r for r in rows if r["budget"] == budget]
        dims = sorted({r["dim"] for r in mine})
        pts = []
        for d in dims:
            seeds = [r for r in mine if r["dim"] == d]
            v = np.array([r["val_bpb"] for r in seeds])
            t = np.array([r["test_bpb"] for r in seeds])
            pts.append(
                {
                    "dim": d,
                    "factor": seeds[0]["factor"],
                    "n_seeds": len(seeds),
                    "val_bpb": float(v.mean()),
                    "test_bpb": float(t.mean()),
                    "val_sd": float(v.std(ddof=1)) if len(v) > 1 else None,
                    "test_sd": float(t.std(ddof=1)) if len(t) > 1 else None,
                    "tokens": seeds[0]["tokens"],
                    "params": seeds[0]["params"],
                    "train_flops": seeds[0]["train_flops"],
                }
            )
        entry = {"budget": budget, "points": pts}
        if pts:
            i = min(range(len(pts)), key=lambda j: pts[j]["val_bpb"])
            window = pts[max(0, i - FIT_WINDOW) : i + FIT_WINDOW + 1]
            for p in pts:
                p["in_fit"] = p in window
            pts_all, pts = pts, window
        if len(pts) >= 3:
            # seed noise: where several seeds exist, one pooled sd for every point (sd of a mean: / sqrt(n))
            sds = [p["val_sd"] for p in pts if p["val_sd"] is not None]
            pooled = float(np.sqrt(np.mean(np.square(sds)))) if sds else None
            sigma = [pooled / math.sqrt(p["n_seeds"]) for p in pts] if pooled else None
            entry["seed_sd_val_bpb"] = pooled
            entry["val"] = fit_parabola([p["dim"] for p in pts], [p["val_bpb"] for p in pts], sigma)
            tsds = [p["test_sd"] for p in pts if p["test_sd"] is not None]
            tpooled = float(np.sqrt(np.mean(np.square(tsds)))) if tsds else None
            tsigma = [tpooled / math.sqrt(p["n_seeds"]) for p in pts] if tpooled else None
            entry["test"] = fit_parabola([p["dim"] for p in pts], [p["test_bpb"] for p in pts], tsigma)
            best = min(pts, key=lambda p: p["val_bpb"])
            entry["best_measured"] = best
        if pts:
            entry["points"] = pts_all
        per_budget[f"{budget:g}"] = entry
    # the power laws use every budget whose fitted optimum lies between measured d (at least one each side);
    # `bracketed` (two each side) is reported per budget and listed here
    fitted = [
        e
        for e in per_budget.values()
        if e.get("val", {}).get("ok") and e["val"]["inside_grid"] and e["val"]["se_ln_d"] == e["val"]["se_ln_d"]
    ]
    scaling = {
        "budgets": [e["budget"] for e in fitted],
        "bracketed": [e["budget"] for e in fitted if e["val"]["bracketed"]],
    }
    if len(fitted) >= 2:
        cs = [e["budget"] for e in fitted]
        # each point drawn with the spread of its own 95% interval (Student t on the fit's few degrees of freedom)
        sd_ln_d = [(math.log(e["val"]["d_hi"]) - math.log(e["val"]["d_lo"])) / (2 * 1.96) for e in fitted]
        scaling["d_opt"] = fit_power(cs, [e["val"]["d_opt"] for e in fitted], sd_ln_d)
        for split in ("val", "test"):
            pts = [e for e in fitted if e.get(split, {}).get("ok") and e[split]["y_lo"] == e[split]["y_lo"]]
            if len(pts) >= 2:
                scaling[f"{split}_bpb"] = fit_power(
                    [e["budget"] for e in pts],
                    [e[split]["y_opt"] for e in pts],
                    [(e[split]["y_hi"] - e[split]["y_lo"]) / (2 * 1.96) / e[split]["y_opt"] for e in pts],
                )
    return {"budgets": per_budget, "scaling": scaling}


def seed_comparison(rows: list[dict]) -> list[dict]:
    """Where a budget has >= 2 seeds at >= 2 d (one LR factor per (budget, d), as grid_fits): the best mean d
    against each other multi-seed d (Welch t-test on validation and test bpb), so one can say whether the best d
    is distinguishable from its neighbours."""
    import numpy as np
    from scipy import stats

    out = []
    for budget in sorted({r["budget"] for r in rows}):
        by_d: dict[int, list[dict]] = {}
        for r in rows:
            if r["budget"] == budget:
                by_d.setdefault(r["dim"], []).append(r)
        multi = {d: rs for d, rs in by_d.items() if len(rs) >= 2}
        if len(multi) < 2:
            continue
        best = min(multi, key=lambda d: np.mean([r["val_bpb"] for r in multi[d]]))
        for d in sorted(multi):
            if d == best:
                continue
            row = {"budget": budget, "best_dim": best, "dim": d}
            for split in ("val", "test"):
                a = np.array([r[f"{split}_bpb"] for r in multi[best]])
                b = np.array([r[f"{split}_bpb"] for r in multi[d]])
                t, pval = stats.ttest_ind(b, a, equal_var=False)
                row[split] = {
                    "best_mean": float(a.mean()),
                    "best_sd": float(a.std(ddof=1)),
                    "n_best": len(a),
                    "mean": float(b.mean()),
                    "sd": float(b.std(ddof=1)),
                    "n": len(b),
                    "diff": float(b.mean() - a.mean()),
                    "t": float(t),
                    "p": float(pval),
                }
            out.append(row)
    return out


def lr_table(rows: list[dict]) -> list[dict]:
    """The LR check: every (budget, d) run at two LR factors or more; each factor's validation bpb is the mean over
    the seeds run at it (as at_best_lr judges it); is the rule (x1) the best, and by how much not."""
    table = []
    for budget, d in sorted({(r["budget"], r["dim"]) for r in rows}):
        by_factor: dict[float, list[dict]] = {}
        for r in rows:
            if r["budget"] == budget and r["dim"] == d:
                by_factor.setdefault(r["factor"], []).append(r)
        factors = sorted(by_factor)
        if len(factors) < 2:  # one LR is not a scan
            continue
        means = {f: round(sum(r["val_bpb"] for r in by_factor[f]) / len(by_factor[f]), 4) for f in factors}
        best = min(factors, key=means.get)
        table.append(
            {
                "budget": budget,
                "dim": d,
                "factors": factors,
                "lrs": [by_factor[f][0]["lr"] for f in factors],
                "val_bpb": [means[f] for f in factors],
                "seeds": [len(by_factor[f]) for f in factors],
                "best_factor": best,
                "best_val_bpb": means[best],
                "rule_val_bpb": means.get(1.0),
                "rule_gap_bpb": round(means[1.0] - means[best], 4) if 1.0 in means else None,
                "best_at_edge": best in (factors[0], factors[-1]),
            }
        )
    return table
