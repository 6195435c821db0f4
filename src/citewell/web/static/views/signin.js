// Signing in: name and password (the API issues a session key), or an API key pasted in.
import { api, remember, session } from "../api.js";
import { field, form, h, notice } from "../dom.js";

export function signInView(done) {
  const withPassword = form({ "aria-labelledby": "sign-in-title" }, [
    h("h2", { id: "sign-in-title" }, "With your name and password"),
    field("Name", h("input", { name: "name", autocomplete: "username", required: true })),
    field("Password", h("input", { name: "password", type: "password", autocomplete: "current-password", required: true })),
    h("button", { type: "submit" }, "Sign in"),
  ], async (node) => {
    const body = { name: node.elements.name.value, password: node.elements.password.value };
    const signed = await api("/api/v1/auth/login", { method: "POST", json: body });
    remember(signed.api_key);
    notice(`Signed in as ${signed.user.name}.`);
    await done();
  });
  const withKey = form({ "aria-labelledby": "key-title" }, [
    h("h2", { id: "key-title" }, "Or with an API key"),
    field("API key", h("input", { name: "key", type: "password", autocomplete: "off", required: true, placeholder: "cw_…" })),
    h("button", { type: "submit" }, "Use this key"),
  ], async (node) => {
    remember(node.elements.key.value.trim());
    try {
      session.me = await api("/api/v1/auth/me");
    } catch (error) {
      remember("");
      throw error;
    }
    await done();
  });
  return h("section", { class: "sign-in" }, h("h1", {}, "Sign in to Citewell"), withPassword, withKey);
}
