// Sharing a KB: who may read or change it (users, groups, or everyone).
import { api, kbPath } from "../api.js";
import { button, clear, field, form, h, notice, table } from "../dom.js";

export async function sharingPanel(kb) {
  const box = h("div", {});
  const refresh = async () => {
    let grants;
    try {
      grants = await api(`${kbPath(kb.id)}/grants`);
    } catch (error) {
      clear(box, h("p", {}, error.status === 403 || error.status === 404 ? "Only its owner and admins see who it is shared with." : error.message));
      return;
    }
    const rows = grants.map((g) => h("tr", {},
      h("td", {}, g.principal), h("td", {}, g.permission),
      h("td", {}, button("Stop sharing", async () => {
        await api(`${kbPath(kb.id)}/grants/${encodeURIComponent(g.principal)}`, { method: "DELETE" });
        await refresh();
      }, { "aria-label": `Stop sharing with ${g.principal}` }))));
    clear(box, grants.length ? table("Shared with", ["With", "May", ""], rows) : h("p", {}, "Not shared: only you (and admins) see it."));
  };
  await refresh();
  const share = form({ class: "inline", "aria-label": "Share" }, [
    field("User or group", h("input", { name: "principal", required: true, placeholder: "user:alice, group:hr or public" })),
    field("Permission", h("select", { name: "permission" }, h("option", { value: "read" }, "read"), h("option", { value: "write" }, "write"))),
    h("button", { type: "submit" }, "Share"),
  ], async (node) => {
    const body = { principal: node.elements.principal.value.trim(), permission: node.elements.permission.value };
    await api(`${kbPath(kb.id)}/grants`, { method: "PUT", json: body });
    notice(`Shared with ${body.principal}.`);
    node.reset();
    await refresh();
  });
  return h("section", { "aria-labelledby": "sharing" }, h("h2", { id: "sharing" }, "Sharing"), box, share);
}
