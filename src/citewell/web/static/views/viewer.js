// A file's extracted text with its pages and headings; opened at ?start=&end= it scrolls to
// that span and highlights it (the passage a citation points at).
import { api, download } from "../api.js";
import { button, bytes, h } from "../dom.js";

export async function viewerView({ args, params }) {
  const [id] = args;
  const path = `/api/v1/files/${encodeURIComponent(id)}`;
  const [file, body] = await Promise.all([api(path), api(`${path}/text`)]);
  const start = clamp(params.get("start"), body.text.length);
  const end = clamp(params.get("end"), body.text.length);
  const span = start !== null && end !== null && end > start ? [start, end] : null;
  const { doc, outline } = renderText(body.text, body.sections, span);
  const view = h("section", { class: "viewer" },
    h("p", {}, h("a", { href: "#/kbs", onclick: back }, "← Back")),
    h("h1", {}, file.name),
    h("p", { class: "meta" },
      `${file.type.toUpperCase()} · ${bytes(file.size)} · ${file.chunk_count} chunks · ${file.status}`,
      file.url && /^https?:\/\//.test(file.url) ? [" · ", h("a", { href: file.url, rel: "noopener noreferrer", target: "_blank" }, "source page")] : null,
      " ",
      button("Download the original", () => download(file))),
    span ? h("p", { class: "cited" }, `Showing the cited passage (characters ${span[0]}–${span[1]}).`) : null,
    h("div", { class: "viewer-body" },
      outline.length ? h("nav", { class: "outline", "aria-label": "Pages and headings" }, h("ul", {}, outline)) : null,
      doc));
  if (span) {
    requestAnimationFrame(() => {
      const mark = view.querySelector("mark.cited-span");
      if (mark) {
        mark.scrollIntoView({ block: "center" });
        mark.focus({ preventScroll: true });
      }
    });
  }
  return view;
}

function back(event) {
  if (history.length > 1) {
    event.preventDefault();
    history.back();
  }
}

function clamp(value, length) {
  if (value === null || value === "" || Number.isNaN(Number(value))) return null;
  return Math.max(0, Math.min(length, Math.trunc(Number(value))));
}

/** The text as nodes: a marker where a page or heading starts, the cited span as <mark>. */
function renderText(text, sections, span) {
  const cuts = new Set([0, text.length]);
  const starts = new Map();
  let lastPage = null;
  let lastHeadings = "";
  for (const section of sections) {
    const headings = section.headings.join(" › ");
    const marker = [];
    if (section.page !== null && section.page !== lastPage) marker.push({ kind: "page", label: `Page ${section.page}` });
    if (headings && headings !== lastHeadings) marker.push({ kind: "heading", label: headings });
    lastPage = section.page;
    lastHeadings = headings;
    if (marker.length) {
      starts.set(section.start, marker);
      cuts.add(section.start);
    }
  }
  if (span) span.forEach((at) => cuts.add(at));
  const points = [...cuts].filter((at) => at >= 0 && at <= text.length).sort((a, b) => a - b);
  const doc = h("div", { class: "doc", lang: "" });
  const outline = [];
  let mark = null;
  for (let i = 0; i < points.length - 1; i += 1) {
    const [from, to] = [points[i], points[i + 1]];
    for (const marker of starts.get(from) || []) {
      const anchor = `at-${from}-${marker.kind}`;
      doc.append(h("span", { class: `marker ${marker.kind}`, id: anchor, role: "note" }, marker.label));
      mark = null; // a span that crosses a page goes on in a <mark> of its own after it
      outline.push(h("li", { class: marker.kind }, h("a", { href: `#${anchor}`, onclick: jump(anchor) }, marker.label)));
    }
    const piece = document.createTextNode(text.slice(from, to));
    if (span && from >= span[0] && to <= span[1]) {
      if (!mark) {
        mark = h("mark", { class: "cited-span", tabindex: "-1", "aria-label": "Cited passage" });
        doc.append(mark);
      }
      mark.append(piece);
    } else {
      doc.append(piece);
    }
  }
  return { doc, outline };
}

/** In-page links must not change the address (it holds the view). */
function jump(anchor) {
  return (event) => {
    event.preventDefault();
    document.getElementById(anchor).scrollIntoView({ block: "start" });
  };
}
