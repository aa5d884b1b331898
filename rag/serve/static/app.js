// The demo page: Ask (the agent's steps streamed over SSE, the answer with its cited passages), Side by side (two
// settings' top-10 lists, overlap, latency per stage, index size) and Study (quality against d and bytes per
// vector from the server's evaluation results). Document text only ever enters the page through textContent.

const $ = (id) => document.getElementById(id);
const KEY = "rag-api-key";
const FIELDS = ["corpus", "encoder", "dim", "index", "reduce", "retriever"];
const DIMS = ["", "32", "64", "128", "256", "384", "576"];
const VENDOR = ["vega.min.js", "vega-lite.min.js", "vega-embed.min.js"];
const METRICS = {retrieval: ["ndcg@10", "recall@10", "recall@100", "mrr@10", "ann_recall@10"],
                 lm: ["val_ppl", "test_ppl", "val_loss", "test_ppl_per_word"]};
const state = {config: null, studies: null, vega: null, keyPrompt: null};
window.demoTimes = {};

// An element whose string children become text nodes (never parsed as HTML).
function el(tag, attrs = {}, ...kids) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (name === "className") node.className = value;
    else if (name === "dataset") Object.assign(node.dataset, value);
    else node.setAttribute(name, value);
  }
  for (const kid of kids) if (kid !== null && kid !== undefined) node.append(kid instanceof Node ? kid : String(kid));
  return node;
}

// ------------------------------------------------------------------ the API, with the key when the server wants one
async function api(path, {json, headers = {}} = {}) {
  for (;;) {
    const sent = new Headers(headers);
    const key = sessionStorage.getItem(KEY);
    if (key) sent.set("Authorization", `Bearer ${key}`);
    if (json !== undefined) sent.set("Content-Type", "application/json");
    const response = await fetch(path, {method: json === undefined ? "GET" : "POST", headers: sent,
                                        body: json === undefined ? undefined : JSON.stringify(json)});
    if (response.status !== 401) return response;
    await askForKey(key ? "That key was refused; try again." : "");
  }
}

function askForKey(message) {
  state.keyPrompt ??= new Promise((resolve) => {
    const dialog = $("key-dialog");
    $("key-error").textContent = message;
    $("key-input").value = "";
    dialog.addEventListener("close", () => {
      sessionStorage.setItem(KEY, $("key-input").value.trim());
      state.keyPrompt = null;
      resolve();
    }, {once: true});
    dialog.showModal();
  });
  return state.keyPrompt;
}

async function failure(response) {
  const body = await response.json().catch(() => ({}));
  return new Error(`${response.status}: ${body.detail || response.statusText}`);
}

async function getJSON(path, options) {
  const response = await api(path, options);
  if (!response.ok) throw await failure(response);
  return response.json();
}

// Server-sent events from a fetch response (EventSource cannot POST): yields {event, data}.
async function* sseEvents(response) {
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  for (;;) {
    const {value, done} = await reader.read();
    if (done) return;
    buffer += value.replace(/\r\n/g, "\n");
    let cut;
    while ((cut = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 2);
      let event = "message";
      const data = [];
      for (const line of block.split("\n")) {
        if (line.startsWith("event:")) event = line.slice(6).trim();
        else if (line.startsWith("data:")) data.push(line.slice(5).trimStart());
      }
      yield {event, data: data.length ? JSON.parse(data.join("\n")) : null};
    }
  }
}

// ------------------------------------------------------------------ settings pickers (only what /config allows)
function buildPickers(fieldset, prefix, extra = [], preset = {}) {
  for (const name of [...FIELDS, ...extra]) {
    const select = el("select", {id: `${prefix}-${name}`, name});
    const values = pickerValues(name);
    for (const v of values) select.append(el("option", {value: v}, v === "" ? "full width" : v));
    if (!setValue(select, preset[name])) setValue(select, state.config.defaults[name]);
    fieldset.append(el("label", {}, name === "dim" ? "d " : `${name} `, select));
  }
}

function setValue(select, value) {
  if (value === undefined) return false;
  const v = value === null ? "" : String(value);
  if (![...select.options].some((o) => o.value === v)) {
    if (select.name !== "dim" || state.config.allow.dim || !/^\d+$/.test(v)) return false;
    select.append(el("option", {value: v}, v));  // any d is served: offer the one asked for
  }
  select.value = v;
  return true;
}

