// A file's extracted text with its pages and headings; opened at ?start=&end= it scrolls to
// that span and highlights it (the passage a citation points at). For a PDF whose lines'
// boxes are known, the cited page itself is shown first, the passage's lines highlighted on
// it; the extracted text is one click away.
import { api, download, imageUrl } from "../api.js";
import { button, bytes, h } from "../dom.js";

export async function viewerView({ args, params }) {
  const [id] = args;
  const path = `/api/v1/files/${encodeURIComponent(id)}`;
  const [file, body] = await Promise.all([api(path), api(`${path}/text`)]);
  const start = clamp(params.get("start"), body.text.length);
  const end = clamp(params.get("end"), body.text.length);
  const span = start !== null && end !== null && end > start ? [start, end] : null;
  const { doc, outline } = renderText(body.text, body.sections, span);
  const onPage = span && file.mime_type === "application/pdf" ? citedPage(body.sections, span) : null;
  const textView = h("div", { class: "viewer-body", hidden: onPage ? true : null },
    outline.length ? h("nav", { class: "outline", "aria-label": "Pages and headings" }, h("ul", {}, outline)) : null,
    doc);
  const pageView = onPage ? await renderPage(path, onPage) : null;
  const toggle = pageView ? button("Show the extracted text", () => {
    const showText = textView.hidden;
    textView.hidden = !showText;
    pageView.hidden = showText;
    toggle.textContent = showText ? "Show the page" : "Show the extracted text";
    if (showText) focusOn(view.querySelector("mark.cited-span"));
  }) : null;
  const view = h("section", { class: "viewer" },
    h("p", {}, h("a", { href: "#/kbs", onclick: back }, "← Back")),
    h("h1", {}, file.name),
    h("p", { class: "meta" },
      `${file.type.toUpperCase()} · ${bytes(file.size)} · ${file.chunk_count} chunks · ${file.status}`,
      file.url && /^https?:\/\//.test(file.url) ? [" · ", h("a", { href: file.url, rel: "noopener noreferrer", target: "_blank" }, "source page")] : null,
      " ",
      button("Download the original", () => download(file))),
    span ? h("p", { class: "cited" }, `Showing the cited passage (characters ${span[0]}–${span[1]})`,
      onPage ? ` on page ${onPage.section.page}. ` : ". ", toggle) : null,
    pageView,
    textView);
  if (span) requestAnimationFrame(() => focusOn(view.querySelector(pageView ? ".page-mark" : "mark.cited-span")));
  return view;
}

function focusOn(element) {
  if (!element) return;
  element.scrollIntoView({ block: "center" });
  element.focus({ preventScroll: true });
}

/** The page the span starts on and the boxes of its lines the span touches, if known. */
function citedPage(sections, span) {
  const section = sections.find((s) => s.page !== null && s.start <= span[0] && span[0] < s.end);
  if (!section || !section.boxes || !section.boxes.length) return null;
  const boxes = section.boxes.filter(([from, to]) => from < span[1] && span[0] < to);
  return boxes.length ? { section, boxes } : null;
}

/** The page as an image with the cited lines' boxes over it (as shares of the page). */
async function renderPage(path, { section, boxes }) {
  const url = await imageUrl(`${path}/pages/${section.page}/image`);
  const marks = boxes.map(([, , x0, top, x1, bottom], i) => {
    const mark = h("span", {
      class: "page-mark",
      tabindex: i === 0 ? "-1" : null,
      "aria-label": i === 0 ? "Cited passage" : null,
    });
    // through the CSSOM: the page's CSP allows no style attributes
    Object.assign(mark.style, { left: pct(x0), top: pct(top), width: pct(x1 - x0), height: pct(bottom - top) });
    return mark;
  });
  return h("figure", { class: "page-view" },
    h("div", { class: "page" }, h("img", { src: url, alt: `Page ${section.page}` }), marks),
    h("figcaption", {}, `Page ${section.page}`));
}

function pct(share) {
  return `${(Math.max(0, share) * 100).toFixed(3)}%`;
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
