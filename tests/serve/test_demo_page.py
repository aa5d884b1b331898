"""The demo page at / in a real browser: Debian's chromium driven by selenium against a real `rag serve` (child
process, free 127.0.0.1 port, real MiniLM + FAISS). Skipped, with the reason, where chromium or selenium is absent
(`make test` installs both where apt-get can)."""

from __future__ import annotations

import csv
import json
import os
import shutil
from pathlib import Path
from urllib.parse import quote

import httpx
import pytest
from conftest import wait_until
from serve_helpers import inprocess_server  # noqa: F401  (a fixture)

from rag.bench.server_process import free_port, start_server_process, stop_server_process, wait_healthy
from rag.studies.report import write_csv

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
DRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
HOSTILE = "<script>alert(1)</script> and [x](javascript:alert(1)) sit inside this zorblax passage."
QUESTION = (
    "What does the embedding dimension control, and how does the parameter count of an embedding table grow with d?"
)
# SciFact nDCG@10 of MiniLM with PCA (docs/retrieval): a small study in the `rag eval retrieval` CSV layout
STUDY = [(32, 0.453), (64, 0.540), (128, 0.611), (256, 0.637), (384, 0.645)]

pytestmark = pytest.mark.slow


def need_browser() -> None:
    if not (os.path.exists(CHROMIUM) and os.path.exists(DRIVER)):
        pytest.skip(
            "chromium and chromedriver are not installed (apt-get install chromium chromium-driver; "
            "make test does it where apt-get is available)"
        )
    try:
        import selenium  # noqa: F401
    except ImportError:
        pytest.skip("selenium is not installed (pip install selenium; it is in the dev extra)")


def browser_or_skip(tmp: Path):
    need_browser()
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-dev-shm-usage",
        "--window-size=1400,1000",
        f"--user-data-dir={tmp / 'profile'}",
    ):
        options.add_argument(flag)
    return webdriver.Chrome(service=Service(DRIVER), options=options)


def write_study(folder: Path) -> Path:
    rows = [
        {
            "dataset": "scifact",
            "encoder": "minilm",
            "reduce": "pca",
            "dim": d,
            "index": "flat",
            "retriever": "dense",
            "device": "cpu",
            "ndcg@10": q,
            "bytes_per_vector": 4.0 * d,
            "index_bytes": 4 * d * 5183,
        }
        for d, q in STUDY
    ]
    rows.append({**rows[1], "index": "ivf-pq", "ndcg@10": 0.47, "bytes_per_vector": 16.0})
    folder.mkdir(parents=True)
    write_csv(rows, folder / "results.csv")
    return folder


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """A served page: builds on, the default retriever warm, a generated folder corpus `hostile` and a study folder."""
    need_browser()  # before paying for a server
    root = tmp_path_factory.mktemp("demo")
    corpus = root / "hostile"
    corpus.mkdir()
    (corpus / "hostile.txt").write_text(HOSTILE + "\n", encoding="utf-8")
    (corpus / "plain.txt").write_text("Gears mesh with other gears.\n\nFlywheels store rotational energy.\n")
    write_study(root / "study" / "tiny")
    port, log = free_port(), root / "server.log"
    proc = start_server_process(
        port,
        log,
        ["--build-missing", "--corpus", f"hostile={corpus}"],
        env={"RAG_INDEX_DIR": str(root / "indexes"), "RAG_STUDY_DIR": str(root / "study")},
    )
    url = f"http://127.0.0.1:{port}"
    driver = None
    try:
        wait_healthy(url, proc, timeout=300, log_path=log)
        driver = browser_or_skip(root)
        yield {"url": url, "driver": driver, "root": root}
    finally:
        if driver is not None:
            driver.quit()
        stop_server_process(proc)


def by_css(driver, css):
    from selenium.webdriver.common.by import By

    return driver.find_elements(By.CSS_SELECTOR, css)


def open_page(site, path="/"):
    driver = site["driver"]
    driver.get(site["url"] + path)
    wait_until(lambda: driver.execute_script("return document.body.dataset.ready === '1'"), 30, "the pickers")
    return driver


