// Knowledge bases: the list, and one KB with its files, uploads, live progress and sharing.
import { api, events, kbPath, upload } from "../api.js";
import { button, clear, field, form, h, notice, table, when } from "../dom.js";
import { fileBrowser, sourcesPanel } from "./folders.js";
import { sharingPanel } from "./sharing.js";

export async function kbListView() {
  const kbs = await api("/api/v1/knowledge");
  const rows = kbs.map((kb) =>
    h("tr", {},
      h("td", {}, h("a", { href: `#/kb/${encodeURIComponent(kb.id)}` }, kb.name)),
      h("td", {}, kb.description),
      h("td", { class: "num" }, kb.file_count),
      h("td", {}, when(kb.updated_at))));
  const create = form({ class: "inline", "aria-label": "New knowledge base" }, [
    field("Name", h("input", { name: "name", required: true, maxlength: 200 })),
    field("Description", h("input", { name: "description" })),
    h("button", { type: "submit" }, "Create"),
  ], async (node) => {
    const body = { name: node.elements.name.value.trim(), description: node.elements.description.value };
    const kb = await api("/api/v1/knowledge", { method: "POST", json: body });
    location.hash = `#/kb/${encodeURIComponent(kb.id)}`;
  });
  return h("section", {},
    h("h1", {}, "Knowledge bases"),
    create,
    kbs.length
      ? table("Your knowledge bases and those shared with you", ["Name", "Description", "Files", "Changed"], rows)
      : h("p", {}, "No knowledge base yet: create one above, then add files to it."));
}

const DONE = new Set(["indexed", "failed", "cancelled"]);
const PER_REQUEST_FILES = 20;
const PER_REQUEST_BYTES = 64 * 1024 * 1024;

export async function kbView({ args, signal }) {
  const [id] = args;
  const kb = await api(kbPath(id));
  const files = fileBrowser(kb);
  const jobsBox = h("div", { "aria-live": "polite" });
  const jobs = new Map();
  const refreshFiles = () => files.refresh();
  await refreshFiles();
  followJobs(kb, jobs, jobsBox, refreshFiles, signal);
  return h("section", {},
    h("p", {}, h("a", { href: "#/kbs" }, "← Knowledge bases")),
    h("h1", {}, kb.name),
    kb.description ? h("p", {}, kb.description) : null,
    h("p", {}, h("a", { href: `#/chat?kb=${encodeURIComponent(kb.id)}` }, "Ask this knowledge base")),
    addFiles(kb, jobsBox),
    h("h2", {}, "Progress"),
    jobsBox,
    h("h2", {}, "Files"),
    files,
    await sourcesPanel(kb),
    await sharingPanel(kb),
    settingsPanel(kb));
}

/** Every job of the KB as it changes (SSE from the job queue), until the view is left. */
async function followJobs(kb, jobs, box, refreshFiles, signal) {
  let timer = 0;
  const soon = () => { // one file-list refresh for a burst of finished jobs
    clearTimeout(timer);
    timer = setTimeout(() => refreshFiles().catch((e) => notice(e.message, "error")), 300);
  };
  try {
    const path = `/api/v1/jobs/events?knowledge_base=${encodeURIComponent(kb.id)}`;
    for await (const { event, data } of events(path, { signal })) {
      if (event !== "job") continue;
      const job = JSON.parse(data);
      const before = jobs.get(job.id);
      jobs.set(job.id, job);
      if (job.state === "indexed" && (!before || before.state !== "indexed")) soon();
      renderJobs(jobs, box);
    }
  } catch (error) {
    if (error.name !== "AbortError") notice(`Progress stopped: ${error.message}`, "error");
  }
}

function renderJobs(jobs, box) {
  const recent = [...jobs.values()].filter((j) => !DONE.has(j.state) || Date.now() / 1000 - j.updated_at < 3600);
  const batches = new Map();
  for (const job of recent) batches.set(job.batch_id, [...(batches.get(job.batch_id) || []), job]);
  const parts = [];
  for (const [batch, list] of batches) {
    const finished = list.filter((j) => DONE.has(j.state)).length;
    const failed = list.filter((j) => j.state === "failed").length;
    parts.push(h("div", { class: "batch" },
      h("p", {}, `${finished} of ${list.length} files done${failed ? `, ${failed} failed` : ""}`),
      h("progress", { max: list.length, value: finished, "aria-label": `Batch ${batch.slice(0, 8)}` }),
      h("ul", { class: "jobs" }, list.map(jobLine))));
  }
  clear(box, parts.length ? parts : h("p", {}, "Nothing in progress."));
}