function readSettings(prefix, extra = []) {
  const out = {};
  for (const name of [...FIELDS, ...extra]) {
    const v = $(`${prefix}-${name}`).value;
    out[name] = name === "dim" ? (v === "" ? null : Number(v)) : v;
  }
  return out;
}

const describe = (r) => [r.encoder, r.dim ? `d=${r.dim}` : null, r.index, r.reduce, r.retriever].filter(Boolean).join(" · ");

// ------------------------------------------------------------------ Ask
function stepSummary(s) {
  const titles = (hits) => (hits || []).slice(0, 3).map((h) => h.title).join("; ");
  switch (s.node) {
    case "analyze": return `${s.mode} question; queries: ${(s.queries || []).join(" | ")}`;
    case "retrieve": return `round ${s.round}: ${s.new} new passages; top: ${titles(s.hits)}`;
    case "grade": return `kept ${(s.kept || []).length}, dropped ${s.dropped} (judged by ${s.judged_by})`;
    case "rewrite": return `new query: ${s.query} (${s.reason})`;
    case "hop": return `second hop from: ${(s.from || []).join("; ")}`;
    case "answer": return `written by ${s.backend}, citing ${(s.citations || []).length} passages`;
    case "backend": return s.warning;
    default: return JSON.stringify(s).slice(0, 300);
  }
}

function addStep(step) {
  if (window.demoTimes.firstStep === undefined) {
    window.demoTimes.firstStep = performance.now();  // from navigation start
    document.body.dataset.firstStepMs = window.demoTimes.firstStep.toFixed(0);
  }
  const node = String(step.node || "step").replace(/[^a-z_-]/gi, "");
  const li = el("li", {className: `step step-${node}`, dataset: {node}}, el("strong", {}, node), " ", stepSummary(step));
  if (step.ms !== undefined) li.append(el("span", {className: "ms"}, ` ${step.ms} ms`));
  for (const w of step.warnings || []) li.append(el("div", {className: "warning"}, w));
  $("ask-steps").append(li);
}

function answerNodes(text, cited) {
  const out = [];
  for (const part of text.split(/(\[\d+\])/)) {
    const n = part.match(/^\[(\d+)\]$/)?.[1];
    out.push(n && cited.has(Number(n)) ? el("a", {href: `#cite-${n}`, className: "cite"}, part) : part);
  }
  return out;
}

function markedText(text, spans) {
  // the passage text with the reader's answer spans in <mark> (offsets first, the span's own text if they moved)
  const out = [];
  let at = 0;
  for (const s of [...spans].sort((a, b) => a.start - b.start)) {
    const i = text.slice(s.start, s.end) === s.text ? s.start : text.indexOf(s.text, at);
    if (i < at) continue;
    out.push(text.slice(at, i), el("mark", {className: "span"}, s.text));
    at = i + s.text.length;
  }
  out.push(text.slice(at));
  return out;
}

async function showAnswer(result, settings, question) {
  const cited = new Map(result.citations.map((c) => [c.n, c]));
  $("ask-answer").replaceChildren(...answerNodes(result.answer, cited));
  $("ask-timings").textContent = Object.entries(result.timings).map(([k, v]) => `${k.replace(/_ms$/, "")} ${v} ms`).join(" · ");
  for (const w of result.warnings || []) $("ask-timings").append(el("div", {className: "warning"}, w));
  let texts = new Map();
  if (result.citations.length) {
    try {
      const got = await getJSON("/passages", {json: {question, ...settings, ids: result.citations.map((c) => c.id)}});
      texts = new Map(got.passages.map((p) => [p.id, p]));
    } catch (error) {
      $("ask-status").textContent = `passage text unavailable (${error.message})`;
    }
  }
  $("ask-citations").replaceChildren(...result.citations.map((c) => {
    const p = texts.get(c.id) || {};
    return el("li", {id: `cite-${c.n}`, className: "passage", dataset: {id: c.id}},
      el("div", {className: "head"}, el("strong", {}, `[${c.n}] ${c.title}`)),
      el("div", {className: "meta"}, `${p.source || "?"} · score ${c.score} · ${c.id}`),
      el("div", {className: "text"}, ...markedText(p.text ?? "", (result.spans || []).filter((sp) => sp.id === c.id))));
  }));
}