def choose(driver, select_id, value):
    from selenium.webdriver.support.ui import Select

    Select(by_css(driver, f"#{select_id}")[0]).select_by_value(value)


def test_page_is_served_offline_and_open(site):
    page = httpx.get(site["url"] + "/")
    assert page.status_code == 200 and "/static/app.js" in page.text
    assert "script-src 'self'" in page.headers["content-security-policy"]
    assert "http://" not in page.text and "https://" not in page.text  # nothing from a CDN
    for asset in ("app.js", "style.css", "vendor/vega.min.js", "vendor/vega-lite.min.js", "vendor/vega-embed.min.js"):
        assert httpx.get(f"{site['url']}/static/{asset}").status_code == 200, asset
    for sneaky in (
        "/static/../demo.py",
        "/static/%2e%2e/demo.py",
        "/static/..%2fpolicy.py",
        "/static/vendor/../../app.py",
    ):
        response = httpx.get(site["url"] + sneaky)
        assert response.status_code == 404 and "import" not in response.text, sneaky


def test_ask_streams_steps_then_the_cited_answer(site):
    driver = open_page(site, f"/?q={quote(QUESTION)}&run=1#ask")
    wait_until(
        lambda: driver.execute_script("return document.body.dataset.askState === 'done'"),
        180,
        "the streamed answer (status: %s)" % driver.execute_script("return document.body.dataset.askState"),
    )
    nodes = [li.get_attribute("data-node") for li in by_css(driver, "#ask-steps li")]
    assert nodes[0] == "analyze" and "retrieve" in nodes and "grade" in nodes and nodes[-1] == "answer", nodes
    times = driver.execute_script("return window.demoTimes")
    assert 0 < times["firstStep"] and times["config"] < times["firstStep"]
    cites = by_css(driver, "#ask-answer a.cite")
    assert cites, driver.find_element("id", "ask-answer").text
    for cite in cites:
        target = by_css(driver, "#" + cite.get_attribute("href").split("#", 1)[1])
        assert len(target) == 1 and target[0].tag_name == "li"
        text = target[0].find_element("css selector", ".text").text
        meta = target[0].find_element("css selector", ".meta").text
        assert len(text) > 40 and "score" in meta and ".md" in meta  # passage text and its source file
    assert "V·d" in driver.find_element("id", "ask-answer").text  # the count the corpus states
    out = Path(os.environ.get("RAG_DEMO_TIMES", site["root"] / "first_step.json"))
    out.write_text(json.dumps({"first_step_ms": round(times["firstStep"]), "config_ms": round(times["config"])}))
    print(f"\npage load to first streamed step: {times['firstStep']:.0f} ms (config read at {times['config']:.0f} ms)")


def test_side_by_side_marks_overlap_latency_and_index_size(site):
    driver = open_page(site, "/#compare")
    assert driver.find_element("id", "compare-a-dim").get_attribute("value") == "384"
    # builds on, one index built: B is that index at a quarter of its width (built on request), no spelled kind
    assert driver.find_element("id", "compare-b-dim").get_attribute("value") == "96"
    assert driver.find_element("id", "compare-b-index").get_attribute("value") == "flat"
    choose(driver, "compare-b-dim", "64")
    driver.find_element("id", "compare-run").click()
    wait_until(
        lambda: driver.execute_script(
            "return document.body.dataset.compareState !== 'running' && document.body.dataset.compareState"
        ),
        180,
        "both top-10 lists",
    )
    assert driver.execute_script("return document.body.dataset.compareState") == "done", driver.find_element(
        "id", "compare-status"
    ).text
    a, b = by_css(driver, "#compare-a-list li"), by_css(driver, "#compare-b-list li")
    assert len(a) == len(b) == 10
    ids_a, ids_b = {li.get_attribute("data-id") for li in a}, {li.get_attribute("data-id") for li in b}
    shared = ids_a & ids_b
    assert {li.get_attribute("data-id") for li in a if li.get_attribute("data-shared") == "1"} == shared
    assert {li.get_attribute("data-id") for li in b if "shared" in li.get_attribute("class")} == shared
    assert driver.find_element("id", "compare-overlap").text.startswith(f"{len(shared)} of 10")
    for side, d in (("a", 384), ("b", 64)):
        facts = driver.find_element("id", f"compare-{side}-facts").text
        assert all(f"{stage} " in facts for stage in ("round trip", "encode", "dense", "total")), facts
        assert "index size" in facts and "vectors" in facts, facts
        assert f"d={d}" in driver.find_element("id", f"compare-{side}-title").text


