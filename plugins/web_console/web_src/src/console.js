// The operators' console: a small single-page app over the REST API.
import { ApiError, api, apiAll, token } from "./api.js";
import { badge, h, items, when } from "./dom.js";
import { qrSvg } from "./qr.js";
import { accountView } from "./account.js";
import { getPasskey } from "./passkey.js";
import { recordingsView } from "./recordings.js";
import { tenantsView } from "./tenants.js";
import { webhooksView } from "./webhooks.js";

const app = document.getElementById("app");
let me = null;
let refreshTimer = null;

const PERMISSIONS = ["view", "control", "support_codes", "manage_machines", "backstage", "file_transfer", "recordings"];

const VIEWS = {
  machines: { title: "Machines", render: machinesView },
  codes: { title: "Support codes", render: codesView },
  sessions: { title: "Sessions", render: sessionsView },
  releases: { title: "Releases", render: releasesView },
  recordings: { title: "Recordings", render: (main) => recordingsView(main, { guarded, errorLine, every }), may: canWatchRecordings },
  users: { title: "Users", render: usersView, admin: true },
  tenants: { title: "Tenants", render: (main) => tenantsView(main, { guarded, errorLine }), may: isGlobalAdmin },
  audit: { title: "Audit log", render: auditView, admin: true },
  webhooks: { title: "Webhooks", render: (main) => webhooksView(main, { guarded, errorLine, every }), may: isGlobalAdmin },
  account: { title: "Account", render: (main) => accountView(main, { guarded, errorLine, loggedOut: showLogin, enrolled: start }) },
};
let mustEnrol = false; // the server requires a second factor this login lacks

function isAdmin() {
  return me?.role === "admin";
}

/** An administrator of the default tenant: they manage the tenants and the releases. */
function isGlobalAdmin() {
  return Boolean(me?.global_admin);
}

function viewerLink(sessionId, label = "Open viewer") {
  // rel=opener: the new tab gets a copy of this tab's sessionStorage (the login token).
  return h("a", { href: `./viewer.html?session=${encodeURIComponent(sessionId)}`, target: "_blank", rel: "opener", className: "open-viewer" }, label);
}

function canBackstage() {
  return isAdmin() || Boolean(me?.permissions?.includes("backstage"));
}

function terminalLink(sessionId) {
  // A backstage terminal (a shell on the machine): the 'backstage' permission's.
  if (!canBackstage()) return "";
  return h("a", { href: `./terminal.html?session=${encodeURIComponent(sessionId)}`, target: "_blank", rel: "opener", className: "open-terminal" }, "Terminal");
}

function canWatchRecordings() {
  return isAdmin() || Boolean(me?.permissions?.includes("recordings"));
}

function canTransferFiles() {
  return isAdmin() || Boolean(me?.permissions?.includes("file_transfer"));
}

function filesLink(sessionId) {
  // The machine's files (browse, download, upload): the 'file_transfer' permission's.
  if (!canTransferFiles()) return "";
  return h("a", { href: `./files.html?session=${encodeURIComponent(sessionId)}`, target: "_blank", rel: "opener", className: "open-files" }, "Files");
}

function errorLine() {
  return h("p", { className: "error", role: "alert" });
}

async function guarded(line, action) {
  line.textContent = "";
  try {
    return await action();
  } catch (error) {
    if (error instanceof ApiError && error.status === 401) return showLogin("Your session expired; log in again.");
    line.textContent = error.message;
    return undefined;
  }
}

// ---- shell ---------------------------------------------------------------------

