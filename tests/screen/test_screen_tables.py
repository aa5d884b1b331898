"""The screen's word tables and grammars are data files (rag/screen/tables/*.toml), one per module: each entry is a
regular expression or a piece of one (joined into the rules by the module), and each is used by its module."""

from __future__ import annotations

import importlib

import pytest

from rag.screen.tables import TABLES, table


@pytest.mark.parametrize("name", sorted(p.stem for p in TABLES.glob("*.toml")))
def test_every_table_entry_is_text_that_its_module_reads(name):
    entries, module = table(name), importlib.import_module(f"rag.screen.{name}")
    assert entries
    for key, value in entries.items():
        pieces = list(value.values()) if isinstance(value, dict) else [value]
        assert pieces and all(isinstance(p, str) and p for p in pieces), key
        assert hasattr(module, key), f"{key} in tables/{name}.toml is read by no name of rag.screen.{name}"


def test_the_rules_read_their_words_from_the_tables():
    from rag.screen import languages, rules

    assert languages.SEND_TO == table("languages")["SEND_TO"]
    assert rules.DANGER == table("rules")["DANGER"]
    assert languages.RULES_IN_OTHER_LANGUAGES[0] == next(iter(table("languages")["RULES_IN_OTHER_LANGUAGES"].items()))
