"""`rag serve --watch` cannot die of a bad file: a symlink loop in a watched folder is skipped, any exception while
updating is counted and logged once, and the loop goes on to index later edits; `Watcher.health()` tells."""

from __future__ import annotations

import logging

from conftest import wait_until

from rag.retrieve.pool import RetrieverPool
from rag.serve.watch import Watcher


class FailingPool(RetrieverPool):
    """A pool whose lock fails the first `failures` times it is taken (a stand-in for any unexpected error)."""

    def __init__(self, failures: int):
        self.failures = failures
        super().__init__(build_missing=False)

    @property
    def lock(self):
        if self.failures > 0:
            self.failures -= 1
            raise RuntimeError("unexpected")
        return self._lock

    @lock.setter
    def lock(self, value):
        self._lock = value


def watched(tmp_path):
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "a.md").write_text("# Gears\n\nGears mesh.\n")
    return folder


def test_the_watcher_goes_on_after_an_exception_and_says_so(tmp_path):
    folder = watched(tmp_path)
    watcher = Watcher({"notes": str(folder)}, FailingPool(failures=1), debounce_ms=50).start()
    try:
        (folder / "b.md").write_text("# Pulleys\n\nPulleys lift.\n")
        wait_until(lambda: watcher.errors == 1, 60, "the failed update to be counted")
        health = watcher.health()
        assert health["running"] and not health["ok"] and health["failing"] == ["notes"]
        assert health["last_error"] == "notes: RuntimeError"
        (folder / "c.md").write_text("# Levers\n\nLevers pivot.\n")
        wait_until(lambda: watcher.updates >= 1, 60, "a later edit to be indexed")
        assert watcher.health()["ok"] and watcher.health()["errors"] == 1
    finally:
        watcher.stop()
    assert not watcher.health()["running"]


def test_a_symlink_loop_in_a_watched_folder_does_not_stop_updates(tmp_path):
    folder = watched(tmp_path)
    watcher = Watcher({"notes": str(folder)}, RetrieverPool(build_missing=False), debounce_ms=50).start()
    try:
        (folder / "loop.md").symlink_to(folder / "loop.md")
        (folder / "b.md").write_text("# Pulleys\n\nPulleys lift.\n")
        wait_until(lambda: watcher.updates >= 1, 60, "the folder to be updated")
        assert watcher.health()["ok"] and watcher.errors == 0
    finally:
        watcher.stop()


def test_a_repeated_failure_is_logged_once(tmp_path, caplog):
    folder = watched(tmp_path)
    watcher = Watcher({"notes": str(folder)}, FailingPool(failures=3))
    with caplog.at_level(logging.WARNING, logger="rag.serve"):
        for _ in range(3):
            watcher.handle({str(folder / "a.md")})
    assert watcher.errors == 3 and watcher.updates == 0
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "notes" in warnings[0].getMessage() and str(folder) not in warnings[0].getMessage()
    watcher.handle({str(folder / "a.md")})
    assert watcher.updates == 1 and watcher.health()["failing"] == []


def test_a_symlink_loop_is_warned_once_across_changes(tmp_path, caplog):
    folder = watched(tmp_path)
    (folder / "loop.md").symlink_to(folder / "loop.md")
    watcher = Watcher({"notes": str(folder)}, RetrieverPool(build_missing=False))
    with caplog.at_level(logging.WARNING, logger="rag.serve"):
        for n in range(3):
            (folder / f"n{n}.md").write_text(f"# Note {n}\n\nText {n}.\n")
            watcher.handle({str(folder / f"n{n}.md")})
    assert watcher.updates == 3 and watcher.errors == 0
    loops = [r.getMessage() for r in caplog.records if "symlink loop" in r.getMessage()]
    assert loops == ["watch: notes: skipped loop.md: symlink loop; skipped"]