async function runAsk(event) {
  event?.preventDefault();
  const question = $("ask-question").value.trim();
  if (!question) return;
  const settings = readSettings("ask");
  const missing = notServed(settings);
  if (missing) {
    $("ask-status").textContent = `${describe(settings)}: ${missing}`;
    document.body.dataset.askState = "not-built";
    return;
  }
  const body = {question, ...settings, llm: $("ask-llm").value};
  for (const id of ["ask-steps", "ask-answer", "ask-citations", "ask-timings"]) $(id).replaceChildren();
  $("ask-run").disabled = true;
  $("ask-status").textContent = "asking ...";
  document.body.dataset.askState = "running";
  const t0 = performance.now();
  try {
    const response = await api("/ask", {json: body, headers: {Accept: "text/event-stream"}});
    if (!response.ok) throw await failure(response);
    for await (const {event, data} of sseEvents(response)) {
      if (event === "step") addStep(data);
      else if (event === "answer") await showAnswer(data, settings, question);
      else if (event === "error") throw new Error(data.detail);
    }
    $("ask-status").textContent = `done in ${(performance.now() - t0).toFixed(0)} ms (${describe(settings)})`;
    document.body.dataset.askState = "done";
  } catch (error) {
    $("ask-status").textContent = `error ${error.message}`;
    document.body.dataset.askState = "error";
  } finally {
    $("ask-run").disabled = false;
  }
}

// ------------------------------------------------------------------ Side by side
const SETTING_KEYS = ["corpus", "encoder", "dim", "index", "reduce"];
const sameIndex = (a, b) => SETTING_KEYS.every((k) => a[k] === b[k]);
// Whether the server answers these settings now: a configuration it lists with the same corpus and retriever, and
// the same index where the retriever searches one (the retriever kinds come from /config, never spelled here).
const served = (config, r) => config.configurations.some((c) => c.corpus === r.corpus && c.retriever === r.retriever &&
  (!config.retriever_kinds?.[r.retriever]?.dense || sameIndex(c, r)));

// What a picker offers: with builds off, only values some served configuration uses; with builds on, the policy's.
function pickerValues(name) {
  const config = state.config;
  if (config.build_missing || !config.configurations?.length || !FIELDS.includes(name)) {
    return name === "dim" ? (config.allow.dim ?? DIMS) : config.allow[name];
  }
  const used = config.configurations.map((c) => (c[name] === null || c[name] === undefined ? "" : String(c[name])));
  return [...new Set(used)].sort((a, b) => (name === "dim" ? Number(a) - Number(b) : a.localeCompare(b)));
}

// Before a request: settings this server would not answer say how to build them, instead of a 404.
function notServed(settings) {
  if (state.config.build_missing || served(state.config, settings)) return "";
  return `not built on this server; build it with: ${buildCommand(settings)} (or start rag serve --build-missing)`;
}

function buildCommand(r) {
  const parts = ["rag index build", `--corpus ${r.corpus}`, `--encoder ${r.encoder}`];
  if (r.dim) parts.push(`--dim ${r.dim}`);
  if (r.index) parts.push(`--index ${r.index}`);
  if (r.reduce) parts.push(`--reduce ${r.reduce}`);
  return parts.join(" ");
}

// Where Ask starts: the defaults where the server builds what is missing, else the served configuration that agrees
// with the defaults on the most settings (a server of folder corpora at d = 64 starts there, not at full width).
function askPreset(config) {
  if (config.build_missing || !config.configurations?.length) return {};
  const agree = (c) => FIELDS.filter((k) => (c[k] ?? null) === (config.defaults[k] ?? null)).length;
  return config.configurations.reduce((best, c) => (agree(c) > agree(best) ? c : best));
}

