// Renderers for the generative-UI components: the server sends a name and validated JSON data, the page
// owns the rendering. Unknown names render a small note, never a crash. An app adds its own renderer with
// `registerComponent(name, (data) => Node)` — from a plain ES module listed in the page settings'
// `componentModules`, whose default export receives `registerComponent` (see docs/genui.md).
//
// Every component accepts the placeholder states {state: "loading"} (a skeleton), {state: "empty"} and
// {state: "error", message}; a later frame with the same id replaces the drawing.
//
// DataTable: {title?, columns?: [{key, label}], rows: [{…}]}  (columns default to the first row's keys)
// Chart:     {title?, type?: "bar"|"line"|"donut", labels: [...], series: [{name, values: [...]}]}
//            or {title?, type?, rows: [{…}], x: "<key>", y: "<key>" | ["<key>", …]}
import { h } from "./dom.js";
import { barChart, donut, legend, lineChart } from "./charts.js";

const renderers = new Map();

export function registerComponent(name, render) {
  renderers.set(name, render);
}

export function hasRenderer(name) {
  return renderers.has(name);
}

// The component names this page can draw, sent as `uiCapabilities` so the server pushes nothing else.
export function capabilities() {
  return [...renderers.keys()];
}

function placeholder(name, data) {
  if (data.state === "loading") {
    return h("div.component.skeleton", { role: "status", "aria-label": `Loading ${name}` }, h("div.sk-line"), h("div.sk-line"), h("div.sk-line.short"));
  }
  if (data.state === "error") return h("div.component.state-error", { role: "alert" }, data.message || `${name} could not be shown`);
  return h("div.component.state-empty", {}, data.message || "Nothing to show");
}

export function renderComponent(name, data) {
  const render = renderers.get(name);
  if (!render) return h("div.component.unknown", {}, `(component "${name}" has no renderer on this page)`);
  try {
    if (data && typeof data.state === "string") return placeholder(name, data);
    return render(data ?? {});
  } catch (err) {
    return h("div.component.unknown", {}, `(component "${name}" could not be shown: ${err.message})`);
  }
}

function cell(value) {
  if (value === null || value === undefined) return "—";
  if (typeof value === "object") return JSON.stringify(value);
  return String(value);
}

export function dataTable(data) {
  const rows = Array.isArray(data.rows) ? data.rows : [];
  const columns =
    Array.isArray(data.columns) && data.columns.length
      ? data.columns.map((c) => (typeof c === "string" ? { key: c, label: c } : { key: c.key, label: c.label ?? c.key }))
      : Object.keys(rows[0] ?? {}).map((key) => ({ key, label: key }));
  const numeric = new Set(columns.filter((c) => rows.length && rows.every((r) => typeof r[c.key] === "number")).map((c) => c.key));
  return h(
    "figure.component.data-table",
    {},
    data.title ? h("figcaption", {}, data.title) : null,
    h(
      "div.table-scroll",
      {},
      h(
        "table",
        {},
        h("thead", {}, h("tr", {}, columns.map((c) => h("th", { class: numeric.has(c.key) ? "num" : null }, c.label)))),
        h(
          "tbody",
          {},
          rows.length
            ? rows.map((r) => h("tr", {}, columns.map((c) => h("td", { class: numeric.has(c.key) ? "num" : null }, cell(r[c.key])))))
            : h("tr", {}, h("td.empty", { colspan: columns.length || 1 }, "No rows")),
        ),
      ),
    ),
    h("div.table-foot", {}, `${rows.length} row${rows.length === 1 ? "" : "s"}`),
  );
}

function chartSeries(data) {
  if (Array.isArray(data.labels) && Array.isArray(data.series)) return { labels: data.labels.map(String), series: data.series };
  const rows = Array.isArray(data.rows) ? data.rows : [];
  const x = data.x ?? Object.keys(rows[0] ?? {})[0];
  const ys = data.y ? (Array.isArray(data.y) ? data.y : [data.y]) : Object.keys(rows[0] ?? {}).filter((k) => k !== x && typeof rows[0][k] === "number");
  return { labels: rows.map((r) => String(r[x])), series: ys.map((key) => ({ name: key, values: rows.map((r) => Number(r[key]) || 0) })) };
}

export function chart(data) {
  const { labels, series } = chartSeries(data);
  const fmt = (v) => (Math.abs(v) >= 1000 ? `${(v / 1000).toFixed(1)}k` : Number.isInteger(v) ? String(v) : v.toFixed(2));
  let body;
  if (data.type === "donut" || data.type === "pie") {
    const items = labels.map((label, i) => ({ label, value: series[0]?.values[i] ?? 0 }));
    body = h("div.donut-wrap", {}, donut(items, { format: fmt }), legend(items, fmt));
  } else {
    body = (data.type === "line" ? lineChart : barChart)({ labels, series, format: fmt });
  }
  return h(
    "figure.component.chart",
    {},
    data.title ? h("figcaption", {}, data.title) : null,
    body,
    series.length > 1 && data.type !== "donut" ? legend(series.map((se) => ({ label: se.name }))) : null,
  );
}

registerComponent("DataTable", dataTable);
registerComponent("table", dataTable);
registerComponent("Chart", chart);
registerComponent("chart", chart);

// Load the app's own renderer modules (page settings `componentModules`: URLs of ES modules whose default
// export is `(registerComponent) => void`). A module that fails to load is reported, never fatal.
export async function loadComponentModules(urls = []) {
  const failures = [];
  for (const url of urls) {
    try {
      const mod = await import(new URL(url, document.baseURI).href);
      if (typeof mod.default === "function") mod.default(registerComponent);
    } catch (err) {
      failures.push(`${url}: ${err.message || err}`);
    }
  }
  return failures;
}
