// The page around the filter's core (pkg/, built by `make playground`). Every decision is the
// core's: this file only reads the inputs, calls the API and draws what it returns. Text from a
// catalog is untrusted, so it only ever goes into the page as textContent.
import init, { Session, checkConfig } from "./pkg/mcp_tool_search_playground.js";

const $ = (id) => document.getElementById(id);

const CONFIG_EXAMPLES = {
  eager: { eager_patterns: ["Research*", "*Weather*"], search: { max_allowable_results: 8 } },
  groups: { group_separator: "_", search: { result_format: "summary" } },
  policy: {
    eager_patterns: ["github_get_*"],
    authorization: {
      identity: { source: "header", header: "x-user-roles" },
      rules: [
        { claim: "roles", values: ["support"], tools: ["github_*", "slack_*"] },
        { claim: "roles", values: ["billing"], tools: ["stripe_*"] },
      ],
      default: "deny",
    },
  },
  weights: { search: { weights: { name: 3, description: 1, input_schema: 0.5 } } },
};

let session = null;
let exports = null;

function el(tag, text, className) {
  const node = document.createElement(tag);
  if (text !== undefined) node.textContent = String(text);
  if (className) node.className = className;
  return node;
}

function show(id, message) {
  const node = $(id);
  node.textContent = message || "";
  node.hidden = !message;
}

// A wasm-bindgen JsError arrives as an Error whose message is the Rust error's Display.
const messageOf = (e) => (e && e.message) || String(e);

function callers() {
  const lines = $("callers").value.split("\n").map((l) => l.trim()).filter(Boolean);
  return lines.length ? lines : [""];
}

// Rebuilds the session (configuration, catalog, vectors) and everything drawn from it.
function rebuild() {
  session = null;
  show("list-error", "");
  let check;
  try {
    check = JSON.parse(checkConfig($("config").value));
    show("config-error", "");
  } catch (e) {
    show("config-error", messageOf(e));
    exports = null;
    $("export-envoy").textContent = "";
    $("export-istio").textContent = "";
    clearOutputs();
    return;
  }
  exports = check;
  $("export-envoy").textContent = check.envoy;
  $("export-istio").textContent = check.istio;
  $("caller-hint").textContent = check.caller_hint
    ? `A policy is set: type one caller per line, as ${check.caller_hint}. An empty line is an unidentified caller.`
    : "No authorization policy: every caller sees the same.";
  if (!$("list").value.trim()) {
    clearOutputs();
    return;
  }
  try {
    session = new Session($("config").value, $("list").value, $("namespace").value, $("vectors").value);
  } catch (e) {
    show("list-error", messageOf(e));
    clearOutputs();
    return;
  }
  renderAgent();
  runSearch();
  renderInsights();
}

function clearOutputs() {
  $("agent").replaceChildren();
  $("results").tBodies[0].replaceChildren();
  $("answer").textContent = "";
  $("search-meta").textContent = "";
  show("search-refused", "");
}

function renderAgent() {
  const box = $("agent");
  box.replaceChildren();
  const select = $("search-caller");
  const chosen = select.value;
  select.replaceChildren();
  for (const caller of callers()) {
    select.append(el("option", caller || "(no identity)"));
    select.lastChild.value = caller;
    const part = el("div", undefined, "caller");
    part.dataset.caller = caller;
    let view;
    try {
      view = JSON.parse(session.agentView(caller));
    } catch (e) {
      part.append(el("p", messageOf(e), "error"));
      box.append(part);
      continue;
    }
    if (callers().length > 1 || caller) part.append(el("h3", `Caller: ${caller || "(no identity)"}`));
    part.append(el("p",
      `${view.tools.length} listed (${view.hidden} of ${view.upstream_tools} upstream tools not listed; list ${view.outcome}). ` +
      `≈${view.tokens_before.toLocaleString("en")} → ≈${view.tokens_after.toLocaleString("en")} tokens ` +
      `(${view.bytes_before.toLocaleString("en")} → ${view.bytes_after.toLocaleString("en")} bytes of result; tokens ≈ bytes/4)`,
      "tokens"));
    const table = el("table");
    table.className = "listed";
    const head = table.createTHead().insertRow();
    for (const h of ["tool", "kind", "description", "bytes"]) head.append(el("th", h));
    const body = table.createTBody();
    for (const t of view.tools) {
      const row = body.insertRow();
      row.append(el("td", t.name));
      const kind = el("td");
      kind.append(el("span", t.injected ? "filter" : "eager", t.injected ? "badge" : "badge eager"));
      row.append(kind);
      const description = t.description.length > 160 ? t.description.slice(0, 160) + "…" : t.description;
      row.append(el("td", description));
      row.append(el("td", t.bytes, "num"));
    }
    part.append(table);
    if (view.search_description) {
      const d = el("details");
      d.append(el("summary", "The search tool's description"));
      d.append(el("pre", view.search_description));
      part.append(d);
    }
    if (view.groups) {
      const d = el("details");
      d.append(el("summary", "list_tool_groups answers"));
      const text = view.groups.result?.content?.[0]?.text ?? JSON.stringify(view.groups, null, 2);
      d.append(el("pre", text));
      part.append(d);
    }
    const raw = el("details");
    raw.append(el("summary", "The tools/list response the agent receives"));
    raw.append(el("pre", JSON.stringify(view.response, null, 2)));
    part.append(raw);
    box.append(part);
  }
  if ([...select.options].some((o) => o.value === chosen)) select.value = chosen;
}