def test_study_charts_hover_and_click_fill_the_pickers(site):
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.support.ui import Select

    driver = open_page(site, "/#study")
    wait_until(lambda: "study/tiny" in driver.find_element("id", "study-name").text, 30, "the study list")
    Select(driver.find_element("id", "study-name")).select_by_value("study/tiny")
    points = lambda chart: by_css(driver, f"#{chart} .role-mark.mark-symbol path")  # noqa: E731
    wait_until(
        lambda: len(points("chart-dim")) == len(STUDY) + 1 and len(points("chart-bytes")) == len(STUDY) + 1,
        30,
        "the chart points",
    )
    target = next(p for p in points("chart-dim") if (p.get_attribute("aria-label") or "").startswith("d (log): 128;"))
    ActionChains(driver).move_to_element(target).perform()
    tip = wait_until(lambda: by_css(driver, "#vg-tooltip-element.visible"), 10, "the tooltip")
    assert "ndcg@10" in tip[0].text and "0.611" in tip[0].text
    choose(driver, "ask-dim", "")
    target.click()
    wait_until(lambda: driver.execute_script("return location.hash") == "#ask", 10, "the switch to Ask")
    assert driver.find_element("id", "ask-dim").get_attribute("value") == "128"
    assert driver.find_element("id", "ask-retriever").get_attribute("value") == "dense"
    assert driver.find_element("id", "ask-corpus").get_attribute("value") == "scifact"
    assert "study row" in driver.find_element("id", "ask-status").text


def test_hostile_passage_text_is_shown_as_text(site):
    from selenium.common.exceptions import NoAlertPresentException

    driver = open_page(site, "/#ask")
    choose(driver, "ask-corpus", "hostile")
    choose(driver, "ask-retriever", "bm25")
    question = driver.find_element("id", "ask-question")
    question.clear()
    question.send_keys("zorblax passage script alert")
    driver.find_element("id", "ask-run").click()
    wait_until(lambda: driver.execute_script("return document.body.dataset.askState === 'done'"), 60, "the answer")
    texts = [e.text for e in by_css(driver, "#ask-citations .text")]
    assert any("<script>alert(1)</script>" in t and "[x](javascript:alert(1))" in t for t in texts), texts
    assert not by_css(driver, "main script") and not by_css(driver, "a[href^='javascript']")
    with pytest.raises(NoAlertPresentException):
        driver.switch_to.alert.text  # noqa: B018
    assert driver.execute_script("return document.querySelectorAll('#ask-citations *').length") > 0


def test_api_key_is_asked_once_per_tab(site, inprocess_server):
    key = "demo-key-" + "x" * 24
    url = inprocess_server(api_key=key, warm=[])  # another origin (port): this tab has no key stored for it
    assert httpx.get(url + "/config").status_code == 401 and httpx.get(url + "/").status_code == 200
    driver = site["driver"]
    driver.get(url + "/")
    dialog = wait_until(
        lambda: [d for d in by_css(driver, "#key-dialog") if d.get_attribute("open") is not None], 20, "the key dialog"
    )[0]
    dialog.find_element("id", "key-input").send_keys("wrong-key-wrong-key")
    dialog.find_element("id", "key-submit").click()
    wait_until(lambda: "refused" in driver.find_element("id", "key-error").text, 20, "the refusal")
    dialog.find_element("id", "key-input").send_keys(key)
    dialog.find_element("id", "key-submit").click()
    wait_until(lambda: driver.execute_script("return document.body.dataset.ready === '1'"), 20, "the pickers")
    assert driver.execute_script("return sessionStorage.getItem('rag-api-key')") == key
    assert "auth on" in driver.find_element("id", "server-note").text
    driver.refresh()  # same tab: the key is kept, no second prompt
    wait_until(lambda: driver.execute_script("return document.body.dataset.ready === '1'"), 20, "the pickers")
    assert driver.find_element("id", "key-dialog").get_attribute("open") is None