function showLogin(message = "") {
  clearInterval(refreshTimer);
  token.clear();
  me = null;
  const error = h("p", { className: "error", role: "alert" }, message);
  const secondStep = h("div", { id: "login-second-step" });
  const form = h("form", { className: "login", id: "login-form" },
    h("h1", {}, "remote-support"),
    h("label", {}, "Username", h("input", { name: "username", autocomplete: "username", required: true })),
    h("label", {}, "Password", h("input", { name: "password", type: "password", autocomplete: "current-password", required: true })),
    secondStep,
    error,
    h("button", { className: "primary", type: "submit" }, "Log in"));
  singleSignOn(form);
  form.onsubmit = async (event) => {
    event.preventDefault();
    const data = new FormData(form);
    const body = { username: data.get("username"), password: data.get("password") };
    const code = (data.get("code") || "").trim();
    if (code) body[/^\d{6}$/.test(code) ? "otp" : "recovery_code"] = code;
    try {
      const answer = await api("POST", "/api/auth/login", body);
      token.set(answer.access_token);
      await start();
    } catch (failure) {
      const type = failure.problem?.type || "";
      if (type.endsWith("/second-factor-needed")) {
        // Login's second step: the password matched; ask for the app's code, or a passkey.
        const methods = failure.problem.methods || ["otp", "recovery_code"];
        const steps = [];
        if (methods.includes("otp")) {
          steps.push(h("label", {}, "Code from your authenticator app, or a recovery code",
            h("input", { name: "code", id: "login-code", inputmode: "numeric", autocomplete: "one-time-code", required: !failure.problem.passkey_options })));
        }
        if (failure.problem.passkey_options) {
          steps.push(h("button", { type: "button", id: "login-passkey", className: methods.includes("otp") ? "" : "primary",
            onclick: () => passkeyLogin(body, failure.problem.passkey_options, error) }, "Use a passkey"));
        } else if (methods.includes("passkey")) {
          error.textContent = failure.message;
        }
        secondStep.replaceChildren(...steps);
        secondStep.querySelector("input, button")?.focus();
        return;
      }
      error.textContent = failure.status === 429 ? `Too many attempts. ${failure.message}` : failure.message;
    }
  };
  app.replaceChildren(form);
}

// Login's second step with a passkey: the browser answers the server's challenge.
async function passkeyLogin(body, options, error) {
  error.textContent = "";
  try {
    const passkey = await getPasskey(options);
    const answer = await api("POST", "/api/auth/login", { username: body.username, password: body.password, passkey });
    token.set(answer.access_token);
    await start();
  } catch (failure) {
    // The challenge is used up either way: logging in again asks for a new one.
    const text = failure instanceof ApiError ? failure.message : `The passkey did not answer (${failure.name || failure}).`;
    showLogin(failure.status === 429 ? `Too many attempts. ${text}` : text);
  }
}

// Single sign-on (plugin auth_oidc): a button for each offer of the server. The login
// ends back here with a one-time code in the fragment (never sent to a server), which
// is traded for the login token at once and wiped from the address.
async function singleSignOn(form) {
  let offers = [];
  try {
    offers = await api("GET", "/api/auth/sign-in-offers");
  } catch {
    return; // an older server: password login only
  }
  for (const offer of offers) {
    form.append(h("p", { className: "sso" },
      h("a", { className: "button primary sso-login", href: offer.start }, `Sign in with ${offer.name}`)));
  }
}

async function finishSingleSignOn() {
  const code = location.hash.startsWith("#sso=") ? location.hash.slice(5) : "";
  if (!code) return "";
  history.replaceState(null, "", location.pathname + location.search);
  try {
    token.set((await api("POST", "/auth/oidc/exchange", { code })).access_token);
    return "";
  } catch (failure) {
    return failure.message;
  }
}

async function start() {
  const failed = await finishSingleSignOn();
  if (failed) return showLogin(failed);
  if (!token.get()) return showLogin();
  try {
    me = await api("GET", "/api/auth/me");
    const factor = await api("GET", "/api/auth/second-factor");
    mustEnrol = factor.required && !factor.token_has_second_factor;
  } catch {
    return showLogin();
  }
  route();
}

function route() {
  clearInterval(refreshTimer);
  const [name, ...rest] = (location.hash.slice(1) || "machines").split("/");
  let view = VIEWS[name] && allowed(VIEWS[name]) ? name : name === "keys" ? "keys" : "machines";
  if (mustEnrol) view = "account"; // nothing else answers until a second factor is used
  const nav = h("nav", {},
    h("div", { className: "who" }, `${me.username} · ${me.role}`),
    ...Object.entries(VIEWS)
      .filter(([, v]) => allowed(v))
      .map(([key, v]) => h("a", { href: `#${key}`, className: key === view ? "active" : "" }, v.title)),
    h("a", { href: "#", id: "logout", onclick: (e) => { e.preventDefault(); logOut(); } }, "Log out"));
  const main = h("main", { id: "view" });
  app.replaceChildren(h("div", { className: "console" }, nav, main));
  if (view === "keys") keysView(main, decodeURIComponent(rest.join("/")));
  else VIEWS[view].render(main);
}

/** Whether this user may open a view: admins' views, and those a permission opens. */
function allowed(view) {
  return (!view.admin || isAdmin()) && (!view.may || view.may());
}