let eagerConfig = null;

// The pasted insights beside this catalog and configuration (the core reads them).
function renderInsights() {
  const box = $("insights-view");
  box.replaceChildren();
  show("insights-error", "");
  $("make-eager").hidden = true;
  eagerConfig = null;
  if (!session || !$("insights").value.trim()) return;
  let view;
  try {
    view = JSON.parse(session.insights($("insights").value));
  } catch (e) {
    show("insights-error", messageOf(e));
    return;
  }
  const yes = (b) => (b ? "yes" : "no");
  const table = (caption, headers, rows) => {
    const t = el("table");
    t.className = caption.id;
    const head = t.createTHead().insertRow();
    for (const h of headers) head.append(el("th", h));
    const body = t.createTBody();
    for (const cells of rows) {
      const row = body.insertRow();
      for (const c of cells) row.append(typeof c === "object" ? c : el("td", c));
    }
    box.append(el("h3", caption.text));
    box.append(t);
  };
  table({ id: "suggested", text: `Called most (${Math.round(view.share * 100)}% of the calls of ${view.namespace})` },
    ["tool", "calls", "share", "eager here", "in this catalog"],
    view.suggested.map((t) => [t.name, t.calls, t.share ?? "", yes(t.eager), yes(t.in_catalog)]));
  table({ id: "without-search", text: "Called without a search" },
    ["tool", "calls", "eager here"],
    view.without_search.map((t) => [t.name, t.calls, yes(t.eager)]));
  table({ id: "zero-queries", text: "Searches that found nothing" },
    ["query", "count"],
    view.zero_queries.map((q) => {
      const cell = el("td");
      if (q.query) {
        // Try it here: the query goes into the search box.
        const button = el("button", q.query, "link");
        button.addEventListener("click", () => {
          $("query").value = q.query;
          runSearch();
        });
        cell.append(button);
      } else {
        cell.textContent = `group ${q.group} (text not recorded)`;
      }
      return [cell, q.count];
    }));
  box.append(el("p",
    `${view.never_returned_count} tools no search returned` +
    (view.never_returned.length ? `: ${view.never_returned.join(", ")}` : "."), "note"));
  if (view.eager_config) {
    eagerConfig = view.eager_config;
    $("make-eager").hidden = false;
  }
}

function searchArguments() {
  const args = { query: $("query").value };
  const number = (id) => ($(id).value === "" ? undefined : Number($(id).value));
  if (number("limit") !== undefined) args.limit = number("limit");
  if (number("offset") !== undefined) args.offset = number("offset");
  if ($("group").value.trim()) args.group = $("group").value.trim();
  return args;
}

const fmt = (x) => (typeof x === "number" ? x.toFixed(4) : "");

function runSearch() {
  const tbody = $("results").tBodies[0];
  tbody.replaceChildren();
  $("answer").textContent = "";
  $("search-meta").textContent = "";
  show("search-refused", "");
  if (!session || !$("query").value.trim()) return;
  let view;
  try {
    view = JSON.parse(session.search($("search-caller").value || "", JSON.stringify(searchArguments())));
  } catch (e) {
    show("search-refused", messageOf(e));
    return;
  }
  $("answer").textContent = JSON.stringify(view.answer, null, 2);
  if (view.refused) {
    show("search-refused", view.refused);
    return;
  }
  $("search-meta").textContent =
    `${view.matches} of ${view.candidates} tools match; ranked by ${view.strategy}` +
    (view.fallback ? ` (fallback: ${view.fallback})` : "");
  for (const r of view.rows) {
    const row = tbody.insertRow();
    row.append(el("td", r.rank, "num"));
    row.append(el("td", r.name));
    row.append(el("td", fmt(r.score), "num"));
    const e = r.explain;
    row.append(el("td", e ? `${fmt(e.bm25)} (${fmt(e.bm25_normalized)})` : "", "num"));
    const why = e
      ? e.terms
          .map((t) => `${t.term} ${fmt(t.score)} [idf ${t.idf.toFixed(2)}, tf ${t.tf}: ` +
            t.fields.map((f) => `${f.field} ${fmt(f.score)}`).join(", ") + "]")
          .join("; ")
      : "";
    row.append(el("td", why));
    const v = e && e.vector;
    row.append(el("td", !v ? "" : v.cosine === null
      ? `no vector: BM25 ${fmt(v.normalized)} × ${v.weight}`
      : `cos ${fmt(v.cosine)} → ${fmt(v.normalized)} × ${v.weight}`));
  }
}

