// One's own API keys: list, create (the key is shown once), revoke.
import { api, session } from "../api.js";
import { button, clear, field, form, h, notice, table, when } from "../dom.js";

export async function keysView() {
  const box = h("div", {});
  const shown = h("div", { "aria-live": "polite" });
  const refresh = async () => {
    const keys = await api("/api/v1/auth/keys");
    const rows = keys.map((key) => h("tr", {},
      h("td", {}, key.name || "(no name)"), h("td", {}, h("code", {}, `${key.prefix}…`)),
      h("td", {}, key.read_only ? "read only" : "full"),
      h("td", {}, key.knowledge_base_ids.length ? `${key.knowledge_base_ids.length} KBs` : "all yours"),
      h("td", {}, when(key.last_used_at) || "never"),
      h("td", {}, key.expires_at ? when(key.expires_at) : "never"),
      h("td", {}, key.revoked ? "revoked" : button("Revoke", async () => {
        if (!confirm(`Revoke ${key.name || key.prefix}? Programs using it stop working at once.`)) return;
        await api(`/api/v1/auth/keys/${encodeURIComponent(key.id)}`, { method: "DELETE" });
        await refresh();
      }, { "aria-label": `Revoke ${key.name || key.prefix}` }))));
    clear(box, table("Your API keys", ["Name", "Starts with", "Access", "Scope", "Last used", "Expires", ""], rows));
  };
  if (!session.me.user) return h("section", {}, h("h1", {}, "API keys"), h("p", {}, "The server runs with auth=none: there are no keys."));
  await refresh();
  const create = form({ class: "inline", "aria-label": "New API key" }, [
    field("Name", h("input", { name: "name", placeholder: "e.g. open-webui" })),
    h("label", { class: "check" }, h("input", { type: "checkbox", name: "read_only" }), " read only"),
    h("button", { type: "submit" }, "Create key"),
  ], async (node) => {
    const made = await api("/api/v1/auth/keys", { method: "POST", json: { name: node.elements.name.value, read_only: node.elements.read_only.checked } });
    clear(shown, h("div", { class: "once", role: "alert" },
      h("p", {}, "Your new key, shown this once (Citewell keeps only its hash): copy it now."),
      h("code", { class: "new-key" }, made.key),
      button("Copy", async () => { await navigator.clipboard.writeText(made.key); notice("Copied."); })));
    node.reset();
    await refresh();
  });
  return h("section", {}, h("h1", {}, "API keys"),
    h("p", {}, "Programs (Open WebUI, the openai SDK, scripts) sign in with a key: 'Authorization: Bearer cw_…'."),
    create, shown, box);
}
