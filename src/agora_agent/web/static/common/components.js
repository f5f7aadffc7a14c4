// Renderers for the builtin generative-UI components (REFERENCE UI-01..05): the server sends a name and
// JSON data, the page owns the rendering. Unknown names render a small note, never a crash (UI-02).
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

export function renderComponent(name, data) {
  const render = renderers.get(name);
  if (!render) return h("div.component.unknown", {}, `(component "${name}" has no renderer on this page)`);
  try {
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
