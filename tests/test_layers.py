"""The package is a strict stack: no import circle (imports inside functions included), no upward import, and no
private name imported across modules. Parsed with `ast`, so a lazy import cannot hide an edge."""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

# Bottom to top; a module may import only from its own layer or the ones listed before it.
LAYERS = [
    ["rag.config"],
    ["rag.lexicon"],
    ["rag.data"],
    ["rag.encoders"],
    ["rag.models"],
    ["rag.reduce"],
    ["rag.index"],
    ["rag.retrieve"],
    ["rag.screen"],
    ["rag.answer"],
    ["rag.agent", "rag.studies", "rag.bench"],
    ["rag.training"],
    ["rag.serve", "rag.commands", "cli", "rag.api", "rag"],  # "rag" (the package's front door) matches itself only
]
BESIDE = {"rag.lm": ["rag.config"]}  # the LM sweep sits beside the stack and reads only the bottom


def modules() -> dict[str, Path]:
    out = {"cli": REPO / "cli.py"}
    for path in (REPO / "rag").rglob("*.py"):
        name = ".".join(path.relative_to(REPO).with_suffix("").parts)
        out[name.removesuffix(".__init__")] = path
    return out


def import_edges(mods: dict[str, Path]) -> list[tuple[str, str, str | None]]:
    """(importer, imported module, imported name or None) for every import statement anywhere in a module."""
    edges = []
    for name, path in mods.items():
        is_pkg = path.name == "__init__.py"
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                edges += [(name, a.name, None) for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = name.split(".")[: len(name.split(".")) - node.level + (1 if is_pkg else 0)]
                    base = ".".join(parts + ([base] if base else []))
                for a in node.names:
                    full = f"{base}.{a.name}"
                    edges.append((name, full, None) if full in mods else (name, base, a.name))
    return [(a, b, n) for a, b, n in edges if b == "cli" or b == "rag" or b.startswith("rag.")]


def owner(module: str, mods: dict[str, Path]) -> str:
    """The nearest existing module for a dotted name (rag.encoders.cache.slug -> rag.encoders.cache)."""
    while module not in mods:
        module = module.rpartition(".")[0]
    return module


def layer_of(module: str) -> int | str:
    best, rank = "", None
    for i, group in enumerate(LAYERS):
        for prefix in group:
            exact_only = prefix == "rag"
            if (module == prefix or (not exact_only and module.startswith(prefix + "."))) and len(prefix) > len(best):
                best, rank = prefix, i
    for prefix in BESIDE:
        if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > len(best):
            best, rank = prefix, prefix
    return rank


def test_no_import_circle():
    mods = modules()
    graph: dict[str, set[str]] = {}
    for a, b, _ in import_edges(mods):
        b = owner(b, mods)
        if a != b:
            graph.setdefault(a, set()).add(b)
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(v: str) -> None:
        state[v] = 1
        stack.append(v)
        for w in sorted(graph.get(v, ())):
            if state.get(w) == 1:
                raise AssertionError("import circle: " + " -> ".join(stack[stack.index(w) :] + [w]))
            if w not in state:
                visit(w)
        stack.pop()
        state[v] = 2

    for v in sorted(mods):
        if v not in state:
            visit(v)


def test_no_private_name_is_imported_across_modules():
    bad = [
        f"{a} imports {b}.{n}"
        for a, b, n in import_edges(modules())
        if n and n.startswith("_") and not n.startswith("__")
    ]
    assert not bad, bad


def test_every_import_points_down_the_stack():
    mods = modules()
    unplaced = sorted(m for m in mods if layer_of(m) is None)
    assert not unplaced, f"modules missing from LAYERS: {unplaced}"
    upward = []
    for a, b, _ in import_edges(mods):
        la, lb = layer_of(a), layer_of(owner(b, mods))
        if la == lb or lb == 0:  # the same layer (or package), or the bottom, which everything may read
            continue
        if isinstance(la, str):  # beside the stack: only what BESIDE allows
            if owner(b, mods) not in BESIDE[la] and not owner(b, mods).startswith(la):
                upward.append(f"{a} -> {b}")
        elif isinstance(lb, str):  # the side module is reached from the top layer (its commands) only
            if la != len(LAYERS) - 1:
                upward.append(f"{a} -> {b}")
        elif lb > la:
            upward.append(f"{a} -> {b}")
    assert not upward, upward