def docs_operations(driver) -> list[str]:
    return [e.text.replace("\u200b", "") for e in by_css(driver, "#swagger-ui .opblock-summary-path")]


def test_docs_renders_the_openapi_31_operations(site):
    """Swagger UI 4 showed "Unable to render this definition" for FastAPI's OpenAPI 3.1 schema."""
    driver = site["driver"]
    driver.get(site["url"] + "/docs")
    paths = wait_until(lambda: docs_operations(driver), 30, "the operations in Swagger UI")
    assert {"/search", "/ask", "/config", "/v1/models", "/v1/chat/completions"} <= set(paths), paths
    body = driver.find_element("css selector", "body").text
    assert "Unable to render" not in body and "valid version field" not in body
    assert "3.1" in driver.find_element("css selector", "#swagger-ui .info").text  # the OAS badge


def test_docs_with_a_key_asks_for_it_then_renders(site, inprocess_server):
    key = "docs-key-" + "y" * 24
    url = inprocess_server(api_key=key, warm=[])
    assert httpx.get(url + "/docs").status_code == 200 and httpx.get(url + "/openapi.json").status_code == 401
    driver = site["driver"]
    driver.get(url + "/docs")
    dialog = wait_until(
        lambda: [d for d in by_css(driver, "#key-dialog") if d.get_attribute("open") is not None], 20, "the key dialog"
    )[0]
    dialog.find_element("id", "key-input").send_keys(key)
    dialog.find_element("id", "key-submit").click()
    paths = wait_until(lambda: docs_operations(driver), 30, "the operations after the key")
    assert "/search" in paths


def test_with_builds_off_the_page_offers_what_is_built_and_says_what_builds_the_rest(
    site, inprocess_server, tmp_path, monkeypatch
):
    """Side by side's column B and a Study point's configuration led to 404s on a fresh install."""
    from selenium.webdriver.common.action_chains import ActionChains

    monkeypatch.setenv("RAG_STUDY_DIR", str(write_study(tmp_path / "study" / "tiny").parent))
    url = inprocess_server()  # builds off; the default index warm (built) and nothing else
    driver = site["driver"]
    driver.get(url + "/#compare")
    wait_until(lambda: driver.execute_script("return document.body.dataset.ready === '1'"), 30, "the pickers")
    a = {f: driver.find_element("id", f"compare-a-{f}").get_attribute("value") for f in ("dim", "index", "corpus")}
    b = {f: driver.find_element("id", f"compare-b-{f}").get_attribute("value") for f in ("dim", "index", "corpus")}
    assert a == b == {"dim": "384", "index": "flat", "corpus": "builtin"}
    offered = lambda select: [o.get_attribute("value") for o in by_css(driver, f"#{select} option")]  # noqa: E731
    assert offered("ask-index") == ["flat"] and offered("compare-b-dim") == ["", "384"]  # only what is built
    note = driver.find_element("id", "compare-note").text
    assert "Only one index of builtin is built" in note and "rag index build --corpus builtin" in note, note
    driver.find_element("id", "compare-run").click()
    wait_until(lambda: driver.execute_script("return document.body.dataset.compareState === 'done'"), 120, "A and B")

    driver.get(url + "/#study")
    wait_until(lambda: "study/tiny" in driver.find_element("id", "study-name").text, 30, "the study list")
    from selenium.webdriver.support.ui import Select

    Select(driver.find_element("id", "study-name")).select_by_value("study/tiny")
    points = lambda: by_css(driver, "#chart-dim .role-mark.mark-symbol path")  # noqa: E731
    wait_until(lambda: len(points()) == len(STUDY) + 1, 30, "the chart points")
    target = next(p for p in points() if (p.get_attribute("aria-label") or "").startswith("d (log): 128;"))
    ActionChains(driver).move_to_element(target).perform()
    target.click()
    wait_until(lambda: driver.execute_script("return location.hash") == "#ask", 10, "the switch to Ask")
    status = driver.find_element("id", "ask-status").text
    assert "not built on this server" in status and "rag index build --corpus scifact" in status, status
    assert driver.find_element("id", "ask-run").get_attribute("disabled") is not None