// Two configurations this server serves now (from /config, never names spelled here): A is the default's index,
// B another built index of the same corpus. With one built and builds off, B repeats A and a note says which
// command builds a second (the same index at a quarter of its width).
function comparePresets(config) {
  const indexed = config.configurations.filter((c) => c.index);
  const explicit = indexed.filter((c) => c.dim);  // built indexes name their d; the default alias does not
  const withIndex = explicit.length ? explicit : indexed;
  const d = config.defaults;
  const a = withIndex.find((c) => c.corpus === d.corpus && c.retriever === d.retriever) || withIndex[0] || d;
  const b = withIndex.find((c) => c.corpus === a.corpus && c.retriever === a.retriever && !sameIndex(c, a));
  if (b) return [a, b, ""];
  const width = a.dim || 384;
  const smaller = {...a, dim: Math.max(8, Math.round(width / 4))};
  if (config.build_missing) return [a, smaller, ""];
  return [a, a, `Only one index of ${a.corpus} is built here, so B starts as A. Build a second to compare: ${buildCommand(smaller)}`];
}
const human = (n) => (n >= 2 ** 20 ? `${(n / 2 ** 20).toFixed(2)} MiB` : n >= 1024 ? `${(n / 1024).toFixed(1)} KiB` : `${n} B`);

function indexRow(indexes, r) {
  return indexes.find((m) => m.corpus === r.corpus && m.encoder === r.encoder && m.dim === r.dim &&
                             m.kind === r.index && m.reduce === r.reduce);
}

function renderSide(side, result, other, indexes, ms) {
  const otherRank = new Map(other.passages.map((p, i) => [p.id, i + 1]));
  $(`compare-${side}-title`).textContent = `${side.toUpperCase()}: ${describe(result)}`;
  const facts = [["round trip", `${ms.toFixed(1)} ms`]];
  for (const [k, v] of Object.entries(result.timings_ms)) facts.push([k.replace(/_ms$/, ""), `${v} ms`]);
  const row = result.retriever === "bm25" ? null : indexRow(indexes, result);
  facts.push(["index size", row ? `${human(row.index_bytes)} (${row.vectors} vectors, ${Number(row.bytes_per_vector).toFixed(1)} B each)`
                                : result.retriever === "bm25" ? "no vector index (BM25)" : "not listed"]);
  $(`compare-${side}-facts`).replaceChildren(...facts.map(([k, v]) => el("tr", {}, el("th", {}, k), el("td", {}, v))));
  $(`compare-${side}-list`).replaceChildren(...result.passages.map((p) => {
    const rank = otherRank.get(p.id);
    const li = el("li", {className: rank ? "hit shared" : "hit", dataset: {id: p.id, shared: rank ? "1" : "0"}},
      el("strong", {}, p.title), rank ? el("span", {className: "badge"}, `both · #${rank} in ${side === "a" ? "B" : "A"}`) : null,
      el("div", {className: "meta"}, `${p.source} · score ${p.score.toFixed(4)}`),
      el("div", {className: "text"}, p.text.length > 220 ? `${p.text.slice(0, 220)} ...` : p.text));
    return li;
  }));
}

async function runCompare(event) {
  event?.preventDefault();
  const question = $("compare-question").value.trim();
  if (!question) return;
  for (const side of ["a", "b"]) {
    const missing = notServed(readSettings(`compare-${side}`));
    if (missing) {
      $("compare-status").textContent = `${side.toUpperCase()}: ${missing}`;
      document.body.dataset.compareState = "not-built";
      return;
    }
  }
  $("compare-run").disabled = true;
  $("compare-status").textContent = "searching ...";
  document.body.dataset.compareState = "running";
  try {
    const results = [], times = [];
    for (const side of ["a", "b"]) {  // one after the other, so that each latency is measured alone
      const t0 = performance.now();
      results.push(await getJSON("/search", {json: {question, ...readSettings(`compare-${side}`), k: 10}}));
      times.push(performance.now() - t0);
    }
    const indexes = (await getJSON("/indexes")).indexes;
    renderSide("a", results[0], results[1], indexes, times[0]);
    renderSide("b", results[1], results[0], indexes, times[1]);
    const b = new Set(results[1].passages.map((p) => p.id));
    const shared = results[0].passages.filter((p) => b.has(p.id)).length;
    $("compare-overlap").textContent = `${shared} of ${results[0].passages.length} passages are in both top-10 lists (marked "both").`;
    $("compare-status").textContent = "";
    document.body.dataset.compareState = "done";
  } catch (error) {
    $("compare-status").textContent = `error ${error.message}`;
    document.body.dataset.compareState = "error";
  } finally {
    $("compare-run").disabled = false;
  }
}

