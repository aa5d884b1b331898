#!/usr/bin/env python
"""The demo page in headless chromium: page load to the first streamed agent step, and screenshots of its views.

    .venv/bin/python scripts/demo_page.py [--runs 5] [--shots docs/demo] [--widths 1400,800]

Starts `rag serve` (builtin corpus, warm default retriever, builds on) on a free 127.0.0.1 port, then loads
/?q=...&run=1 RUNS times, each in a fresh tab session, and prints performance.now() at the first `step` event
(milliseconds from navigation start), at /config, and at the answer. With --shots, saves ask.png, compare.png
and study.png (palette PNGs) there at the first --widths, and ask-<w>.png, ... at each other width. Needs chromium + chromedriver (apt-get install chromium chromium-driver).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import quote

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from rag.bench.server_process import free_port, start_server_process, stop_server_process, wait_healthy  # noqa: E402

QUESTION = "What does the embedding dimension control, and how many parameters does a 50k x 768 table have?"
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--window-size=1280,900",
    "--hide-scrollbars",
)


def chromium(profile: Path):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for flag in (*FLAGS, f"--user-data-dir={profile}"):
        options.add_argument(flag)
    return webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)


def wait(driver, script: str, timeout: float = 180.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = driver.execute_script(script)
        if value:
            return value
        time.sleep(0.05)
    raise TimeoutError(script)


def first_step(driver, url: str) -> dict:
    driver.get("about:blank")
    driver.get(f"{url}/?q={quote(QUESTION)}&run=1#ask")
    wait(driver, "return ['done', 'error'].includes(document.body.dataset.askState)")
    times = driver.execute_script(
        "return {...window.demoTimes, answer: performance.now(), state: document.body.dataset.askState}"
    )
    if times["state"] != "done":
        raise RuntimeError(driver.find_element("id", "ask-status").text)
    return times


def shot(driver, path: Path) -> None:
    from PIL import Image

    driver.save_screenshot(str(path))
    Image.open(path).convert("RGB").quantize(colors=128).save(path, optimize=True)
    print(f"wrote {path} ({path.stat().st_size // 1024} KiB)")


def screenshots(driver, url: str, out: Path, suffix: str = "") -> None:
    out.mkdir(parents=True, exist_ok=True)
    first_step(driver, url)
    driver.execute_script("document.getElementById('cite-1')?.scrollIntoView({block: 'nearest'})")
    shot(driver, out / f"ask{suffix}.png")
    driver.get(url + "/#compare")
    wait(driver, "return document.body.dataset.ready")
    for _ in range(2):  # the first run may build column B's index; the screenshot shows the second
        driver.execute_script("document.body.dataset.compareState = ''")
        driver.find_element("id", "compare-run").click()
        wait(driver, "return ['done', 'error'].includes(document.body.dataset.compareState)")
    shot(driver, out / f"compare{suffix}.png")
    driver.get(url + "/#study")
    wait(driver, "return document.querySelectorAll('#chart-bytes .role-mark.mark-symbol path').length > 0", 60)
    shot(driver, out / f"study{suffix}.png")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--shots", type=Path, default=None)
    parser.add_argument("--widths", default="1280", help="window widths for the screenshots, e.g. 1400,800")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="rag-demo-page-"))
    port, log = free_port(), tmp / "server.log"
    proc = start_server_process(port, log, ["--build-missing"])
    url, driver = f"http://127.0.0.1:{port}", None
    try:
        t0 = time.perf_counter()
        wait_healthy(url, proc, timeout=600, log_path=log)
        print(f"rag serve healthy (default retriever warm) after {time.perf_counter() - t0:.1f} s; log: {log}")
        driver = chromium(tmp / "profile")
        runs = [first_step(driver, url) for _ in range(args.runs)]
        for i, r in enumerate(runs, 1):
            print(
                f"run {i}: /config read {r['config']:.0f} ms, first step {r['firstStep']:.0f} ms, "
                f"answer {r['answer']:.0f} ms (from navigation start)"
            )
        steps = [r["firstStep"] for r in runs]
        print(
            f"page load to first streamed step: first load {steps[0]:.0f} ms; median of {len(steps)} "
            f"{statistics.median(steps):.0f} ms (min {min(steps):.0f}, max {max(steps):.0f})"
        )
        if args.shots:
            for i, width in enumerate(int(w) for w in args.widths.split(",")):
                driver.set_window_size(width, 1000)
                screenshots(driver, url, args.shots, "" if i == 0 else f"-{width}")
    finally:
        if driver is not None:
            driver.quit()
        stop_server_process(proc)


if __name__ == "__main__":
    main()