def write_rough_studies(root: Path) -> None:
    """A retrieval study with 15 series (3 of them identical: flat, hnsw, sq8) and long floats, and an LM study whose
    model bytes run from 8,388,608 to 536,870,912."""
    rows = []
    for s in range(12):
        for d, q in STUDY:
            rows.append({"dataset": "hotpotqa", "encoder": f"enc{s}", "reduce": "pca", "dim": d, "index": "flat",
                         "retriever": "dense", "ndcg@10": q - 0.01 * s + 0.000927, "search_ms_p50": 39.7985,
                         "bytes_per_vector": 4.0 * d})  # fmt: skip
    for kind in ("flat", "hnsw", "sq8"):
        for d, q in STUDY:
            rows.append({"dataset": "hotpotqa", "encoder": "minilm", "reduce": "pca", "dim": d, "index": kind,
                         "retriever": "dense", "ndcg@10": q, "search_ms_p50": 1.5, "bytes_per_vector": 4.0 * d})  # fmt: skip
    (root / "rough").mkdir(parents=True)
    write_csv(rows, root / "rough" / "results.csv")
    lm = [{"dim": d, "val_ppl": 150.0 * d / 128, "bytes_fp32": 4 * p, "pos": "learned", "tied": True}
          for d, p in ((128, 2_097_152), (256, 7_340_032), (512, 24_117_248), (1024, 134_217_728))]  # fmt: skip
    (root / "lm").mkdir(parents=True)
    with open(root / "lm" / "results.csv", "w", newline="") as f:  # the LM sweep's own columns
        writer = csv.DictWriter(f, fieldnames=list(lm[0]))
        writer.writeheader()
        writer.writerows(lm)


def test_study_charts_read_cleanly(site, inprocess_server, tmp_path, monkeypatch):
    """raw floats in tooltips, '8.388608M' axis labels with the d=1024 point clipped, 15 series in pale
    repeating colours, identical series drawn as one line, a white chart background wider than its card."""
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.support.ui import Select

    write_rough_studies(tmp_path / "study")
    monkeypatch.setenv("RAG_STUDY_DIR", str(tmp_path / "study"))
    url = inprocess_server(warm=[])
    driver = site["driver"]
    driver.get(url + "/#study")
    wait_until(lambda: "study/rough" in driver.find_element("id", "study-name").text, 30, "the study list")
    Select(driver.find_element("id", "study-name")).select_by_value("study/rough")
    symbols = lambda chart: by_css(driver, f"#{chart} .role-mark.mark-symbol path")  # noqa: E731
    wait_until(lambda: len(symbols("chart-dim")) == 15 * len(STUDY), 30, "75 points")
    fills = {p.get_attribute("fill") for p in symbols("chart-dim")}
    assert len(fills) == 15, fills  # every series its own colour
    dashes = {p.get_attribute("stroke-dasharray") for p in by_css(driver, "#chart-dim .role-mark.mark-line path")}
    assert len(dashes) >= 3, dashes  # flat, hnsw and sq8 lie on each other, drawn solid, dashed and dotted
    for chart in ("chart-dim", "chart-bytes"):
        box = driver.execute_script(
            "const c = document.getElementById(arguments[0]), s = c.querySelector('svg');"
            "return [c.getBoundingClientRect().right, s.getBoundingClientRect().right];",
            chart,
        )
        assert box[1] <= box[0] + 0.5, box  # the chart's background stays inside its card
    target = next(p for p in symbols("chart-dim") if "enc3" in (p.get_attribute("aria-label") or ""))
    ActionChains(driver).move_to_element(target).perform()
    tip = wait_until(lambda: by_css(driver, "#vg-tooltip-element.visible"), 10, "the tooltip")[0].text
    assert "39.8" in tip and "39.7985" not in tip and ".000927" not in tip, tip

    Select(driver.find_element("id", "study-name")).select_by_value("study/lm")
    wait_until(
        lambda: len(symbols("chart-bytes")) == 4,
        30,
        "the LM points (%s)" % driver.find_element("id", "study-status").text,
    )
    labels = [t.text for t in by_css(driver, "#chart-bytes .role-axis-label text") if t.text]
    assert labels and not any(len(label.rstrip("kMG")) > 5 for label in labels), labels  # '537M', not '536.870912M'
    right = driver.execute_script(
        "const s = document.querySelector('#chart-bytes svg').getBoundingClientRect().right;"
        "return Math.max(...[...document.querySelectorAll('#chart-bytes .role-mark.mark-symbol path')]"
        ".map(p => p.getBoundingClientRect().right)) <= s;"
    )
    assert right  # the d=1024 point is inside the chart


