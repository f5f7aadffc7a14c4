// The RAG panel (REFERENCE OBS-09): inject-mode retrievals, zero-hit rate, mean passages per retrieval and the
// per-day trend, from GET /governance/rag/stats. Its own module so the other panels' files stay untouched.

export async function ragPanel({ get, h, head, stat, section, table, barChart, legend, formatCount, formatPercent, range, rangePicker, render }) {
  const s = await get("/governance/rag/stats", { from: range.from, to: range.to });
  const picker = rangePicker(render);
  if (!s.retrievals) {
    return [head("Retrieval", picker), h("div.card.empty", {}, "No retrievals in this range — configure a retriever (inject mode) and chat.")];
  }
  const days = s.trend.map((p) => String(p.day).slice(5));
  return [
    head("Retrieval", picker),
    h(
      "div.stats",
      {},
      stat("Retrievals", formatCount(s.retrievals)),
      stat("Zero-hit rate", formatPercent(s.zeroHitRate), "retrievals that found no passage"),
      stat("Mean passages", s.meanPassages.toFixed(2), "passages that reached the model per retrieval"),
    ),
    section(
      "Retrievals vs zero hits per day",
      barChart({ labels: days, series: [{ name: "retrievals", values: s.trend.map((p) => p.retrievals) }, { name: "zero hits", values: s.trend.map((p) => p.zeroHits) }], format: formatCount, minStep: 1 }),
      legend([{ label: "retrievals" }, { label: "zero hits" }]),
    ),
    section(
      "By day",
      table(
        [
          { label: "Day", value: (p) => p.day },
          { label: "Retrievals", value: (p) => formatCount(p.retrievals), num: true },
          { label: "Zero hits", value: (p) => formatCount(p.zeroHits), num: true },
          { label: "Mean passages", value: (p) => p.meanPassages.toFixed(2), num: true },
        ],
        [...s.trend].reverse(),
      ),
    ),
  ];
}