function jobLine(job) {
  return h("li", { class: `job ${job.state}`, dataset: { state: job.state } },
    h("span", { class: "job-name" }, job.name),
    " ",
    h("span", { class: "state" }, job.state),
    job.attempts > 1 ? h("span", { class: "attempts" }, ` (attempt ${job.attempts})`) : null,
    job.error ? h("span", { class: "reason" }, ` — ${job.error}`) : null,
    job.state === "failed" || job.state === "cancelled"
      ? button("Retry", () => api(`/api/v1/jobs/${encodeURIComponent(job.id)}/retry`, { method: "POST" }), { "aria-label": `Retry ${job.name}` })
      : null,
    job.state === "queued"
      ? button("Cancel", () => api(`/api/v1/jobs/${encodeURIComponent(job.id)}/cancel`, { method: "POST" }), { "aria-label": `Cancel ${job.name}` })
      : null);
}

/** The files as [folder, files] requests: a dropped folder's files keep their folders. */
function batches(files) {
  const groups = [];
  const open = new Map(); // folder → [files, bytes] of the request being filled
  for (const file of files) {
    const path = file.relativePath || file.webkitRelativePath || "";
    const folder = path.includes("/") ? path.slice(0, path.lastIndexOf("/")) : "";
    let entry = open.get(folder);
    if (entry && (entry[0].length >= PER_REQUEST_FILES || entry[1] + file.size > PER_REQUEST_BYTES)) entry = null;
    if (!entry) {
      entry = [[], 0];
      open.set(folder, entry);
      groups.push([folder, entry[0]]);
    }
    entry[0].push(file);
    entry[1] += file.size;
  }
  return groups;
}

function addFiles(kb, jobsBox) {
  const status = h("p", { class: "upload-status", "aria-live": "polite" });
  const send = async (files) => {
    if (!files.length) return;
    let sent = 0;
    for (const [folder, part] of batches(files)) {
      const body = new FormData();
      for (const file of part) body.append("files", file, file.name);
      const where = folder ? `?folder=${encodeURIComponent(folder)}` : "";
      await upload(`${kbPath(kb.id)}/batch${where}`, body, (share) =>
        clear(status, `Uploading ${Math.round(((sent + share * part.length) / files.length) * 100)} %`));
      sent += part.length;
    }
    clear(status, `${files.length} file${files.length > 1 ? "s" : ""} queued; progress below.`);
    jobsBox.scrollIntoView({ block: "nearest" });
  };
  const guarded = (files) => send(files).catch((error) => { clear(status); notice(error.message, "error"); });
  const picker = h("input", { type: "file", multiple: true, id: "pick-files", onchange: (e) => guarded([...e.target.files]) });
  const folder = h("input", { type: "file", multiple: true, webkitdirectory: true, id: "pick-folder", onchange: (e) => guarded([...e.target.files]) });
  const drop = h("div", { class: "drop", tabindex: "0", role: "region", "aria-label": "Drop files or a folder here" },
    h("p", {}, "Drop files or a folder here, or "),
    h("label", { class: "as-button" }, "choose files", picker),
    " ",
    h("label", { class: "as-button" }, "choose a folder", folder));
  drop.addEventListener("dragover", (e) => { e.preventDefault(); drop.classList.add("over"); });
  drop.addEventListener("dragleave", () => drop.classList.remove("over"));
  drop.addEventListener("drop", async (e) => {
    e.preventDefault();
    drop.classList.remove("over");
    guarded(await droppedFiles(e.dataTransfer));
  });
  const byUrl = form({ class: "inline", "aria-label": "Add a web page" }, [
    field("Add a URL", h("input", { name: "url", type: "url", required: true, placeholder: "https://…" })),
    h("button", { type: "submit" }, "Fetch"),
  ], async (node) => {
    clear(status, "Fetching…");
    const done = await api("/api/v1/retrieval/process/web", { method: "POST", json: { url: node.elements.url.value, collection_name: kb.id } });
    clear(status, `Added ${done.title || done.url}.`);
    node.reset();
  });
  return h("section", { "aria-labelledby": "add-title" }, h("h2", { id: "add-title" }, "Add files"), drop, byUrl, status);
}

/** Files of a drop, folders walked (their paths kept as the files' names). */
async function droppedFiles(transfer) {
  const entries = [...transfer.items].map((item) => item.webkitGetAsEntry && item.webkitGetAsEntry()).filter(Boolean);
  if (!entries.length) return [...transfer.files];
  const files = [];
  const walk = async (entry, prefix) => {
    if (entry.isFile) {
      const file = await new Promise((resolve, reject) => entry.file(resolve, reject));
      file.relativePath = prefix + file.name;
      files.push(file);
      return;
    }
    const reader = entry.createReader();
    for (;;) {
      const batch = await new Promise((resolve, reject) => reader.readEntries(resolve, reject));
      if (!batch.length) break;
      for (const child of batch) await walk(child, `${prefix}${entry.name}/`);
    }
  };
  for (const entry of entries) await walk(entry, "");
  return files;
}

