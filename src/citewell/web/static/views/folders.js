// A KB's files folder by folder (breadcrumbs, sub-folders, files), and its sources: the
// connectors that keep it in sync, their last run and a "Sync now" button.
import { api, download, kbPath } from "../api.js";
import { append, button, bytes, clear, h, notice, table, when } from "../dom.js";

const PAGE = 100;

/** The file browser: a box whose refresh() shows the folder open now again. */
export function fileBrowser(kb) {
  const box = h("div", { class: "files" });
  let folder = ""; // a folder's id; "" the top level
  let page = 1;
  const show = async () => {
    const query = new URLSearchParams({ directory_id: folder, page: String(page), limit: String(PAGE) });
    const listing = await api(`${kbPath(kb.id)}/files?${query}`);
    clear(box, crumbs(kb, listing, open), contents(kb, listing, open, show), pager(listing, page, turn));
  };
  const open = (id) => { folder = id; page = 1; show().catch((error) => notice(error.message, "error")); };
  const turn = (next) => { page = next; show().catch((error) => notice(error.message, "error")); };
  box.refresh = show;
  return box;
}

function crumbs(kb, listing, open) {
  if (!listing.breadcrumbs.length) return null;
  const trail = h("nav", { "aria-label": "Folder path", class: "crumbs" },
    button(kb.name, () => open(""), { "aria-label": `Top level of ${kb.name}` }));
  for (const folder of listing.breadcrumbs) append(trail, [" / ", h("span", {}, folder.name)]);
  return trail;
}

function contents(kb, listing, open, refresh) {
  const here = listing.breadcrumbs.map((f) => f.name).join("/");
  const caption = here ? `Files in ${kb.name}/${here}` : `Files in ${kb.name}`;
  if (!listing.items.length && !listing.directories.length) return h("p", {}, here ? "This folder is empty." : "No files yet.");
  const folders = listing.directories.map((folder) =>
    h("tr", { class: "folder" },
      h("td", {}, button(`${folder.name}/`, () => open(folder.id), { "aria-label": `Open folder ${folder.name}` })),
      h("td", {}, "folder"), h("td", {}), h("td", {}), h("td", {})));
  const files = listing.items.map((item) => fileRow(kb, item, refresh));
  return table(caption, ["Name", "Status", "Chunks", "Size", ""], [...folders, ...files]);
}

function fileRow(kb, item, refresh) {
  const name = item.filename;
  return h("tr", {},
    h("td", {}, h("a", { href: `#/file/${encodeURIComponent(item.file_id)}` }, name)),
    h("td", {}, item.status),
    h("td", { class: "num" }, item.chunk_count),
    h("td", { class: "num" }, bytes(item.meta.size)),
    h("td", { class: "actions" },
      button("Download", () => download({ id: item.file_id, name }), { "aria-label": `Download ${name}` }),
      button("Remove", async () => {
        if (!confirm(`Remove ${item.path} from ${kb.name}?`)) return;
        await api(`${kbPath(kb.id)}/file/remove`, { method: "POST", json: { file_id: item.id } });
        notice(`Removed ${item.path}.`);
        await refresh();
      }, { "aria-label": `Remove ${name}` })));
}

function pager(listing, page, turn) {
  const pages = Math.ceil(listing.total / PAGE);
  if (pages <= 1) return null;
  return h("p", { class: "pager" },
    page > 1 ? button("Previous page", () => turn(page - 1)) : null,
    ` Page ${page} of ${pages} (${listing.total} files) `,
    page < pages ? button("Next page", () => turn(page + 1)) : null);
}

/** The KB's connectors with their last run (shown to those who may change the KB). */
export async function sourcesPanel(kb) {
  if (!kb.write_access) return null;
  const box = h("div", { "aria-live": "polite" });
  const show = async () => clear(box, sourcesTable(kb, await api(`${kbPath(kb.id)}/connectors`), show));
  await show();
  return h("section", { "aria-labelledby": "sources-title" }, h("h2", { id: "sources-title" }, "Sources"), box);
}

function sourcesTable(kb, connectors, refresh) {
  if (!connectors.length) {
    return h("p", {}, "No connector keeps this knowledge base in sync yet: add one with `citewell connector add` or POST /api/v1/knowledge/{kb}/connectors.");
  }
  const rows = connectors.map((c) =>
    h("tr", { "data-state": c.status.state },
      h("td", {}, c.name),
      h("td", {}, `${c.kind}: ${c.target}`),
      h("td", {}, c.paused ? "paused" : c.status.state),
      h("td", {}, counts(c.status)),
      h("td", {}, c.status.finished_at ? when(c.status.finished_at) : "never"),
      h("td", {}, c.paused ? "paused" : when(c.next_run_at)),
      h("td", { class: "actions" }, button("Sync now", async () => {
        await api(`${kbPath(kb.id)}/connectors/${encodeURIComponent(c.id)}/sync`, { method: "POST" });
        notice(`Sync of ${c.name} queued.`);
        await refresh();
      }, { "aria-label": `Sync ${c.name} now` }))));
  return table(`Sources of ${kb.name}`, ["Name", "Source", "State", "Last run", "Finished", "Next run", ""], rows);
}

function counts(status) {
  const parts = [`${status.added} added`, `${status.updated} updated`, `${status.deleted} deleted`, `${status.unchanged} unchanged`];
  if (status.failed) parts.push(`${status.failed} failed: ${status.errors.slice(0, 3).join("; ")}`);
  if (status.message) parts.push(status.message);
  return parts.join(", ");
}
