// Display formatters shared by the dashboard and the chat page (REFERENCE DASH-20).

const MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];

// $1.23, <$0.01 for tiny non-zero amounts, $1.50k, $2.00M; anything non-finite is $0.00.
export function formatUsd(value) {
  const v = Number(value);
  if (value === null || value === undefined || !Number.isFinite(v)) return "$0.00";
  const sign = v < 0 ? "-" : "";
  const a = Math.abs(v);
  if (a === 0) return "$0.00";
  if (a < 0.01) return `${sign}<$0.01`;
  if (a >= 1e6) return `${sign}$${(a / 1e6).toFixed(2)}M`;
  if (a >= 1e3) return `${sign}$${(a / 1e3).toFixed(2)}k`;
  return `${sign}$${a.toFixed(2)}`;
}

// 950, 1.5k, 2.0M, 3.1B.
export function formatCount(value) {
  const v = Number(value);
  if (value === null || value === undefined || !Number.isFinite(v)) return "0";
  const a = Math.abs(v);
  if (a >= 1e9) return `${(v / 1e9).toFixed(1)}B`;
  if (a >= 1e6) return `${(v / 1e6).toFixed(1)}M`;
  if (a >= 1e3) return `${(v / 1e3).toFixed(1)}k`;
  return String(Math.round(v));
}

// A fraction (0..1) as a rounded whole percentage.
export function formatPercent(value) {
  const v = Number(value);
  if (value === null || value === undefined || !Number.isFinite(v)) return "0%";
  return `${Math.round(v * 100)}%`;
}

// 850ms, 1.2s, 3.5m, 1.1h; null/undefined -> —.
export function formatDuration(ms) {
  if (ms === null || ms === undefined) return "—";
  const v = Number(ms);
  if (!Number.isFinite(v)) return "—";
  if (v < 1000) return `${Math.round(v)}ms`;
  if (v < 60_000) return `${(v / 1000).toFixed(1)}s`;
  if (v < 3_600_000) return `${(v / 60_000).toFixed(1)}m`;
  return `${(v / 3_600_000).toFixed(1)}h`;
}

// Bedrock inference-profile ARNs become the profile id; everything else is shown as is.
export function formatModelLabel(modelId) {
  const s = String(modelId ?? "");
  if (s.startsWith("arn:") && s.includes("/")) return s.slice(s.lastIndexOf("/") + 1);
  return s;
}

// `Mon D, HH:MM` in UTC; anything unparsable -> —.
export function formatTimestamp(value) {
  if (value === null || value === undefined || value === "") return "—";
  const d = value instanceof Date ? value : new Date(value);
  if (Number.isNaN(d.getTime())) return "—";
  const hh = String(d.getUTCHours()).padStart(2, "0");
  const mm = String(d.getUTCMinutes()).padStart(2, "0");
  return `${MONTHS[d.getUTCMonth()]} ${d.getUTCDate()}, ${hh}:${mm}`;
}

// Short ids for tables: the first 8 characters, full id in the title attribute.
export function shortId(id) {
  const s = String(id ?? "");
  return s.length > 10 ? `${s.slice(0, 8)}…` : s;
}
