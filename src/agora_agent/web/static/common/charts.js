// Hand-written SVG charts: a donut, grouped bars, lines, and a bar+line combo with two axes.
// Colours come from CSS (`.series-0` … `.series-7` use --chart-N), so light/dark themes restyle them.
// Every mark carries a <title>, so hovering shows the exact value; charts scale to their container.
import { s, h } from "./dom.js";

const PALETTE_SIZE = 8;
const seriesClass = (i) => `series-${i % PALETTE_SIZE}`;

// Donut of shares. items: [{label, value}]; `centerTop`/`centerBottom` are two lines of text in the hole.
export function donut(items, { size = 180, thickness = 28, centerTop = "", centerBottom = "", format = String } = {}) {
  const total = items.reduce((acc, it) => acc + Math.max(0, Number(it.value) || 0), 0);
  const r = size / 2 - 2;
  const inner = r - thickness;
  const c = size / 2;
  const svg = s("svg.chart.donut", { viewBox: `0 0 ${size} ${size}`, role: "img", "aria-label": "share chart" });
  if (total <= 0) {
    svg.append(s("circle.donut-empty", { cx: c, cy: c, r: (r + inner) / 2, "stroke-width": thickness, fill: "none" }));
  } else {
    let angle = -Math.PI / 2;
    items.forEach((it, i) => {
      const v = Math.max(0, Number(it.value) || 0);
      if (!v) return;
      const sweep = (v / total) * Math.PI * 2;
      const path =
        sweep >= Math.PI * 2 - 1e-6
          ? ringPath(c, r, inner)
          : arcPath(c, r, inner, angle, angle + sweep);
      svg.append(s(`path.${seriesClass(i)}`, { d: path }, s("title", {}, `${it.label}: ${format(v)} (${Math.round((v / total) * 100)}%)`)));
      angle += sweep;
    });
  }
  if (centerTop) svg.append(s("text.donut-center", { x: c, y: c - 2, "text-anchor": "middle" }, centerTop));
  if (centerBottom) svg.append(s("text.donut-sub", { x: c, y: c + 16, "text-anchor": "middle" }, centerBottom));
  return svg;
}

function polar(c, radius, a) {
  return [c + radius * Math.cos(a), c + radius * Math.sin(a)];
}

function arcPath(c, r, inner, a0, a1) {
  const large = a1 - a0 > Math.PI ? 1 : 0;
  const [x0, y0] = polar(c, r, a0);
  const [x1, y1] = polar(c, r, a1);
  const [x2, y2] = polar(c, inner, a1);
  const [x3, y3] = polar(c, inner, a0);
  const f = (n) => n.toFixed(2);
  return `M${f(x0)},${f(y0)} A${r},${r} 0 ${large} 1 ${f(x1)},${f(y1)} L${f(x2)},${f(y2)} A${inner},${inner} 0 ${large} 0 ${f(x3)},${f(y3)} Z`;
}

function ringPath(c, r, inner) {
  return `M${c - r},${c} a${r},${r} 0 1 0 ${2 * r},0 a${r},${r} 0 1 0 ${-2 * r},0 Z M${c - inner},${c} a${inner},${inner} 0 1 1 ${2 * inner},0 a${inner},${inner} 0 1 1 ${-2 * inner},0 Z`;
}

// A legend: coloured swatches with labels (and an optional value column).
export function legend(items, format = null) {
  return h(
    "ul.legend",
    {},
    items.map((it, i) =>
      h("li", {}, h(`span.swatch.${seriesClass(i)}`), h("span.legend-label", {}, it.label), format ? h("span.legend-value", {}, format(it.value)) : null),
    ),
  );
}

// The top of an axis with four even, round steps (1, 2, 2.5 or 5 × 10^k each), never below `minStep` per step.
export function niceMax(v, minStep = 0) {
  if (!(v > 0)) return Math.max(4 * minStep, 1);
  const raw = v / 4;
  const exp = Math.pow(10, Math.floor(Math.log10(raw)));
  let step = 10 * exp;
  for (const m of [1, 2, 2.5, 5, 10]) {
    if (m * exp >= raw) {
      step = m * exp;
      break;
    }
  }
  return 4 * Math.max(step, minStep);
}

const W = 640;
const H = 220;
const PAD = { top: 12, right: 56, bottom: 28, left: 56 };

