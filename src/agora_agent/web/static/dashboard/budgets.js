// Budgets as data in the Quota panel: every actor's and tenant's use against its limit, the stored rules, and a
// form to add, change or remove one (GET/PUT/DELETE {prefix}/governance/budgets). Changes are effective at the
// next chat and audited on the server; a refused edit shows the server's reason in words.

const percent = (share) => (share === null || share === undefined ? "—" : share >= 10 ? "over 999 %" : `${Math.round(share * 100)} %`);

function limitText(limit, formatCount, formatUsd) {
  if (!limit) return "no limit";
  const parts = [];
  if (limit.tokens !== null && limit.tokens !== undefined) parts.push(`${formatCount(limit.tokens)} ${limit.tokens === 1 ? "token" : "tokens"}`);
  if (limit.usd !== null && limit.usd !== undefined) parts.push(formatUsd(limit.usd));
  return `${parts.join(" + ")} per ${limit.period}`;
}

function sourceText(limit) {
  if (!limit) return "—";
  return limit.source === "config" ? "config default" : limit.source.replace(/^rule:/, "rule ").replace(/:\*$/, ": everyone");
}

// Parses "0.8, 95%" into [0.8, 0.95]; null when something is not a number.
function parseThresholds(raw) {
  const text = String(raw || "").trim();
  if (!text) return [];
  const values = text.split(/[\s,;]+/).filter(Boolean).map((part) => {
    const pct = part.endsWith("%");
    const n = Number(pct ? part.slice(0, -1) : part);
    return pct || n > 1 ? n / 100 : n;
  });
  return values.every((v) => Number.isFinite(v)) ? values : null;
}