// ------------------------------------------------------------------ Study
function loadVega() {
  state.vega ??= VENDOR.reduce((previous, file) => previous.then(() => new Promise((resolve, reject) => {
    const script = el("script", {src: `/static/vendor/${file}`});
    script.onload = resolve;
    script.onerror = () => reject(new Error(`cannot load ${file}`));
    document.head.append(script);
  })), Promise.resolve());
  return state.vega;
}

function fillSelect(select, values, keep) {
  const old = keep ? select.value : null;
  select.replaceChildren(...values.map((v) => el("option", {value: v}, v)));
  if (values.includes(old)) select.value = old;
}

async function openStudy() {
  const status = $("study-status");
  if (!state.studies) {
    status.textContent = "loading results ...";
    const all = (await getJSON("/study")).studies;
    state.studies = all.filter((s) => s.kind in METRICS && s.rows.length);
    fillSelect($("study-name"), state.studies.map((s) => s.name));
    const retrieval = state.studies.findIndex((s) => s.kind === "retrieval");
    if (retrieval >= 0) $("study-name").selectedIndex = retrieval;
  }
  if (!state.studies.length) { status.textContent = "no results.csv or results.json in the server's study folders"; return; }
  await loadVega();
  await drawStudy();
}

async function drawStudy() {
  const study = state.studies.find((s) => s.name === $("study-name").value) || state.studies[0];
  const retrieval = study.kind === "retrieval";
  fillSelect($("study-metric"), METRICS[study.kind].filter((m) => study.columns.includes(m)), true);
  const retrievers = retrieval ? [...new Set(study.rows.map((r) => r.retriever).filter(Boolean))] : [];
  fillSelect($("study-retriever"), retrievers, true);
  if (retrieval && !$("study-retriever").dataset.touched && retrievers.includes("dense")) $("study-retriever").value = "dense";
  $("study-retriever").disabled = !retrieval;
  const metric = $("study-metric").value;
  const xBytes = retrieval ? ["bytes_per_vector", "bytes per vector (log)"] : ["bytes_fp32", "model bytes, fp32 (log)"];
  const rows = study.rows
    .filter((r) => !retrieval || r.retriever === $("study-retriever").value)
    .map((r, i) => ({...r, _row: i, _series: retrieval ? `${r.encoder} ${r.reduce} ${r.index}` : `${r.pos ?? "lm"} tied=${r.tied}`,
                     _style: String(retrieval ? r.index : r.tied)}))
    .filter((r) => typeof r[metric] === "number" && r.dim > 0);
  state.shown = rows;
  $("chart-dim-title").textContent = `${metric} against d`;
  $("chart-bytes-title").textContent = `${metric} against ${xBytes[1].replace(" (log)", "")}`;
  await drawChart($("chart-dim"), rows, study, metric, ["dim", "d (log)"]);
  await drawChart($("chart-bytes"), rows.filter((r) => r[xBytes[0]] > 0), study, metric, xBytes);
  $("study-status").textContent = `${rows.length} rows from ${study.name}`;
}

// Tooltip numbers: whole numbers with thousands separators, others to 4 significant digits (0.6349, 39.8).
function tooltipFormat(study, c) {
  const values = study.rows.map((r) => r[c]).filter((v) => typeof v === "number");
  if (!values.length) return {};
  return values.every(Number.isInteger) ? {format: ","} : {format: ".4~r"};
}

