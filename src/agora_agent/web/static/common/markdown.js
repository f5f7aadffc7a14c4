// Markdown for model answers: marked (GFM) parses, DOMPurify sanitises, and nothing a model writes can run.
// Images are not loaded (a model tricked by a prompt injection could otherwise leak data through an image
// URL): they are shown as links. Links open in a new tab without a referrer. Code blocks get a copy button.
import { marked } from "./vendor/marked.js";
import DOMPurify from "./vendor/purify.js";

const PURIFY = {
  USE_PROFILES: { html: true },
  FORBID_TAGS: ["style", "form", "input", "button", "textarea", "select", "img", "picture", "video", "audio", "iframe", "svg", "math"],
  FORBID_ATTR: ["style", "class", "id"],
  ALLOWED_URI_REGEXP: /^(?:https?:|mailto:|#)/i,
};

const parser = marked;
parser.use({
  gfm: true,
  breaks: true,
  renderer: {
    image({ href, title, text }) {
      const label = text || title || href;
      return `<a href="${escapeAttr(href)}">[image: ${escapeHtml(label)}]</a>`;
    },
  },
});

function escapeHtml(text) {
  return String(text).replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);
}
const escapeAttr = escapeHtml;

function copyButton(pre) {
  const button = document.createElement("button");
  button.type = "button";
  button.className = "copy-code ghost";
  button.textContent = "Copy";
  button.addEventListener("click", async () => {
    try {
      await navigator.clipboard.writeText(pre.innerText);
      button.textContent = "Copied";
    } catch {
      button.textContent = "Select and copy";
    }
    setTimeout(() => (button.textContent = "Copy"), 1500);
  });
  return button;
}

// `text` (Markdown) → a DocumentFragment of sanitised nodes.
export function renderMarkdown(text) {
  const html = parser.parse(String(text ?? ""), { async: false });
  const fragment = DOMPurify.sanitize(html, { ...PURIFY, RETURN_DOM_FRAGMENT: true });
  for (const a of fragment.querySelectorAll("a[href]")) {
    a.setAttribute("target", "_blank");
    a.setAttribute("rel", "noopener noreferrer nofollow");
  }
  for (const pre of fragment.querySelectorAll("pre")) {
    const wrap = document.createElement("div");
    wrap.className = "codeblock";
    pre.replaceWith(wrap);
    wrap.append(copyButton(pre), pre);
  }
  for (const table of fragment.querySelectorAll("table")) {
    const wrap = document.createElement("div");
    wrap.className = "table-scroll";
    table.replaceWith(wrap);
    wrap.append(table);
  }
  return fragment;
}