window.addEventListener("hashchange", () => me && route());

// Logging out ends the account's tokens on the server (and its open viewers), then
// forgets the token here; the login page shows even if the server cannot be reached.
async function logOut() {
  try {
    await api("POST", "/api/auth/logout");
  } catch {
    // already void (expired or revoked): nothing more to end
  }
  showLogin();
}

function every(ms, fn) {
  fn();
  refreshTimer = setInterval(fn, ms);
}

// ---- machines ----------------------------------------------------------------------

function machinesView(main) {
  const error = errorLine();
  const filters = {
    q: h("input", { placeholder: "Search", id: "machine-search", type: "search" }),
    organization: h("input", { placeholder: "Organization" }),
    site: h("input", { placeholder: "Site" }),
    tag: h("input", { placeholder: "Tag" }),
    status: h("select", {}, h("option", { value: "" }, "Any status"), h("option", { value: "online" }, "Online"), h("option", { value: "offline" }, "Offline")),
  };
  const body = h("tbody", { id: "machines" });
  const load = () => guarded(error, async () => {
    const query = new URLSearchParams();
    for (const [name, input] of Object.entries(filters)) if (input.value) query.set(name, input.value);
    query.set("limit", "1000");
    const machines = await apiAll(`/api/machines?${query}`);
    body.replaceChildren(...machines.map(machineRow));
    if (!machines.length) body.append(h("tr", {}, h("td", { colspan: 8, className: "muted" }, "No machines match.")));
  });
  for (const input of Object.values(filters)) input.addEventListener("input", load);
  const tools = [];
  if (isAdmin()) {
    tools.push(h("button", { onclick: () => guarded(error, async () => {
      const machine = await api("POST", "/api/machines", { organization: filters.organization.value, site: filters.site.value, tags: [] });
      location.hash = `#keys/${encodeURIComponent(machine.agent_id)}`;
    }) }, "Pre-register a machine"));
  }
  main.append(h("h1", {}, "Machines"), h("div", { className: "row" }, ...Object.values(filters), ...tools), error,
    h("table", {}, h("thead", {}, h("tr", {}, ...["Machine", "Organization", "Site", "Tags", "Status", "Version", "Last seen", ""].map((t) => h("th", {}, t)))), body));
  every(3000, load);

  function machineRow(m) {
    const actions = h("div", { className: "row" });
    if (m.session_id) actions.append(viewerLink(m.session_id, "Connect"), terminalLink(m.session_id), filesLink(m.session_id));
    if (isAdmin()) {
      actions.append(
        h("a", { href: `#keys/${encodeURIComponent(m.agent_id)}` }, "Keys"),
        h("button", { onclick: () => guarded(error, async () => {
          await api("POST", `/api/machines/${encodeURIComponent(m.agent_id)}/update`, {});
          error.textContent = `Update sent to ${m.hostname || m.agent_id}.`;
        }) }, "Push update"),
        h("button", { className: "danger", onclick: () => guarded(error, async () => {
          if (!confirm(`Remove ${m.hostname || m.agent_id}?`)) return;
          await api("DELETE", `/api/machines/${encodeURIComponent(m.agent_id)}?purge=true`);
          load();
        }) }, "Remove"));
    }
    return h("tr", { "data-agent-id": m.agent_id },
      h("td", {}, h("div", {}, m.hostname || "(unnamed)"), h("div", { className: "muted" }, m.agent_id)),
      h("td", {}, m.organization || ""), h("td", {}, m.site || ""),
      h("td", {}, ...(m.tags || []).map((t) => h("span", { className: "tag" }, t))),
      h("td", {}, badge(m.status || "offline")), h("td", {}, m.agent_version || ""),
      h("td", {}, when(m.last_seen)), h("td", {}, actions));
  }
}

// ---- agent keys --------------------------------------------------------------------------

