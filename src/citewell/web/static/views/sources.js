// Sources of an answer or a search: links that open the viewer at the exact passage.
import { h } from "../dom.js";

export function sourceLink(meta) {
  const query = new URLSearchParams({ start: meta.start, end: meta.end });
  return `#/file/${encodeURIComponent(meta.file_id)}?${query}`;
}

function label(source) {
  const meta = source.metadata;
  return `${meta.name}${meta.page != null ? `, page ${meta.page}` : ""}`;
}

/** Where a chip for source n in the sentence around offset `at` points: the span of the
 *  source that supports that sentence (its attribution), else the whole source. */
function citedSpan(source, n, at, attributed) {
  const sentence = (attributed || []).find((s) => s.start <= at && at < s.end);
  if (sentence && sentence.source === n && sentence.quote_start != null) {
    return { ...source.metadata, start: sentence.quote_start, end: sentence.quote_end };
  }
  return source.metadata;
}

/** The answer's text with each [n] (and [n, m]) as a chip for source n. */
export function citedText(text, sources, attributed) {
  const byId = new Map((sources || []).map((s) => [s.id, s]));
  const parts = [];
  let at = 0;
  for (const match of text.matchAll(/\[(\d+(?:\s*,\s*\d+)*)\]/g)) {
    const numbers = match[1].split(",").map((n) => Number(n.trim()));
    if (!numbers.every((n) => byId.has(n))) continue;
    parts.push(text.slice(at, match.index));
    for (const n of numbers) {
      const source = byId.get(n);
      const span = citedSpan(source, n, match.index, attributed);
      parts.push(h("a", { class: "chip", href: sourceLink(span), "aria-label": `Source ${n}: ${label(source)}`, title: label(source) }, String(n)));
    }
    at = match.index + match[0].length;
  }
  parts.push(text.slice(at));
  return h("p", { class: "cited-text" }, parts);
}

export function sourcesList(sources) {
  return h("ol", { class: "sources" }, sources.map((source) => {
    const meta = source.metadata;
    return h("li", { value: source.id },
      h("a", { href: sourceLink(meta) }, label(source)),
      h("span", { class: "score" }, ` score ${Number(meta.score).toFixed(3)}`),
      h("blockquote", {}, source.content.length > 400 ? `${source.content.slice(0, 400)}…` : source.content));
  }));
}
