// A certified OpenID provider for the single sign-on tests: panva's oidc-provider
// (OpenID Certified), configured as a help desk's identity provider would be, with
// static accounts that sign in with a password, as Dex's static-password connector
// does. It serves HTTPS with the test's own certificate and requires PKCE (S256).
//
// Claims asked for by scope go to the userinfo endpoint, not the ID token (the
// provider's default, conformIdTokenClaims): the server must fetch them there.
//
// Usage: node provider.mjs CONFIG.json, where CONFIG holds
//   {"port", "cert", "key", "client": {"client_id", "client_secret", "redirect_uris"},
//    "accounts": [{"username", "password", "groups", "email"}]}
// It prints "listening <issuer>" once it serves.

import { generateKeyPairSync, randomBytes, timingSafeEqual } from "node:crypto";
import { readFileSync } from "node:fs";
import { createServer } from "node:https";

import Provider from "oidc-provider";

const config = JSON.parse(readFileSync(process.argv[2], "utf8"));
const issuer = `https://localhost:${config.port}`;
const accounts = new Map(config.accounts.map((account) => [account.username, account]));

const { privateKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
const signingKey = { ...privateKey.export({ format: "jwk" }), use: "sig", alg: "RS256" };

const provider = new Provider(issuer, {
  clients: [{
    ...config.client,
    grant_types: ["authorization_code"],
    response_types: ["code"],
    token_endpoint_auth_method: "client_secret_basic",
  }],
  jwks: { keys: [signingKey] },
  cookies: { keys: [randomBytes(32).toString("hex")] },
  scopes: ["openid", "profile", "email", "groups"],
  claims: {
    openid: ["sub"],
    profile: ["preferred_username", "name"],
    email: ["email", "email_verified"],
    groups: ["groups"],
  },
  pkce: { required: () => true, methods: ["S256"] },
  features: { devInteractions: { enabled: false } },
  interactions: { url: (_ctx, interaction) => `/interaction/${interaction.uid}` },
  async findAccount(_ctx, sub) {
    const account = accounts.get(sub);
    if (account === undefined) return undefined;
    return {
      accountId: sub,
      async claims() {
        return {
          sub,
          preferred_username: account.username,
          name: account.username,
          email: account.email,
          email_verified: true,
          groups: account.groups,
        };
      },
    };
  },
});

function escape(text) {
  return String(text).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

function loginPage(uid, error) {
  return `<!doctype html><html><head><meta charset="utf-8"><link rel="icon" href="data:,"><title>Sign in</title></head>
<body><h1>Sign in to the test provider</h1>
${error ? `<p class="error">${escape(error)}</p>` : ""}
<form method="post" action="/interaction/${escape(uid)}/login">
<label>Username <input name="username" autocomplete="username" required></label>
<label>Password <input name="password" type="password" autocomplete="current-password" required></label>
<button type="submit">Sign in</button>
</form></body></html>`;
}

async function formOf(req) {
  let body = "";
  for await (const chunk of req) {
    body += chunk;
    if (body.length > 10000) throw new Error("form too large");
  }
  return new URLSearchParams(body);
}

function passwordMatches(account, password) {
  if (account === undefined) return false;
  const want = Buffer.from(account.password);
  const got = Buffer.from(password);
  return want.length === got.length && timingSafeEqual(want, got);
}

async function grantConsent(ctx, details) {
  // The help desk's own application: consent is given on the user's behalf, as
  // Dex's skipApprovalScreen does.
  const grant = new provider.Grant({
    accountId: details.session.accountId,
    clientId: details.params.client_id,
  });
  const missing = details.prompt.details;
  if (missing.missingOIDCScope) grant.addOIDCScope(missing.missingOIDCScope.join(" "));
  if (missing.missingOIDCClaims) grant.addOIDCClaims(missing.missingOIDCClaims);
  const grantId = await grant.save();
  return provider.interactionResult(ctx.req, ctx.res, { consent: { grantId } });
}

provider.use(async (ctx, next) => {
  const match = /^\/interaction\/([\w-]+)(\/login)?$/.exec(ctx.path);
  if (match === null) return next();
  const details = await provider.interactionDetails(ctx.req, ctx.res);
  if (details.uid !== match[1]) ctx.throw(400, "not this interaction");
  ctx.set("Cache-Control", "no-store");
  if (ctx.method === "GET" && details.prompt.name === "login") {
    ctx.type = "html";
    ctx.body = loginPage(details.uid, "");
    return undefined;
  }
  if (ctx.method === "GET" && details.prompt.name === "consent") {
    ctx.status = 303;
    ctx.redirect(await grantConsent(ctx, details));
    return undefined;
  }
  if (ctx.method === "POST" && match[2] === "/login") {
    const form = await formOf(ctx.req);
    const username = form.get("username") ?? "";
    if (!passwordMatches(accounts.get(username), form.get("password") ?? "")) {
      ctx.status = 401;
      ctx.type = "html";
      ctx.body = loginPage(details.uid, "Invalid username or password.");
      return undefined;
    }
    const result = { login: { accountId: username } };
    ctx.status = 303;
    ctx.redirect(await provider.interactionResult(ctx.req, ctx.res, result));
    return undefined;
  }
  return ctx.throw(405);
});

const server = createServer(
  { key: readFileSync(config.key), cert: readFileSync(config.cert) },
  provider.callback(),
);
server.listen(config.port, "127.0.0.1", () => console.log(`listening ${issuer}`));
for (const signal of ["SIGTERM", "SIGINT"]) {
  process.on(signal, () => server.close(() => process.exit(0)));
}
