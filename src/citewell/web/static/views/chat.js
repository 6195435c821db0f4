// Chat: streamed answers from the chosen model and KBs, [n] as chips that open the cited
// passage, the sources and the retrieval trace. Conversations stay in this browser only.
import { api, events } from "../api.js";
import { clear, field, form, h, notice, table } from "../dom.js";
import { citedText, sourcesList } from "./sources.js";

const STORE = "citewell.chats";

function loadChats() {
  try {
    return JSON.parse(localStorage.getItem(STORE)) || [];
  } catch {
    return [];
  }
}

function saveChats(chats) {
  localStorage.setItem(STORE, JSON.stringify(chats.slice(0, 50)));
}

export async function chatView({ params, signal }) {
  const [models, kbs] = await Promise.all([api("/v1/models"), api("/api/v1/knowledge")]);
  const chats = loadChats();
  let chat = chats.find((c) => c.id === params.get("c")) || newChat(params.get("kb"));
  const messages = h("ol", { class: "messages", "aria-label": "Conversation" });
  const modelSelect = h("select", { name: "model" },
    models.data.map((m) => h("option", { value: m.id, selected: m.id === chat.model }, m.id)));
  const kbBoxes = h("fieldset", { class: "kb-pick" }, h("legend", {}, "Knowledge bases"),
    kbs.length ? kbs.map((kb) => h("label", {},
      h("input", { type: "checkbox", value: kb.id, checked: chat.kbs.includes(kb.id) }), ` ${kb.name}`))
      : h("p", {}, "None yet: create one first."));
  const history = h("ul", { class: "chat-list" });
  const showHistory = () => clear(history, chats.map((c) => h("li", {},
    h("a", { href: `#/chat?c=${encodeURIComponent(c.id)}`, "aria-current": c.id === chat.id ? "page" : false }, c.title || "New chat"))));
  const showMessages = () => clear(messages, chat.messages.map(messageItem));
  const ask = form({ class: "ask", "aria-label": "Ask" }, [
    field("Your question", h("textarea", { name: "question", rows: 3, required: true, onkeydown: submitOnEnter })),
    h("button", { type: "submit" }, "Send"),
  ], async (node) => {
    const question = node.elements.question.value.trim();
    if (!question) return;
    chat.model = modelSelect.value;
    chat.kbs = [...kbBoxes.querySelectorAll("input:checked")].map((box) => box.value);
    if (!chat.title) chat.title = question.slice(0, 60);
    if (!chats.includes(chat)) chats.unshift(chat);
    chat.messages.push({ role: "user", content: question });
    node.elements.question.value = "";
    const answer = { role: "assistant", content: "", sources: [], trace: null, extractive: false, pending: true };
    chat.messages.push(answer);
    showHistory();
    showMessages();
    try {
      await stream(chat, answer, messages.lastElementChild, signal);
    } catch (error) {
      answer.error = error.message;
    } finally {
      answer.pending = false;
      saveChats(chats);
      showMessages();
      messages.lastElementChild?.scrollIntoView({ block: "end" });
    }
  });
  showHistory();
  showMessages();
  const fresh = h("a", { href: `#/chat?new=${Date.now()}`, class: "as-button" }, "New chat");
  const forget = h("button", { type: "button", onclick: () => {
    const at = chats.indexOf(chat);
    if (at >= 0) chats.splice(at, 1);
    saveChats(chats);
    notice("Conversation deleted from this browser.");
    location.hash = "#/chat";
  } }, "Delete this conversation");
  return h("section", { class: "chat" },
    h("h1", {}, "Chat"),
    h("div", { class: "chat-layout" },
      h("aside", { "aria-label": "Conversations" }, fresh, history,
        h("p", { class: "hint" }, "Conversations are kept in this browser only; the server stores no chats."), forget),
      h("div", { class: "chat-main" }, h("div", { class: "chat-options" }, field("Model", modelSelect), kbBoxes), messages, ask)));
}

function newChat(kb) {
  return { id: crypto.randomUUID(), title: "", model: "", kbs: kb ? [kb] : [], messages: [] };
}

function submitOnEnter(event) {
  if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
    event.preventDefault();
    event.target.form.requestSubmit();
  }
}

/** One streamed completion: the text grows as it arrives, sources come first. */
async function stream(chat, answer, item, signal) {
  const body = {
    model: chat.model,
    messages: chat.messages.filter((m) => !m.pending && !m.error).map(({ role, content }) => ({ role, content })),
    knowledge_collections: chat.kbs,
    stream: true,
    retrieval_trace: true,
  };
  for await (const { data } of events("/v1/chat/completions", { method: "POST", json: body, signal })) {
    if (data === "[DONE]") break;
    const chunk = JSON.parse(data);
    if (chunk.error) throw new Error(chunk.error.message);
    if (chunk.sources) answer.sources = chunk.sources;
    if (chunk.retrieval_trace) answer.trace = chunk.retrieval_trace;
    if (chunk.extractive) answer.extractive = true;
    // The last chunk: the answer with its citations checked against the sources.
    if (chunk.attribution && chunk.attribution.content !== undefined) {
      answer.content = chunk.attribution.content;
      answer.attributed = chunk.attribution.sentences;
      item.replaceWith((item = messageItem(answer)));
    }
    const delta = chunk.choices && chunk.choices[0] && chunk.choices[0].delta;
    if (delta && delta.content) {
      answer.content += delta.content;
      item.replaceWith((item = messageItem(answer)));
    }
  }
}

function messageItem(message) {
  if (message.role === "user") return h("li", { class: "message user" }, h("p", { class: "who" }, "You"), h("p", {}, message.content));
  return h("li", { class: "message assistant", "aria-busy": message.pending ? "true" : false },
    h("p", { class: "who" }, "Citewell", message.extractive ? h("span", { class: "badge", title: "No LLM: sentences quoted from the sources" }, "extractive answer") : null),
    h("div", { class: "answer" }, message.pending && !message.content ? "Searching…" : citedText(message.content, message.sources, message.attributed)),
    message.error ? h("p", { class: "error", role: "alert" }, message.error) : null,
    message.sources && message.sources.length ? h("details", { class: "sources-panel", open: true },
      h("summary", {}, `Sources (${message.sources.length})`), sourcesList(message.sources)) : null,
    message.trace ? traceDetails(message.trace) : null);
}

function traceDetails(trace) {
  const { queries = [], hits = [], ...rest } = trace;
  const num = (value) => (value === null || value === undefined ? "–" : Number(value).toFixed(4));
  const rank = (value) => (value === null || value === undefined ? "–" : String(value + 1)); // 0-based in the API
  return h("details", { class: "trace" },
    h("summary", {}, "Retrieval trace"),
    h("p", {}, "Queries:"), h("ul", {}, queries.map((q) => h("li", {}, q))),
    hits.map((searched) => table(`Hits for “${searched.query}”`,
      ["#", "File", "Fused score", "Vector rank", "Vector score", "BM25 rank", "BM25 score"],
      searched.results.map((hit, i) => h("tr", {},
        h("td", {}, String(i + 1)), h("td", {}, hit.file), h("td", {}, num(hit.score)),
        h("td", {}, rank(hit.vector_rank)), h("td", {}, num(hit.vector_score)),
        h("td", {}, rank(hit.bm25_rank)), h("td", {}, num(hit.bm25_score)))))),
    h("pre", {}, JSON.stringify(rest, null, 2)));
}