function keysView(main, agentId) {
  const error = errorLine();
  const fresh = h("div");
  const body = h("tbody");
  const base = `/api/machines/${encodeURIComponent(agentId)}/keys`;
  const load = () => guarded(error, async () => {
    const keys = await apiAll(`${base}?limit=1000`);
    body.replaceChildren(...keys.map((k) => h("tr", {},
      h("td", {}, k.label || ""), h("td", {}, k.id), h("td", {}, when(k.created_at)), h("td", {}, when(k.last_used_at)),
      h("td", {}, k.revoked_at ? badge("revoked", "offline") : badge("active", "online")),
      h("td", {}, k.revoked_at ? "" : h("button", { className: "danger", onclick: () => guarded(error, async () => {
        await api("DELETE", `${base}/${encodeURIComponent(k.id)}`);
        load();
      }) }, "Revoke")))));
  });
  const label = h("input", { placeholder: "Label (optional)" });
  main.append(h("h1", {}, "Agent keys"), h("p", { className: "muted" }, `Machine ${agentId}`),
    h("div", { className: "row" }, label, h("button", { className: "primary", onclick: () => guarded(error, async () => {
      const issued = await api("POST", base, { label: label.value });
      const plain = issued.key;
      fresh.replaceChildren(h("div", { className: "card" },
        h("p", {}, "Copy this key now; it is shown only once:"),
        h("div", { className: "secret", id: "new-key" }, plain),
        h("p", { className: "muted" }, `remote-agent install --server ${location.origin} --key …`)));
      load();
    }) }, "Issue key")), fresh, error,
    h("table", {}, h("thead", {}, h("tr", {}, ...["Label", "Id", "Created", "Last used", "State", ""].map((t) => h("th", {}, t)))), body));
  load();
}

// ---- support codes ------------------------------------------------------------------------

function codesView(main) {
  const error = errorLine();
  const current = h("div", { id: "current-code" });
  const body = h("tbody");
  let shown = null;
  const load = () => guarded(error, async () => {
    const codes = items(await api("GET", "/api/codes"));
    body.replaceChildren(...codes.map((c) => h("tr", {},
      h("td", { className: "mono" }, c.code), h("td", {}, badge(c.status || "pending")),
      h("td", {}, when(c.expires_at)),
      h("td", {}, c.session_id ? viewerLink(c.session_id) : (c.status === "pending" ? h("button", { onclick: () => guarded(error, async () => {
        await api("DELETE", `/api/codes/${encodeURIComponent(c.code)}`);
        load();
      }) }, "Cancel") : "")))));
    if (shown) await showProgress(codes.find((c) => c.code === shown));
  });
  async function showProgress(code) {
    if (!code) return;
    let text = "Waiting for the user to enter the code…";
    let kind = "waiting";
    let link = null;
    if (code.session_id) {
      const session = await api("GET", `/api/sessions/${encodeURIComponent(code.session_id)}`).catch(() => null);
      if (session?.consent_state === "pending") text = "Waiting for consent…";
      else if (session?.live) {
        text = "Connected";
        kind = "connected";
        link = viewerLink(code.session_id);
      } else if (session) {
        text = `Ended${session.end_reason ? `: ${session.end_reason}` : ""}`;
        kind = "offline";
      }
    } else if (code.status && code.status !== "pending") {
      text = code.status;
      kind = "offline";
    }
    const joinUrl = `${location.origin}/join/${code.code}`;
    current.replaceChildren(h("div", { className: "card" },
      h("p", {}, "Read this code to the user:"), h("div", { className: "code-big", id: "big-code" }, code.code),
      h("p", {}, "or send them the join link: ", h("a", { id: "join-link", href: joinUrl, target: "_blank", rel: "noopener" }, joinUrl)),
      qrSvg(joinUrl, `QR code of the join link ${joinUrl}`),
      h("p", {}, h("span", { id: "code-state" }, badge(text, kind)), " ", link)));
  }
  main.append(h("h1", {}, "Support codes"),
    h("div", { className: "row" }, h("button", { className: "primary", id: "create-code", onclick: () => guarded(error, async () => {
      const code = await api("POST", "/api/codes", {});
      shown = code.code;
      await load();
    }) }, "Create a support code")), current, error,
    h("table", {}, h("thead", {}, h("tr", {}, ...["Code", "Status", "Expires", ""].map((t) => h("th", {}, t)))), body));
  every(2000, load);
}

// ---- sessions ----------------------------------------------------------------------------

