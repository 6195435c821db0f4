// Search playground: one query in each mode side by side, with each retriever's score.
import { api } from "../api.js";
import { clear, field, form, h } from "../dom.js";
import { sourceLink } from "./sources.js";

const MODES = ["hybrid", "vector", "bm25"];

export async function searchView() {
  const kbs = await api("/api/v1/knowledge");
  const results = h("div", { class: "columns", "aria-live": "polite" });
  const pick = h("fieldset", { class: "kb-pick" }, h("legend", {}, "Knowledge bases"),
    kbs.map((kb, i) => h("label", {}, h("input", { type: "checkbox", value: kb.id, checked: i === 0 }), ` ${kb.name}`)));
  const search = form({ "aria-label": "Search" }, [
    field("Query", h("input", { name: "query", type: "search", required: true })),
    field("Results per mode", h("input", { name: "k", type: "number", min: 1, max: 100, value: "8" })),
    pick,
    h("button", { type: "submit" }, "Search"),
  ], async (node) => {
    const names = [...pick.querySelectorAll("input:checked")].map((box) => box.value);
    if (!names.length) throw new Error("Pick at least one knowledge base.");
    const body = { collection_names: names, query: node.elements.query.value, k: Number(node.elements.k.value) || 8 };
    clear(results, h("p", {}, "Searching…"));
    const answers = await Promise.all(MODES.map(async (mode) => {
      const started = performance.now();
      const found = await api("/api/v1/retrieval/query/collection", { method: "POST", json: { ...body, mode } });
      return { mode, found, ms: performance.now() - started };
    }));
    clear(results, answers.map(column));
  });
  return h("section", {}, h("h1", {}, "Search"),
    h("p", {}, "The same query in each retrieval mode, with the vector and BM25 scores behind each hit."),
    kbs.length ? search : h("p", {}, "No knowledge base to search yet."), results);
}

function column({ mode, found, ms }) {
  return h("section", { class: "column", "aria-label": `${mode} results` },
    h("h2", {}, mode, h("small", {}, ` ${found.results.length} hits · ${Math.round(ms)} ms`)),
    h("ol", { class: "hits" }, found.results.map((hit) => h("li", {},
      h("a", { href: sourceLink(hit) }, `${hit.name}${hit.page != null ? `, page ${hit.page}` : ""}`),
      h("dl", { class: "scores" },
        h("dt", {}, "score"), h("dd", {}, fmt(hit.score)),
        h("dt", {}, "vector"), h("dd", {}, fmt(hit.vector_score)),
        h("dt", {}, "bm25"), h("dd", {}, fmt(hit.bm25_score))),
      hit.headings && hit.headings.length ? h("p", { class: "headings" }, hit.headings.join(" › ")) : null,
      h("blockquote", {}, hit.text.length > 300 ? `${hit.text.slice(0, 300)}…` : hit.text)))));
}

function fmt(value) {
  return value === null || value === undefined ? "–" : Number(value).toFixed(4);
}
