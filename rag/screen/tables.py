"""The screen's word tables and grammars as data: one TOML file per module under rag/screen/tables/, read once."""

from __future__ import annotations

import tomllib
from functools import cache
from pathlib import Path

TABLES = Path(__file__).resolve().parent / "tables"


@cache
def table(name: str) -> dict:
    """The entries of rag/screen/tables/<name>.toml (regular expressions as TOML literal strings, exact)."""
    return tomllib.loads((TABLES / f"{name}.toml").read_text(encoding="utf-8"))
