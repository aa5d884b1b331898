"""Small numeric helpers shared by the sweep and its report (no torch, no plotting)."""

from __future__ import annotations

import math


def fit_exponent(xs: list[float], ys: list[float]) -> float:
    """Least-squares slope of log y against log x (y ~ x^k)."""
    pts = [(math.log(x), math.log(y)) for x, y in zip(xs, ys) if x > 0 and y > 0]
    if len(pts) < 2:
        return float("nan")
    mx = sum(p[0] for p in pts) / len(pts)
    my = sum(p[1] for p in pts) / len(pts)
    var = sum((p[0] - mx) ** 2 for p in pts)
    return sum((p[0] - mx) * (p[1] - my) for p in pts) / var if var else float("nan")


def fmt_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024:
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"


def fmt_count(n: float) -> str:
    """1234567 -> '1.23M'; 2.5e13 -> '25.0T' (FLOPs and token counts in titles)."""
    for unit, scale in (("P", 1e15), ("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(n) >= scale:
            return f"{n / scale:.3g}{unit}"
    return f"{n:.0f}"


def bits_per_byte(nats_per_token: float, tokens: int, n_bytes: int) -> float:
    """Total nats over `tokens` targets turned into bits per byte of the text they cover."""
    return nats_per_token * tokens / (math.log(2) * max(1, n_bytes))


def budget_title(plan: dict) -> str:
    """How the plots name the budget: mode and size."""
    if plan.get("budget") == "compute":
        return f"compute-matched, {fmt_count(plan['flops_per_d'])}FLOPs per d"
    tokens = set(plan.get("tokens_per_d", {}).values())
    size = f"{fmt_count(tokens.pop())} tokens per d" if len(tokens) == 1 else "tokens per d vary"
    return f"token-matched, {size}"
