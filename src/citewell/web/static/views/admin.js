// Admin: users, groups, model presets, jobs, the audit trail, the settings that change at run
// time (editable) and every effective setting (read-only).
// Each part is the matching API, called with the admin's own key.
import { api, session } from "../api.js";
import { button, clear, field, form, h, notice, table, when } from "../dom.js";

export async function adminView({ me }) {
  if (me.user && me.user.role !== "admin") {
    return h("section", {}, h("h1", {}, "Admin"), h("p", {}, "This page is for admins only."));
  }
  const parts = [
    ["Users", usersPart], ["Groups", groupsPart], ["Model presets", presetsPart],
    ["Jobs", jobsPart], ["Audit trail", auditPart], ["Tuning", tuningPart], ["Settings", settingsPart],
  ];
  const sections = await Promise.all(parts.map(async ([title, make]) => {
    const id = `admin-${title.toLowerCase().replace(/\W+/g, "-")}`;
    const box = h("div", {});
    const refresh = async () => clear(box, await make(refresh));
    await refresh().catch((error) => clear(box, h("p", { class: "error" }, error.message)));
    return h("section", { "aria-labelledby": id }, h("h2", { id }, title), box);
  }));
  return h("section", { class: "admin" }, h("h1", {}, "Admin"),
    h("nav", { "aria-label": "Admin sections" }, h("ul", { class: "toc" },
      parts.map(([title]) => h("li", {}, h("a", { href: "#/admin", onclick: (e) => {
        e.preventDefault();
        document.getElementById(`admin-${title.toLowerCase().replace(/\W+/g, "-")}`).scrollIntoView();
      } }, title))))),
    sections);
}

async function usersPart(refresh) {
  if (!(authOn())) return h("p", {}, "The server runs with auth=none: no users.");
  const users = await api("/api/v1/users");
  const rows = users.map((u) => h("tr", {},
    h("td", {}, u.name), h("td", {}, u.role), h("td", {}, u.disabled ? "disabled" : "active"), h("td", {}, when(u.created_at)),
    h("td", {}, button(u.disabled ? "Enable" : "Disable", async () => {
      await api(`/api/v1/users/${encodeURIComponent(u.id)}`, { method: "PATCH", json: { disabled: !u.disabled } });
      await refresh();
    }, { "aria-label": `${u.disabled ? "Enable" : "Disable"} ${u.name}` }))));
  const create = form({ class: "inline", "aria-label": "New user" }, [
    field("Name", h("input", { name: "name", required: true, autocomplete: "off" })),
    field("Password", h("input", { name: "password", type: "password", required: true, autocomplete: "new-password" })),
    field("Role", h("select", { name: "role" }, h("option", { value: "user" }, "user"), h("option", { value: "admin" }, "admin"))),
    h("button", { type: "submit" }, "Add user"),
  ], async (node) => {
    const body = { name: node.elements.name.value.trim(), password: node.elements.password.value, role: node.elements.role.value };
    await api("/api/v1/users", { method: "POST", json: body });
    notice(`Added ${body.name}.`);
    await refresh();
  });
  return [create, table("Users", ["Name", "Role", "State", "Since", ""], rows)];
}

async function groupsPart(refresh) {
  if (!(authOn())) return h("p", {}, "The server runs with auth=none: no groups.");
  const groups = await api("/api/v1/groups");
  const path = (g) => `/api/v1/groups/${encodeURIComponent(g.id)}`;
  const rows = groups.map((g) => h("tr", {},
    h("td", {}, g.name),
    h("td", {}, g.members.map((m) => h("span", { class: "member" }, m,
      button("×", async () => {
        await api(`${path(g)}/members/${encodeURIComponent(m)}`, { method: "DELETE" });
        await refresh();
      }, { "aria-label": `Remove ${m} from ${g.name}` })))),
    h("td", {}, form({ class: "inline", "aria-label": `Add a member to ${g.name}` }, [
      field("User", h("input", { name: "user", required: true })),
      h("button", { type: "submit" }, "Add"),
    ], async (node) => {
      await api(`${path(g)}/members`, { method: "POST", json: { user: node.elements.user.value.trim() } });
      await refresh();
    }), button("Delete group", async () => {
      if (!confirm(`Delete group ${g.name}?`)) return;
      await api(path(g), { method: "DELETE" });
      await refresh();
    }, { "aria-label": `Delete group ${g.name}` }))));
  const create = form({ class: "inline", "aria-label": "New group" }, [
    field("Name", h("input", { name: "name", required: true })),
    h("button", { type: "submit" }, "Add group"),
  ], async (node) => {
    await api("/api/v1/groups", { method: "POST", json: { name: node.elements.name.value.trim() } });
    await refresh();
  });
  return [create, groups.length ? table("Groups", ["Name", "Members", ""], rows) : h("p", {}, "No groups.")];
}