async function drawChart(container, rows, study, metric, [x, title]) {
  const escape = (f) => f.replace(/[.[\]\\]/g, "\\$&");
  const typeOf = (c) => (study.rows.some((r) => typeof r[c] === "number") ? "quantitative" : "nominal");
  const filled = study.columns.filter((c) => study.rows.some((r) => r[c] !== null && r[c] !== undefined));
  const tooltip = filled.map((c) => ({field: escape(c), type: typeOf(c), ...tooltipFormat(study, c)}));
  const series = new Set(rows.map((r) => r._series)).size;
  // Series that coincide (flat, hnsw and sq8 score alike) stay apart by dash and shape; up to 20 get their own colour.
  const spec = {
    width: "container", height: 300, data: {values: rows}, autosize: {type: "fit-x", contains: "padding"},
    background: null, config: {view: {stroke: null}},
    encoding: {x: {field: escape(x), type: "quantitative", scale: {type: "log", base: 2, padding: 14}, title,
                   axis: x === "dim" ? {values: [...new Set(rows.map((r) => r.dim))].sort((a, b) => a - b)}
                                     : {format: ".3~s", labelOverlap: "greedy"}},
               y: {field: escape(metric), type: "quantitative", scale: {zero: false, padding: 10}, title: metric},
               color: {field: "_series", type: "nominal", title: null,
                       scale: {scheme: series > 10 ? "tableau20" : "tableau10"},
                       legend: {orient: "bottom", columns: container.clientWidth < 500 ? 1 : 2, labelLimit: 260, symbolLimit: 40}},
               strokeDash: {field: "_style", type: "nominal", title: null, legend: null}},
    layer: [{mark: {type: "line", opacity: 0.7, strokeWidth: 1.6}},
            {mark: {type: "point", filled: true, size: 70, opacity: 0.9, cursor: "pointer"},
             encoding: {tooltip, shape: {field: "_style", type: "nominal", title: null, legend: null}}}],
  };
  const {view} = await window.vegaEmbed(container, spec, {renderer: "svg", actions: false});
  view.addEventListener("click", (_, item) => { if (item?.datum?._row !== undefined) pick(item.datum, study); });
  container.dataset.points = String(rows.length);
}

function pick(row, study) {
  const wanted = study.kind === "retrieval"
    ? {corpus: row.dataset, encoder: row.encoder, dim: row.dim, index: row.index, reduce: row.reduce, retriever: row.retriever}
    : {dim: row.dim};
  const refused = Object.entries(wanted).filter(([name, v]) => v !== undefined && v !== null && !setValue($(`ask-${name}`), v));
  location.hash = "#ask";
  $("ask-status").textContent = `settings from the study row: ${describe(wanted)}` +
    (refused.length ? `; not served here: ${refused.map(([n, v]) => `${n}=${v}`).join(", ")}` : "");
  const chosen = {...readSettings("ask"), ...(study.kind === "retrieval" ? wanted : {})};
  const built = state.config.build_missing || (!refused.length && served(state.config, chosen));
  document.body.dataset.pickBuilt = built ? "1" : "0";
  $("ask-run").disabled = !built;
  if (!built) {
    $("ask-status").textContent += `. Its index is not built on this server; build it with: ${buildCommand(chosen)}`;
    for (const name of FIELDS) $(`ask-${name}`).addEventListener("change", () => { $("ask-run").disabled = false; }, {once: true});
  }
}

// ------------------------------------------------------------------ views and start
function show() {
  const view = (location.hash.slice(1) || "ask").split("?")[0];
  const known = ["ask", "compare", "study"].includes(view) ? view : "ask";
  for (const section of document.querySelectorAll(".view")) section.hidden = section.id !== `view-${known}`;
  for (const a of document.querySelectorAll("nav a")) a.classList.toggle("active", a.dataset.view === known);
  if (known === "study" && state.config) openStudy().catch((error) => { $("study-status").textContent = `error ${error.message}`; });
}

async function init() {
  window.addEventListener("hashchange", show);
  try {
    state.config = await getJSON("/config");
  } catch (error) {
    $("server-note").textContent = `cannot read /config: ${error.message}`;
    return;
  }
  window.demoTimes.config = performance.now();
  buildPickers($("ask-settings"), "ask", ["llm"], askPreset(state.config));
  const [presetA, presetB, note] = comparePresets(state.config);
  buildPickers($("compare-a"), "compare-a", [], presetA);
  buildPickers($("compare-b"), "compare-b", [], presetB);
  $("compare-note").textContent = note;
  $("server-note").textContent = `auth ${state.config.auth ? "on" : "off"} · builds ${state.config.build_missing ? "on" : "off"}`;
  $("ask-form").addEventListener("submit", runAsk);
  $("compare-form").addEventListener("submit", runCompare);
  for (const id of ["study-name", "study-metric", "study-retriever"]) {
    $(id).addEventListener("change", () => { $(id).dataset.touched = "1"; drawStudy(); });
  }
  document.body.dataset.ready = "1";
  show();
  const params = new URLSearchParams(location.search);
  if (params.get("q")) $("ask-question").value = params.get("q");
  if (params.has("run")) runAsk();
}

init();