async function loadSample() {
  const path = $("sample").value;
  if (!path) return;
  const response = await fetch(path);
  $("list").value = await response.text();
  rebuild();
}

// An MCP session from the browser: initialize, initialized, then every tools/list page. The
// server must allow this origin (CORS) and expose mcp-session-id.
async function fetchEndpoint() {
  const url = $("endpoint").value.trim();
  if (!url) return;
  show("list-error", "");
  const headers = { "content-type": "application/json", accept: "application/json, text/event-stream" };
  const post = async (message) => {
    const response = await fetch(url, { method: "POST", headers, body: JSON.stringify(message) });
    if (!response.ok && response.status !== 202) throw new Error(`${message.method}: HTTP ${response.status}`);
    const session = response.headers.get("mcp-session-id");
    if (session) headers["mcp-session-id"] = session;
    const text = await response.text();
    if (!text.trim()) return null;
    if ((response.headers.get("content-type") || "").includes("text/event-stream")) {
      const data = text.split(/\r?\n/).filter((l) => l.startsWith("data:")).map((l) => l.slice(5).trim());
      const replies = data.filter(Boolean).map((d) => JSON.parse(d)).filter((m) => m.id === message.id);
      return replies.pop() || null;
    }
    return JSON.parse(text);
  };
  try {
    const init = await post({
      jsonrpc: "2.0", id: 1, method: "initialize",
      params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "mcp-tool-search-playground", version: "0.1.0" } },
    });
    if (init && init.result && init.result.protocolVersion) headers["mcp-protocol-version"] = init.result.protocolVersion;
    await post({ jsonrpc: "2.0", method: "notifications/initialized" });
    const tools = [];
    let cursor;
    for (let id = 2; id < 1000; id++) {
      const reply = await post({ jsonrpc: "2.0", id, method: "tools/list", params: cursor ? { cursor } : {} });
      if (!reply || reply.error) throw new Error(`tools/list: ${JSON.stringify(reply && reply.error)}`);
      tools.push(...(reply.result.tools || []));
      cursor = reply.result.nextCursor;
      if (!cursor) break;
    }
    $("list").value = JSON.stringify({ tools }, null, 1);
    rebuild();
  } catch (e) {
    show("list-error", `fetching ${url}: ${messageOf(e)} (a server the browser may reach allows this page's origin)`);
  }
}

async function copy(which) {
  if (!exports) return;
  const text = exports[which];
  try {
    await navigator.clipboard.writeText(text);
    $("copied").textContent = "copied";
  } catch (e) {
    // Clipboard access needs a secure context and permission; the text is shown below anyway.
    $("copied").textContent = "copy blocked by the browser: select it below";
    $("export-envoy").closest("details").open = true;
  }
  setTimeout(() => ($("copied").textContent = ""), 2500);
}

let timer = null;
const later = (f) => {
  clearTimeout(timer);
  timer = setTimeout(f, 200);
};

async function main() {
  await init();
  for (const id of ["list", "config", "namespace", "vectors", "callers"]) {
    $(id).addEventListener("input", () => later(rebuild));
  }
  for (const id of ["query", "limit", "offset", "group"]) {
    $(id).addEventListener("input", () => later(runSearch));
  }
  $("search-caller").addEventListener("change", runSearch);
  $("insights").addEventListener("input", () => later(renderInsights));
  $("make-eager").addEventListener("click", () => {
    if (!eagerConfig) return;
    $("config").value = eagerConfig;
    rebuild();
  });
  $("sample").addEventListener("change", loadSample);
  $("fetch").addEventListener("click", fetchEndpoint);
  $("copy-envoy").addEventListener("click", () => copy("envoy"));
  $("copy-istio").addEventListener("click", () => copy("istio"));
  $("config-example").addEventListener("change", () => {
    const example = CONFIG_EXAMPLES[$("config-example").value];
    if (example) {
      $("config").value = JSON.stringify(example, null, 2);
      rebuild();
    }
  });
  rebuild();
  $("status").textContent = "Ready: the filter's core is loaded.";
  $("status").classList.add("ready");
  document.body.dataset.ready = "true";
}

main().catch((e) => {
  $("status").textContent = `The filter's core did not load: ${messageOf(e)}`;
});
