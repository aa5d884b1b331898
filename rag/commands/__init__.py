"""Typer command groups. They parse options, call the library and render results; no pipeline logic here."""
