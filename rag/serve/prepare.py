"""Model files that the first request would otherwise make, made before `rag serve` listens (with its warm-up on).

The screen verifier's ONNX export (SmolLM2's trunk) imports torch and took 86 s inside the first /ask that
flagged a passage, and the server's RSS went from 0.9 to 2.6 GB for good. It runs here in a child process; the
server then loads the exported file (torch-free, about 760 MB and 1.4 s) before it listens, so the memory a burst
finds is the warm level and no request waits for the load. An export or load that fails is reported in one line
and left to the first request that needs it, as before.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from rag.agent.prepare import export_in_child


@dataclass(frozen=True)
class Export:
    name: str
    target: Callable[[], Path | None]  # the file the export writes (None: the model is not shipped here)
    code: str  # Python run in the child process to write it
    load: Callable[[], object] | None = None  # then loads it in this process (a built_once builder)


def verifier_target() -> Path | None:
    from rag.models.onnx_sessions import onnx_file
    from rag.screen.verifier import RETRAIN, WEIGHTS, WEIGHTS_INFO

    if not (WEIGHTS.exists() and WEIGHTS_INFO.exists()):
        return None
    return onnx_file("screen-verifier", WEIGHTS, RETRAIN)


def load_verifier() -> None:
    from rag.screen.verifier import default_verifier, trunk

    if default_verifier() is not None:
        trunk()


EXPORTS = (
    Export(
        "the screen verifier's ONNX export",
        verifier_target,
        "from rag.screen.verifier import trunk; trunk()",
        load_verifier,
    ),
)


def prepare_models(say: Callable[[str], None] = print, exports=EXPORTS) -> list[str]:
    """Run each missing export in a child process, then load each here; the names of those that failed (each
    said in one line)."""
    failed = []
    for export in exports:
        target = export.target()
        if target is None:
            continue
        if target.exists():
            load(export, say, failed)
            continue
        say(f"preparing {export.name} before serving (once per cache; a few minutes)")
        ok, why = export_in_child(export.code, export.target)
        if not ok:
            failed.append(export.name)
            say(f"warning: {export.name} failed ({why[:200]}); the first request that needs it makes it instead")
            continue
        load(export, say, failed)
    return failed


def load(export: Export, say: Callable[[str], None], failed: list[str]) -> None:
    if export.load is None:
        return
    try:
        export.load()
    except Exception as exc:  # the first request that needs it tries again, and reports its own error
        failed.append(export.name)
        say(
            f"warning: loading {export.name} failed ({type(exc).__name__}: {str(exc)[:200]}); left to the first request"
        )
