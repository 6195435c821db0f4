// The page's shell: who is signed in, the menu, and which view the address shows.
import { api, remember, session } from "./api.js";
import { clear, h, notice } from "./dom.js";
import { adminView } from "./views/admin.js";
import { chatView } from "./views/chat.js";
import { kbListView, kbView } from "./views/kbs.js";
import { keysView } from "./views/keys.js";
import { searchView } from "./views/search.js";
import { finishProviderSignIn, refusal, signInView } from "./views/signin.js";
import { viewerView } from "./views/viewer.js";

const routes = [
  [/^#\/kbs$/, kbListView],
  [/^#\/kb\/([^/?]+)$/, kbView],
  [/^#\/file\/([^/?]+)$/, viewerView],
  [/^#\/chat$/, chatView],
  [/^#\/search$/, searchView],
  [/^#\/keys$/, keysView],
  [/^#\/admin$/, adminView],
];

let navigated = false; // false on the first view: Tab then starts at the skip link
let leaving = new AbortController(); // aborts the last view's streams when the view changes

/** Who the key belongs to, or null when it does not open the API. */
async function whoAmI() {
  try {
    session.me = await api("/api/v1/auth/me");
  } catch (error) {
    if (error.status !== 401) notice(error.message, "error");
    session.me = null;
  }
  return session.me;
}

function showChrome() {
  const me = session.me;
  const user = me && me.user;
  document.getElementById("nav").hidden = !me;
  document.getElementById("nav-admin").hidden = !(me && (!user || user.role === "admin"));
  document.getElementById("sign-out").hidden = !(me && user);
  clear(document.getElementById("who"), user ? `Signed in as ${user.name}` : me ? "No sign-in (auth=none)" : "");
  for (const link of document.querySelectorAll("#nav a")) {
    const current = location.hash.startsWith(link.getAttribute("href"));
    if (current) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
}

/** The view's own query string: #/file/ID?start=1&end=9 → {start: "1", end: "9"}. */
function parse(hash) {
  const [path, query = ""] = hash.split("?");
  return { path, params: new URLSearchParams(query) };
}

/** Shows ``view`` unless a newer render began meanwhile: that one's view is the page's (a
 * slow answer must not replace a newer view and what was typed into it since). */
function show(mine, main, ...view) {
  if (mine !== leaving) return false;
  clear(main, ...view);
  return true;
}

async function render() {
  leaving.abort();
  const mine = (leaving = new AbortController());
  const main = document.getElementById("main");
  const { path, params } = parse(location.hash || "#/kbs");
  if (path === "#/signed-in") { // back from the identity provider with a one-time ticket
    session.me = null;
    try {
      await finishProviderSignIn(params); // moves on to the view the person came from
    } catch (error) {
      notice(error.message, "error");
      location.replace("#/kbs");
    }
    return;
  }
  if (!session.me && !(await whoAmI())) {
    showChrome();
    const refused = path === "#/sign-in";
    const back = refused ? `#${params.get("next") || "/kbs"}` : location.hash || "#/kbs";
    const code = refused ? params.get("code") || "" : "";
    const done = async () => {
      await whoAmI();
      const next = back === "#/sign-in" ? "#/kbs" : back;
      if (location.hash !== next) location.hash = next; // hashchange renders it
      else await render();
    };
    show(mine, main, await signInView(done, { back, refused: code }));
    return;
  }
  if (path === "#/sign-in" && params.get("code")) notice(`Signing in did not work: ${refusal(params.get("code"))}`, "error");
  const route = routes.find(([pattern]) => pattern.test(path));
  if (!route) {
    location.replace("#/kbs");
    return;
  }
  showChrome();
  const match = path.match(route[0]);
  const args = match.slice(1).map(decodeURIComponent);
  clear(main, h("p", { class: "loading" }, "Loading…"));
  try {
    const view = await route[1]({ args, params, signal: mine.signal, me: session.me });
    if (!show(mine, main, view)) return;
    if (navigated) main.focus({ preventScroll: true }); // a screen reader reads the new view
    const heading = main.querySelector("h1");
    if (heading) document.title = `${heading.textContent} · Citewell`;
  } catch (error) {
    if (error.status === 401) {
      remember("");
      session.me = null;
      notice("Your session ended; sign in again.", "error");
      await render();
      return;
    }
    if (error.name === "AbortError") return;
    show(mine, main, h("h1", {}, "Something went wrong"), h("p", { class: "error" }, error.message));
  }
}

document.getElementById("sign-out").addEventListener("click", async () => {
  try {
    await api("/api/v1/auth/logout", { method: "POST" }); // the session key stops working
  } catch {
    // signed out here either way
  }
  remember("");
  session.me = null;
  location.hash = "#/kbs";
  render();
});
window.addEventListener("hashchange", () => {
  navigated = true;
  render();
});
render();