export async function budgetSections({ get, send, h, clear, section, table, errorBox, formatCount, formatUsd, formatTimestamp, render, grant }) {
  let usage;
  let listed;
  let granted;
  try {
    [usage, listed, granted] = await Promise.all([get("/governance/budgets/usage"), get("/governance/budgets"), grant()]);
  } catch (err) {
    if (err.status === 404) return [h("div.banner.info", {}, "Budgets are off: set `budget=Budget(...)` in AgentConfig to store and edit budget rules here.")];
    if (err.status === 403) return []; // not an admin: only the caller's own usage above
    throw err;
  }
  const status = h("div", { id: "budget-status", role: "status" });
  const fail = (err) => clear(status, errorBox(err));
  const field = (label, input) => h("label", {}, label, input);
  const scope = h("select", { name: "scope" }, h("option", { value: "actor" }, "actor"), h("option", { value: "tenant" }, "tenant"));
  const key = h("input", { name: "key", required: true, placeholder: "actor id, tenant ref or *", type: "text" });
  const tenant = h("input", { name: "tenantRef", placeholder: "(actor rules) the actor's tenant", type: "text" });
  const period = h("select", { name: "period" }, h("option", { value: "day" }, "per day"), h("option", { value: "month" }, "per month"));
  const tokens = h("input", { name: "tokens", type: "number", min: "0", step: "1", placeholder: "no token limit" });
  const usd = h("input", { name: "usd", type: "number", min: "0", step: "any", placeholder: "no USD limit" });
  const thresholds = h("input", { name: "thresholds", type: "text", value: "80%", placeholder: "e.g. 80%, 95%" });
  const form = h(
    "form.price-form.budget-form",
    {},
    field("Scope", scope),
    field("Who", key),
    field("Tenant", tenant),
    field("Period", period),
    field("Tokens", tokens),
    field("USD", usd),
    field("Thresholds", thresholds),
    h("button.primary", { type: "submit" }, "Save budget"),
  );
  const edit = (rule) => {
    scope.value = rule.scope;
    key.value = rule.key;
    tenant.value = rule.tenantRef || "";
    period.value = rule.period || "day";
    tokens.value = rule.tokens ?? "";
    usd.value = rule.usd ?? "";
    thresholds.value = (rule.thresholds || []).map((t) => `${Math.round(t * 100)}%`).join(", ");
    key.focus();
  };
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    const who = key.value.trim();
    if (!who) return fail(new Error("Say whose budget this is: an actor id, a tenant ref, or * for everyone."));
    const marks = parseThresholds(thresholds.value);
    if (marks === null) return fail(new Error(`Thresholds must be percentages such as "80%, 95%" (got "${thresholds.value}").`));
    const body = { period: period.value, thresholds: marks };
    if (tokens.value !== "") body.tokens = Number(tokens.value);
    if (usd.value !== "") body.usd = Number(usd.value);
    if (scope.value === "actor" && tenant.value.trim()) body.tenantRef = tenant.value.trim();
    try {
      await send("PUT", `/governance/budgets/${scope.value}/${encodeURIComponent(who)}`, body);
      render();
    } catch (err) {
      fail(err);
    }
  });
  const remove = async (rule) => {
    if (!window.confirm(`Remove the budget of ${rule.scope} ${rule.key}? It falls back to the * rule or the config default.`)) return;
    try {
      await send("DELETE", `/governance/budgets/${rule.scope}/${encodeURIComponent(rule.key)}`);
      render();
    } catch (err) {
      fail(err);
    }
  };
  const d = usage.defaults;
  const defaults = [
    d.tokensPerActor !== null ? `${formatCount(d.tokensPerActor)} tokens per actor` : null,
    d.usdPerActor !== null ? `${formatUsd(d.usdPerActor)} per actor` : null,
    d.tokensPerTenant !== null ? `${formatCount(d.tokensPerTenant)} tokens per tenant` : null,
    d.usdPerTenant !== null ? `${formatUsd(d.usdPerTenant)} per tenant` : null,
  ].filter(Boolean);
  const meter = (share) => h(`div.meter${share >= 1 ? ".over" : ""}`, {}, h("span", { style: `width: ${Math.min(1, share || 0) * 100}%` }));
  return [
    section(
      `Use against budgets (${usage.day}, UTC)`,
      h("p.muted", {}, defaults.length ? `Config defaults, per ${d.period}: ${defaults.join(", ")}.` : "No config defaults: only stored rules limit anyone."),
      table(
        [
          { label: "Scope", value: (r) => r.scope },
          { label: "Who", value: (r) => h("span", { title: r.key }, r.key) },
          { label: "Tenant", value: (r) => (r.scope === "actor" ? r.tenantRef || "—" : "") },
          { label: "Today", value: (r) => `${formatCount(r.dayTokens)} · ${formatUsd(r.dayUsd)}`, num: true },
          { label: "This month", value: (r) => `${formatCount(r.monthTokens)} · ${formatUsd(r.monthUsd)}`, num: true },
          { label: "Budget", value: (r) => limitText(r.limit, formatCount, formatUsd) },
          { label: "Used", value: (r) => (r.limit ? h("div.budget-use", {}, meter(r.limit.share), percent(r.limit.share)) : "—") },
          { label: "From", value: (r) => sourceText(r.limit) },
          { label: "", value: (r) => h("button", { type: "button", onclick: () => edit({ scope: r.scope, key: r.key, tenantRef: r.tenantRef, period: r.limit ? r.limit.period : "day", tokens: r.limit ? r.limit.tokens : null, usd: r.limit ? r.limit.usd : null, thresholds: r.limit ? r.limit.thresholds : [0.8] }) }, "Set budget") },
        ],
        usage.rows,
        { empty: "No usage this month yet" },
      ),
    ),
    section(
      "Budget rules",
      table(
        [
          { label: "Scope", value: (r) => r.scope },
          { label: "Who", value: (r) => (r.key === "*" ? "* (everyone without a rule)" : r.key) },
          { label: "Budget", value: (r) => (r.tokens === null && r.usd === null ? "exempt (no limit)" : limitText(r, formatCount, formatUsd)) },
          { label: "Thresholds", value: (r) => (r.thresholds.length ? r.thresholds.map((t) => `${Math.round(t * 100)} %`).join(", ") : "—") },
          { label: "Changed", value: (r) => `${r.updatedBy || "—"} · ${r.updatedAt ? formatTimestamp(r.updatedAt) : ""}` },
          // The `*` rules are everyone's: a tenant admin sees them but only a global grant changes them.
          { label: "", value: (r) => (r.key === "*" && granted.scope !== "global" ? h("span.muted", {}, "global admins only") : h("span.actions", {}, h("button", { type: "button", onclick: () => edit(r) }, "Edit"), " ", h("button.danger", { type: "button", onclick: () => remove(r) }, "Remove"))) },
        ],
        listed.rules,
        { empty: "No stored rules: the config defaults apply" },
      ),
    ),
    section("Add or change a budget", h("p.muted", {}, "Leave tokens and USD empty to exempt someone from the default; 0 blocks them. Effective at the next chat."), form, status),
  ];
}