def test_side_by_side_badges_never_wrap(site):
    driver = open_page(site, "/#compare")
    style = driver.execute_script(
        "const b = document.createElement('span'); b.className = 'badge'; document.body.append(b);"
        "return getComputedStyle(b).whiteSpace;"
    )
    assert style == "nowrap"


def test_a_server_of_folder_corpora_only_lets_the_page_ask(site, inprocess_server, tmp_path):
    """With builds off and only a folder corpus served, Ask starts from a configuration the server serves (the
    defaults name the built-in corpus, which it does not serve) and answers."""
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "gears.md").write_text("# Gears\n\nGears mesh with other gears to pass on rotation.\n")
    url = inprocess_server(
        corpora={"notes": str(folder)}, allow={"corpus": ["notes"]}, warm=[{"corpus": str(folder), "retriever": "bm25"}]
    )
    driver = site["driver"]
    driver.get(url + "/?q=" + quote("What do gears mesh with?") + "#ask")
    wait_until(lambda: driver.execute_script("return document.body.dataset.ready === '1'"), 30, "the pickers")
    assert driver.find_element("id", "ask-corpus").get_attribute("value") == "notes"
    assert driver.find_element("id", "ask-run").get_attribute("disabled") is None
    driver.find_element("id", "ask-run").click()
    wait_until(
        lambda: driver.execute_script("return document.body.dataset.askState") in ("done", "error"), 180, "the answer"
    )
    assert driver.execute_script("return document.body.dataset.askState") == "done"
    assert "gears" in driver.find_element("id", "ask-answer").text.lower()


def test_a_folder_served_only_at_another_d_lets_the_page_ask(site, inprocess_server, tmp_path):
    """With builds off and a folder corpus served only at d = 64 (the defaults ask for full width), Ask starts from
    the d the server serves and answers with the default hybrid retriever."""
    folder = tmp_path / "notes64"
    folder.mkdir()
    (folder / "gears.md").write_text("# Gears\n\nGears mesh with other gears to pass on rotation.\n")
    (folder / "belts.md").write_text("# Belts\n\nBelts carry power between pulleys that sit far apart.\n")
    url = inprocess_server(
        corpora={"notes64": str(folder)}, allow={"corpus": ["notes64"]}, warm=[{"corpus": str(folder), "dim": 64}]
    )
    driver = site["driver"]
    driver.get(url + "/?q=" + quote("What do gears mesh with?") + "#ask")
    wait_until(lambda: driver.execute_script("return document.body.dataset.ready === '1'"), 30, "the pickers")
    assert driver.find_element("id", "ask-corpus").get_attribute("value") == "notes64"
    assert driver.find_element("id", "ask-dim").get_attribute("value") == "64"
    driver.find_element("id", "ask-run").click()
    wait_until(
        lambda: driver.execute_script("return document.body.dataset.askState") in ("done", "error"), 180, "the answer"
    )
    assert driver.execute_script("return document.body.dataset.askState") == "done"
    assert "gears" in driver.find_element("id", "ask-answer").text.lower()