function settingsPanel(kb) {
  const rename = form({ class: "inline", "aria-label": "Rename" }, [
    field("Name", h("input", { name: "name", value: kb.name, required: true })),
    field("Description", h("input", { name: "description", value: kb.description })),
    h("button", { type: "submit" }, "Save"),
  ], async (node) => {
    const body = { name: node.elements.name.value.trim(), description: node.elements.description.value };
    await api(kbPath(kb.id), { method: "PATCH", json: body });
    notice("Saved.");
    window.dispatchEvent(new HashChangeEvent("hashchange")); // show the new name
  });
  const remove = button("Delete this knowledge base", async () => {
    if (!confirm(`Delete ${kb.name} and every file only it holds?`)) return;
    await api(kbPath(kb.id), { method: "DELETE" });
    notice(`Deleted ${kb.name}.`);
    location.hash = "#/kbs";
  }, { class: "danger" });
  return h("section", { "aria-labelledby": "kb-settings" }, h("h2", { id: "kb-settings" }, "Settings"),
    rename, retrievalForm(kb), chunkingForm(kb), remove);
}

const SPLITTERS = ["", "character", "token", "fixed", "sliding_window", "semantic", "semantic_threshold", "semantic_percentile"];

/** The KB's own chunking (owner or admin): a change re-chunks its files in the job queue;
 * searches read the old chunks until every file is done. All empty: the server's chunking. */
function chunkingForm(kb) {
  const own = (kb.settings || {}).chunking || {};
  const number = (name, attrs) => field(name, h("input", { name, type: "number", step: 1, min: 0, value: own[name] ?? "", placeholder: "(server's)", ...attrs }));
  const choice = (name, options) => field(name, h("select", { name },
    options.map((o) => h("option", { value: String(o), selected: String(own[name] ?? "") === String(o) }, CHOICES[o] ?? o))));
  const progress = kb.rechunk
    ? h("p", { role: "status" }, `Re-chunking: ${kb.rechunk.done} of ${kb.rechunk.files} files done` + (kb.rechunk.failed ? `, ${kb.rechunk.failed} failed` : "") + ".")
    : null;
  return form({ class: "inline", "aria-label": "Chunking" }, [
    choice("text_splitter", SPLITTERS),
    number("chunk_size", { min: 1 }),
    number("chunk_overlap"),
    choice("contextual_chunks", ["", true, false]),
    choice("sentence_vectors", ["", true, false]),
    h("button", { type: "submit" }, "Save chunking"),
    progress,
  ], async (node) => {
    const chunking = { ...own };
    for (const control of node.querySelectorAll("input, select")) {
      const raw = control.value;
      if (raw === "") delete chunking[control.name];
      else if (control.type === "number") chunking[control.name] = Number(raw);
      else if (raw === "true" || raw === "false") chunking[control.name] = raw === "true";
      else chunking[control.name] = raw;
    }
    const body = { settings: { chunking: Object.keys(chunking).length ? chunking : null } };
    const saved = await api(kbPath(kb.id), { method: "PATCH", json: body });
    notice(saved.rechunk ? `Chunking saved; re-chunking ${saved.rechunk.files} files.` : "Chunking saved.");
  });
}

const CHOICES = { "": "(server's)", true: "yes", false: "no" };

/** The KB's own retrieval defaults (owner or admin); empty fields take the server's. */
function retrievalForm(kb) {
  const own = kb.settings || {};
  const number = (name, attrs) => field(name, h("input", { name, type: "number", step: "any", value: own[name] ?? "", placeholder: "(server's)", ...attrs }));
  const choice = (name, options) => field(name, h("select", { name },
    options.map((o) => h("option", { value: String(o), selected: String(own[name] ?? "") === String(o) }, CHOICES[o] ?? o))));
  return form({ class: "inline", "aria-label": "Retrieval defaults" }, [
    choice("mode", ["", "hybrid", "vector", "bm25"]),
    number("top_k", { min: 1, max: 1000, step: 1 }),
    number("candidate_k", { min: 1, max: 1000, step: 1 }),
    number("hybrid_bm25_weight", { min: 0, max: 1 }),
    number("relevance_threshold", { min: 0, max: 1 }),
    choice("rerank", ["", true, false]),
    choice("full_context", ["", true, false]),
    h("button", { type: "submit" }, "Save retrieval defaults"),
  ], async (node) => {
    const settings = {};
    for (const control of node.querySelectorAll("input, select")) {
      const raw = control.value;
      if (raw === "") settings[control.name] = null;
      else if (control.type === "number") settings[control.name] = Number(raw);
      else if (raw === "true" || raw === "false") settings[control.name] = raw === "true";
      else settings[control.name] = raw;
    }
    await api(kbPath(kb.id), { method: "PATCH", json: { settings } });
    notice("Retrieval defaults saved.");
  });
}