function sessionsView(main) {
  const error = errorLine();
  const body = h("tbody");
  const load = () => guarded(error, async () => {
    // Every live session, however old, then the newest of the others.
    const live = await apiAll("/api/sessions?live=true&limit=1000");
    const shown = new Set(live.map((s) => s.id));
    const recent = items(await api("GET", "/api/sessions?limit=100")).filter((s) => !shown.has(s.id));
    const sessions = [...live, ...recent];
    body.replaceChildren(...sessions.map((s) => {
      const id = s.id;
      const live = s.live;
      return h("tr", {},
        h("td", {}, id), h("td", {}, s.hostname || s.agent_id || ""), h("td", {}, s.source || ""),
        h("td", {}, badge(s.consent_state || "", s.consent_state === "pending" ? "pending" : "granted")),
        h("td", {}, when(s.created_at)), h("td", {}, live ? badge("live", "online") : when(s.ended_at)),
        h("td", {}, h("div", { className: "row" }, live && s.consent_state !== "pending" ? viewerLink(id, "View") : "",
          live && s.consent_state !== "pending" ? terminalLink(id) : "",
          live && s.consent_state !== "pending" ? filesLink(id) : "",
          isAdmin() && live ? h("button", { className: "danger", onclick: () => guarded(error, async () => {
            await api("DELETE", `/api/sessions/${encodeURIComponent(id)}`);
            load();
          }) }, "Disconnect") : "")));
    }));
  });
  main.append(h("h1", {}, "Sessions"), error,
    h("table", {}, h("thead", {}, h("tr", {}, ...["Session", "Machine", "Source", "Consent", "Started", "Ended", ""].map((t) => h("th", {}, t)))), body));
  every(3000, load);
}

// ---- releases ------------------------------------------------------------------------------

function releasesView(main) {
  const error = errorLine();
  const body = h("tbody");
  const load = () => guarded(error, async () => {
    const releases = await apiAll("/api/releases?limit=1000");
    body.replaceChildren(...releases.map((r) => h("tr", {},
      h("td", {}, r.version), h("td", {}, r.download_url), h("td", { className: "mono" }, (r.checksum_sha256 || "").slice(0, 16) + "…"),
      h("td", {}, r.mandatory ? "yes" : "no"), h("td", {}, r.notes || ""), h("td", {}, when(r.created_at)),
      h("td", {}, isAdmin() && r.tenant_id === me.tenant_id ? h("button", { className: "danger", onclick: () => guarded(error, async () => {
        await api("DELETE", `/api/releases/${encodeURIComponent(r.version)}`);
        load();
      }) }, "Delete") : ""))));
  });
  main.append(h("h1", {}, "Releases"),
    h("p", { className: "muted" }, isGlobalAdmin() ? "Releases added here are every tenant's machines'."
      : "Releases added here are your tenant's machines' alone; the whole server's are listed too."));
  if (isAdmin()) {
    const form = h("form", { className: "card row" },
      h("input", { name: "version", placeholder: "Version (1.2.3)", required: true }),
      h("input", { name: "download_url", placeholder: "https://… download URL", required: true, size: 40 }),
      h("input", { name: "checksum_sha256", placeholder: "SHA-256 (64 hex)", required: true, size: 40 }),
      h("label", {}, h("input", { name: "mandatory", type: "checkbox" }), " mandatory"),
      h("input", { name: "notes", placeholder: "Notes" }),
      h("button", { className: "primary" }, "Add release"));
    form.onsubmit = (event) => {
      event.preventDefault();
      const data = new FormData(form);
      guarded(error, async () => {
        await api("POST", "/api/releases", {
          version: data.get("version"), download_url: data.get("download_url"),
          checksum_sha256: data.get("checksum_sha256"), mandatory: data.get("mandatory") === "on",
          notes: data.get("notes") || "",
        });
        form.reset();
        load();
      });
    };
    main.append(form);
  }
  main.append(error, h("table", {}, h("thead", {}, h("tr", {}, ...["Version", "Download", "SHA-256", "Mandatory", "Notes", "Created", ""].map((t) => h("th", {}, t)))), body));
  load();
}

// ---- users --------------------------------------------------------------------------------

