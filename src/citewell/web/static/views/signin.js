// Signing in: with the company's identity provider (the browser goes there and comes back
// with a one-time ticket), with a name and password (Citewell's own or the directory's:
// the API issues a session key), or with an API key pasted in.
import { api, remember, session } from "../api.js";
import { field, form, h, notice } from "../dom.js";

const DEFAULT_METHODS = { password: true, ldap: false, oidc: "", oidc_url: "", trusted_header: false };

async function offered() {
  try {
    return await api("/api/v1/auth/methods");
  } catch {
    return DEFAULT_METHODS; // auth=none, or an older server: the forms still work
  }
}

function providerLink(methods, back) {
  if (!methods.oidc) return null;
  const href = `${methods.oidc_url}?return_to=${encodeURIComponent(back)}`;
  return h("section", { "aria-labelledby": "provider-title" },
    h("h2", { id: "provider-title" }, "With your company account"),
    h("a", { class: "as-button provider", href }, `Sign in with ${methods.oidc}`));
}

function passwordForm(methods, done) {
  if (!methods.password && !methods.ldap) return null;
  const both = methods.password && methods.ldap;
  const choice = both
    ? field("Account", h("select", { name: "method" },
        h("option", { value: "ldap" }, "Company directory (LDAP)"),
        h("option", { value: "password" }, "Citewell account")))
    : null;
  const title = methods.ldap && !methods.password ? "With your directory name and password" : "With your name and password";
  return form({ "aria-labelledby": "sign-in-title" }, [
    h("h2", { id: "sign-in-title" }, title),
    choice,
    field("Name", h("input", { name: "name", autocomplete: "username", required: true })),
    field("Password", h("input", { name: "password", type: "password", autocomplete: "current-password", required: true })),
    h("button", { type: "submit" }, "Sign in"),
  ], async (node) => {
    const method = both ? node.elements.method.value : methods.ldap ? "ldap" : "password";
    const body = { name: node.elements.name.value, password: node.elements.password.value, method };
    const signed = await api("/api/v1/auth/login", { method: "POST", json: body });
    remember(signed.api_key);
    notice(`Signed in as ${signed.user.name}.`);
    await done();
  });
}

function keyForm(done) {
  return form({ "aria-labelledby": "key-title" }, [
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
}

/** Why a provider's sign-in was refused, by the callback's code: fixed words of Citewell's
 * own, so no text in the address (which anyone can write) is shown as if Citewell said it. */
const REFUSALS = {
  sign_up_closed: "You signed in at your company's sign-in, but you have no Citewell account yet. Ask an admin to make one.",
  identity_refused: "Your company's sign-in answered in a way Citewell does not accept, or took too long. Try again.",
  identity_conflict: "Your company's sign-in names an account that is already linked to someone else. Ask an admin.",
  identity_provider_unavailable: "Your company's sign-in could not be reached. Try again later.",
  identity_provider_refused: "Your company's sign-in refused or was cancelled.",
  forbidden: "This account may not sign in (it may be disabled). Ask an admin.",
};

export function refusal(code) {
  return REFUSALS[code] || "Signing in did not work. Try again.";
}

/** `refused`: the code of why the provider's sign-in was refused (from the callback). */
export async function signInView(done, { back = "#/kbs", refused = "" } = {}) {
  const methods = await offered();
  if (refused) notice(`Signing in did not work: ${refusal(refused)}`, "error");
  return h("section", { class: "sign-in" }, h("h1", {}, "Sign in to Citewell"),
    providerLink(methods, back), passwordForm(methods, done), keyForm(done));
}

/** Back from the provider: trade the one-time ticket for a key, then go where the person was. */
export async function finishProviderSignIn(params) {
  const signed = await api("/api/v1/auth/oidc/ticket", { method: "POST", json: { ticket: params.get("ticket") || "" } });
  remember(signed.api_key);
  notice(`Signed in as ${signed.user.name}.`);
  const next = params.get("next") || "/kbs";
  location.replace(`#${next.startsWith("/") ? next : "/kbs"}`);
}