function frame(labels, max, format, { rightMax = null, rightFormat = null } = {}) {
  const svg = s("svg.chart.xy", { viewBox: `0 0 ${W} ${H}`, role: "img" });
  const innerH = H - PAD.top - PAD.bottom;
  for (let i = 0; i <= 4; i++) {
    const y = PAD.top + innerH - (innerH * i) / 4;
    svg.append(s("line.grid", { x1: PAD.left, x2: W - PAD.right, y1: y, y2: y }));
    svg.append(s("text.axis", { x: PAD.left - 6, y: y + 4, "text-anchor": "end" }, format((max * i) / 4)));
    if (rightMax !== null) {
      svg.append(s("text.axis", { x: W - PAD.right + 6, y: y + 4, "text-anchor": "start" }, rightFormat((rightMax * i) / 4)));
    }
  }
  const step = (W - PAD.left - PAD.right) / Math.max(labels.length, 1);
  const every = Math.max(1, Math.ceil(labels.length / 8));
  labels.forEach((label, i) => {
    if (i % every) return;
    svg.append(s("text.axis", { x: PAD.left + step * (i + 0.5), y: H - 8, "text-anchor": "middle" }, label));
  });
  return { svg, step, innerH };
}

// Grouped bars. series: [{name, values}] aligned with labels.
export function barChart({ labels, series, format = String, minStep = 0 }) {
  const max = niceMax(Math.max(0, ...series.flatMap((se) => se.values.map(Number))), minStep);
  const { svg, step, innerH } = frame(labels, max, format);
  const groupW = Math.min(step * 0.7, 26 * series.length + 8);
  const barW = groupW / Math.max(series.length, 1);
  series.forEach((se, si) => {
    se.values.forEach((raw, i) => {
      const v = Math.max(0, Number(raw) || 0);
      const bh = (v / max) * innerH;
      const x = PAD.left + step * i + (step - groupW) / 2 + barW * si;
      svg.append(
        s(`rect.bar.${seriesClass(si)}`, { x: x.toFixed(1), y: (PAD.top + innerH - bh).toFixed(1), width: Math.max(1, barW - 2).toFixed(1), height: bh.toFixed(1), rx: 2 },
          s("title", {}, `${labels[i]} · ${se.name}: ${format(v)}`)),
      );
    });
  });
  return svg;
}

// Lines with points. series: [{name, values}] aligned with labels.
export function lineChart({ labels, series, format = String, minStep = 0 }) {
  const max = niceMax(Math.max(0, ...series.flatMap((se) => se.values.map(Number))), minStep);
  const { svg, step, innerH } = frame(labels, max, format);
  series.forEach((se, si) => drawLine(svg, se, si, labels, step, innerH, max, format));
  return svg;
}

function drawLine(svg, se, si, labels, step, innerH, max, format) {
  const pts = se.values.map((raw, i) => {
    const v = Math.max(0, Number(raw) || 0);
    return [PAD.left + step * (i + 0.5), PAD.top + innerH - (v / max) * innerH, v, i];
  });
  if (pts.length > 1) {
    svg.append(s(`polyline.line.${seriesClass(si)}`, { points: pts.map(([x, y]) => `${x.toFixed(1)},${y.toFixed(1)}`).join(" "), fill: "none" }));
  }
  for (const [x, y, v, i] of pts) {
    svg.append(s(`circle.point.${seriesClass(si)}`, { cx: x.toFixed(1), cy: y.toFixed(1), r: 3.5 }, s("title", {}, `${labels[i]} · ${se.name}: ${format(v)}`)));
  }
}

// Bars on the left axis and a line on the right axis (e.g. tokens per day and cost per day).
export function comboChart({ labels, bars, line, barFormat = String, lineFormat = String, minStep = 0 }) {
  const barMax = niceMax(Math.max(0, ...bars.values.map(Number)), minStep);
  const lineMax = niceMax(Math.max(0, ...line.values.map(Number)));
  const { svg, step, innerH } = frame(labels, barMax, barFormat, { rightMax: lineMax, rightFormat: lineFormat });
  const barW = Math.min(step * 0.6, 40);
  bars.values.forEach((raw, i) => {
    const v = Math.max(0, Number(raw) || 0);
    const bh = (v / barMax) * innerH;
    svg.append(
      s("rect.bar.series-0", { x: (PAD.left + step * i + (step - barW) / 2).toFixed(1), y: (PAD.top + innerH - bh).toFixed(1), width: barW.toFixed(1), height: bh.toFixed(1), rx: 2 },
        s("title", {}, `${labels[i]} · ${bars.name}: ${barFormat(v)}`)),
    );
  });
  drawLine(svg, line, 1, labels, step, innerH, lineMax, lineFormat);
  return svg;
}