async function presetsPart(refresh) {
  const presets = await api("/api/v1/models");
  const rows = presets.map((p) => h("tr", {},
    h("td", {}, h("code", {}, p.model)), h("td", {}, p.name), h("td", {}, p.base_model || "(default)"),
    h("td", {}, String(p.knowledge.length)), h("td", {}, p.mode || "(default)"), h("td", {}, p.source),
    h("td", {}, p.source === "api" ? button("Delete", async () => {
      if (!confirm(`Delete preset ${p.model}?`)) return;
      await api(`/api/v1/models/${encodeURIComponent(p.id)}`, { method: "DELETE" });
      await refresh();
    }, { "aria-label": `Delete preset ${p.model}` }) : "from settings")));
  const create = form({ class: "inline", "aria-label": "New preset" }, [
    field("Model name", h("input", { name: "model", required: true, placeholder: "handbook-assistant" })),
    field("Display name", h("input", { name: "name" })),
    field("Knowledge bases", h("input", { name: "knowledge", placeholder: "names, comma-separated" })),
    field("Mode", h("select", { name: "mode" }, ["", "hybrid", "vector", "bm25"].map((m) => h("option", { value: m }, m || "(default)")))),
    h("button", { type: "submit" }, "Add preset"),
  ], async (node) => {
    const knowledge = node.elements.knowledge.value.split(",").map((k) => k.trim()).filter(Boolean);
    const body = { model: node.elements.model.value.trim(), name: node.elements.name.value, knowledge, mode: node.elements.mode.value };
    await api("/api/v1/models", { method: "POST", json: body });
    await refresh();
  });
  return [create, presets.length ? table("Presets", ["Model", "Name", "LLM", "KBs", "Mode", "From", ""], rows) : h("p", {}, "No presets.")];
}

async function jobsPart(refresh) {
  const jobs = (await api("/api/v1/jobs")).slice(-100).reverse();
  const rows = jobs.map((j) => h("tr", {},
    h("td", {}, j.name), h("td", {}, j.operation), h("td", {}, j.state), h("td", {}, `${j.attempts}/${j.max_attempts}`),
    h("td", {}, j.error || ""), h("td", {}, when(j.updated_at)),
    h("td", {}, j.state === "failed" ? button("Retry", async () => {
      await api(`/api/v1/jobs/${encodeURIComponent(j.id)}/retry`, { method: "POST" });
      await refresh();
    }, { "aria-label": `Retry ${j.name}` }) : "")));
  return [button("Refresh", refresh), jobs.length ? table("The last 100 jobs", ["Name", "Operation", "State", "Attempts", "Error", "Changed", ""], rows) : h("p", {}, "No jobs.")];
}

async function auditPart() {
  if (!(authOn())) return h("p", {}, "The server runs with auth=none: nothing is audited per user.");
  const events = await api("/api/v1/audit?limit=100");
  const rows = events.map((e) => h("tr", {},
    h("td", {}, when(e.at)), h("td", {}, e.actor), h("td", {}, e.action), h("td", {}, `${e.target_type} ${e.target_id}`),
    h("td", {}, h("code", {}, JSON.stringify(e.detail)))));
  return table("The last 100 events, newest first", ["When", "Who", "Did", "To", "Detail"], rows);
}

const LONG_TEXT = new Set(["rag_template", "query_generation_prompt_template", "rag_system_context"]);

/** One control per run-time setting, typed by its current value. */
function tuningControl(name, value) {
  if (typeof value === "boolean") return h("input", { name, type: "checkbox", checked: value });
  if (typeof value === "number") return h("input", { name, type: "number", step: "any", value: String(value) });
  if (LONG_TEXT.has(name)) return h("textarea", { name, rows: 6 }, value);
  if (value !== null && typeof value === "object") return h("input", { name, value: JSON.stringify(value) });
  return h("input", { name, value: value ?? "", autocomplete: "off" });
}

function tuningValue(control, old) {
  if (typeof old === "boolean") return control.checked;
  if (typeof old === "number") return Number(control.value);
  if (old !== null && typeof old === "object") return JSON.parse(control.value);
  return control.value;
}

async function tuningPart(refresh) {
  const config = await api("/api/v1/retrieval/config");
  const fields = Object.entries(config.settings).map(([name, value]) => field(name, tuningControl(name, value),
    config.changed.includes(name) ? `changed at run time; start-up value: ${JSON.stringify(config.start[name])}` : null));
  const edit = form({ class: "tuning", "aria-label": "Run-time settings" }, [
    ...fields,
    h("button", { type: "submit" }, "Save changes"),
  ], async (node) => {
    const changes = {};
    for (const [name, old] of Object.entries(config.settings)) {
      const value = tuningValue(node.elements[name], old);
      if (JSON.stringify(value) !== JSON.stringify(old)) changes[name] = value;
    }
    if (!Object.keys(changes).length) return notice("Nothing changed.");
    await api("/api/v1/retrieval/config/update", { method: "POST", json: { settings: changes } });
    notice(`Saved: ${Object.keys(changes).join(", ")}.`);
    await refresh();
  });
  const reset = config.changed.length ? button("Reset all to start-up values", async () => {
    await api("/api/v1/retrieval/config/reset", { method: "POST", json: {} });
    notice("Back to the start-up values.");
    await refresh();
  }) : null;
  return [h("p", {}, "These apply at once, to every process, and survive a restart. Chunking changes apply to files ingested from now on."),
    edit, reset];
}

async function settingsPart() {
  const settings = await api("/api/v1/settings");
  const rows = Object.entries(settings).map(([name, value]) => h("tr", {},
    h("th", { scope: "row" }, h("code", {}, name)), h("td", {}, h("code", {}, typeof value === "string" ? value : JSON.stringify(value)))));
  return [h("p", {}, "Read-only: these come from the config file and the environment at start-up (with the run-time changes above). Secrets are masked."),
    table("Effective settings", ["Setting", "Value"], rows)];
}

/** Under auth=none /auth/me names no user: there are no users, groups or audit actors. */
function authOn() {
  return Boolean(session.me && session.me.user);
}