function usersView(main) {
  const error = errorLine();
  const said = h("p", { className: "said", role: "status" });
  const body = h("tbody");
  const tenantNames = new Map();
  const load = () => guarded(error, async () => {
    if (isGlobalAdmin()) {
      const tenants = await api("GET", "/api/tenants");
      tenantNames.clear();
      for (const t of tenants) tenantNames.set(t.id, t.name);
      tenantChoice.replaceChildren(...tenants.map((t) => h("option", { value: t.id, selected: t.id === me.tenant_id }, t.name)));
    }
    const users = await apiAll("/api/users?limit=1000");
    body.replaceChildren(...users.map(userRow));
  });
  function userRow(u) {
    const boxes = PERMISSIONS.map((p) => h("label", {}, h("input", {
      type: "checkbox", checked: (u.permissions || []).includes(p), disabled: u.role === "admin",
      onchange: () => guarded(error, async () => {
        const chosen = PERMISSIONS.filter((_, i) => boxes[i].querySelector("input").checked);
        await api("PUT", `/api/users/${encodeURIComponent(u.id)}/permissions`, { permissions: chosen });
      }),
    }), ` ${p}`));
    const access = h("input", { value: (u.client_access || []).join(", "), placeholder: "* or organizations", disabled: u.role === "admin" });
    access.onchange = () => guarded(error, () => api("PUT", `/api/users/${encodeURIComponent(u.id)}/client-access`, {
      organizations: access.value.split(",").map((s) => s.trim()).filter(Boolean),
    }));
    return h("tr", {},
      h("td", {}, u.username), ...(isGlobalAdmin() ? [h("td", { className: "tenant" }, tenantNames.get(u.tenant_id) || u.tenant_id)] : []),
      h("td", {}, u.role), h("td", {}, h("div", { className: "row" }, ...boxes)), h("td", {}, access),
      h("td", {}, u.disabled ? badge("disabled", "offline") : badge("active", "online")),
      h("td", {}, h("div", { className: "row" },
        h("button", { onclick: () => guarded(error, async () => {
          await api("PATCH", `/api/users/${encodeURIComponent(u.id)}`, { disabled: !u.disabled });
          load();
        }) }, u.disabled ? "Enable" : "Disable"),
        h("button", {
          className: "unlock",
          title: "Lift the account's guard against guessing and forget its failed logins (audited)",
          onclick: () => guarded(error, async () => {
            const { was_guarded: wasGuarded } = await api("POST", `/api/users/${encodeURIComponent(u.id)}/unlock`);
            said.textContent = wasGuarded ? `${u.username} is unlocked.`
              : `${u.username} was not locked; its failed logins are forgotten.`;
          }),
        }, "Unlock"),
        u.id === me.id ? "" : h("button", { className: "danger", onclick: () => guarded(error, async () => {
          if (!confirm(`Delete ${u.username}?`)) return;
          await api("DELETE", `/api/users/${encodeURIComponent(u.id)}`);
          load();
        }) }, "Delete"))));
  }
  const tenantChoice = h("select", { name: "tenant", "aria-label": "Tenant" });
  const form = h("form", { className: "card row" },
    h("input", { name: "username", placeholder: "Username", required: true }),
    h("input", { name: "password", type: "password", placeholder: "Password (8+ characters)", required: true, autocomplete: "new-password" }),
    h("select", { name: "role" }, h("option", { value: "technician" }, "Technician"), h("option", { value: "admin" }, "Admin")),
    ...(isGlobalAdmin() ? [tenantChoice] : []),
    h("button", { className: "primary" }, "Add user"));
  form.onsubmit = (event) => {
    event.preventDefault();
    const data = new FormData(form);
    guarded(error, async () => {
      await api("POST", "/api/users", {
        username: data.get("username"), password: data.get("password"), role: data.get("role"),
        permissions: ["view"], client_access: [], ...(isGlobalAdmin() ? { tenant_id: data.get("tenant") } : {}),
      });
      form.reset();
      load();
    });
  };
  main.append(h("h1", {}, "Users and permissions"), form, error, said,
    h("table", {}, h("thead", {}, h("tr", {}, ...["User", ...(isGlobalAdmin() ? ["Tenant"] : []), "Role", "Permissions", "Client access", "State", ""].map((t) => h("th", {}, t)))), body));
  load();
}

// ---- audit log -------------------------------------------------------------------------------

function auditView(main) {
  const error = errorLine();
  const body = h("tbody");
  const load = () => guarded(error, async () => {
    const events = items(await api("GET", "/api/events?limit=200"));
    body.replaceChildren(...events.map((e) => h("tr", {},
      h("td", {}, when(e.created_at)), h("td", {}, e.kind), h("td", {}, e.actor || ""), h("td", {}, e.target || e.agent_id || ""),
      h("td", {}, e.session_id || ""), h("td", {}, e.client_ip || ""),
      h("td", { className: "muted" }, e.detail && Object.keys(e.detail).length ? JSON.stringify(e.detail) : ""))));
  });
  main.append(h("h1", {}, "Audit log"), error,
    h("table", {}, h("thead", {}, h("tr", {}, ...["Time", "Event", "Actor", "Target", "Session", "Client IP", "Detail"].map((t) => h("th", {}, t)))), body));
  every(5000, load);
}

start();
