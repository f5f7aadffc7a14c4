// A tiny hyperscript helper: h("div.card", {onclick}, child, …). Children may be strings, nodes, arrays or null.
const SVG_NS = "http://www.w3.org/2000/svg";

function build(ns, spec, props, children) {
  const [tag, ...classes] = spec.split(".");
  const el = ns ? document.createElementNS(ns, tag) : document.createElement(tag);
  if (classes.length) el.setAttribute("class", classes.join(" "));
  for (const [key, value] of Object.entries(props || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key.startsWith("on") && typeof value === "function") el.addEventListener(key.slice(2), value);
    else if (key === "dataset") Object.assign(el.dataset, value);
    else if (key === "text") el.textContent = value;
    else if (key === "class") el.setAttribute("class", [el.getAttribute("class"), value].filter(Boolean).join(" "));
    else el.setAttribute(key, value === true ? "" : String(value));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

export const h = (spec, props, ...children) => build(null, spec, props, children);
export const s = (spec, props, ...children) => build(SVG_NS, spec, props, children);

export function clear(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

// Pretty JSON for tool inputs/outputs, shortened so a huge result does not flood the page.
export function prettyJson(value, max = 4000) {
  let text;
  try {
    text = typeof value === "string" ? value : JSON.stringify(value, null, 2);
  } catch {
    text = String(value);
  }
  if (text === undefined) text = "";
  return text.length > max ? `${text.slice(0, max)}\n… (${text.length - max} more characters)` : text;
}
