// A real OpenID provider for Citewell's tests: the certified `oidc-provider` package, with
// a plain login page, people read from a JSON file at each sign-in (so a test can change
// someone's groups or remove them), JWT access tokens for the API resource, and the
// client credentials grant for services. Usage: node provider.mjs CONFIG.json
import { readFileSync } from "node:fs";
import { createServer } from "node:http";
import Provider from "oidc-provider";

const config = JSON.parse(readFileSync(process.argv[2], "utf8"));
const people = () => JSON.parse(readFileSync(config.people_file, "utf8"));
const SCOPES = "openid email profile groups";

const provider = new Provider(config.issuer, {
  clients: config.clients,
  jwks: config.jwks,
  cookies: { keys: [config.cookie_key] },
  pkce: { required: () => true },
  conformIdTokenClaims: false, // the claims asked for by scope go in the ID token too
  scopes: ["openid", "email", "profile", "groups"],
  claims: {
    openid: ["sub"],
    email: ["email", "email_verified"],
    profile: ["name", "preferred_username"],
    groups: ["groups"],
  },
  async findAccount(_ctx, id) {
    const person = people()[id];
    if (!person) return undefined;
    return { accountId: id, claims: async () => ({ sub: id, ...person.claims }) };
  },
  // First-party client: consent is given at sign-in, never asked.
  async loadExistingGrant(ctx) {
    const { oidc } = ctx;
    const grantId = oidc.result?.consent?.grantId || oidc.session.grantIdFor(oidc.client.clientId);
    if (grantId) return oidc.provider.Grant.find(grantId);
    const grant = new oidc.provider.Grant({ clientId: oidc.client.clientId, accountId: oidc.session.accountId });
    grant.addOIDCScope(SCOPES);
    if (oidc.params.resource) grant.addResourceScope(oidc.params.resource, SCOPES);
    await grant.save();
    return grant;
  },
  features: {
    devInteractions: { enabled: false },
    clientCredentials: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: () => config.api_audience,
      useGrantedResource: () => true,
      getResourceServerInfo: (_ctx, resource) => {
        if (resource !== config.api_audience) throw new Error("unknown resource");
        return { scope: SCOPES, audience: config.api_audience, accessTokenFormat: "jwt", accessTokenTTL: 600 };
      },
    },
  },
  interactions: { url: (_ctx, interaction) => `/interaction/${interaction.uid}` },
});

function page(uid, message = "") {
  return `<!doctype html><title>Example IdP</title><link rel="icon" href="data:,">
<h1>Example identity provider</h1>
<p class="error">${message}</p>
<form method="post" action="/interaction/${uid}/login">
<label>Username <input name="username" autocomplete="username"></label>
<label>Password <input name="password" type="password" autocomplete="current-password"></label>
<button type="submit">Continue</button></form>`;
}

async function form(req) {
  let body = "";
  for await (const chunk of req) body += chunk;
  return Object.fromEntries(new URLSearchParams(body));
}

async function interaction(req, res) {
  const match = req.url.match(/^\/interaction\/([^/?]+)(\/login)?/);
  if (!match) return false;
  const details = await provider.interactionDetails(req, res);
  if (!match[2]) {
    res.writeHead(200, { "Content-Type": "text/html" }).end(page(details.uid));
    return true;
  }
  const { username, password } = await form(req);
  const person = people()[username];
  if (!person || person.password !== password) {
    res.writeHead(200, { "Content-Type": "text/html" }).end(page(details.uid, "Wrong username or password."));
    return true;
  }
  await provider.interactionFinished(req, res, { login: { accountId: username } }, { mergeWithLastSubmission: false });
  return true;
}

const callback = provider.callback();
createServer(async (req, res) => {
  try {
    if (await interaction(req, res)) return;
  } catch (error) {
    res.writeHead(400).end(String(error));
    return;
  }
  callback(req, res);
}).listen(config.port, "127.0.0.1", () => console.log(`listening ${config.issuer}`));
