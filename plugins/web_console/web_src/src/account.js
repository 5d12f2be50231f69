// The caller's own account: the second factor (TOTP with recovery codes shown once, and
// passkeys), and ending every login of the account.
import { api, token } from "./api.js";
import { h, when } from "./dom.js";
import { createPasskey, passkeysAvailable } from "./passkey.js";

/** Render the page into `main`; `guarded`, `errorLine`, `loggedOut` (to the login page) and
 * `enrolled` (start over with the new token) are the console's. */
export function accountView(main, { guarded, errorLine, loggedOut, enrolled: restart }) {
  const error = errorLine();
  const status = h("p", { id: "second-factor-status" });
  const area = h("div", { id: "second-factor" });
  const logins = h("tbody", { id: "login-sessions" });
  const passkeys = h("tbody", { id: "passkeys" });
  const passkeyName = h("input", { id: "passkey-name", name: "passkey-name", maxlength: "64", required: true, value: "Passkey" });
  const passkeyForm = h("form", { id: "passkey-form" },
    h("p", {}, h("label", {}, "Name ", passkeyName), " ", h("button", { type: "submit", id: "passkey-add" }, "Add a passkey")));
  passkeyForm.onsubmit = (event) => {
    event.preventDefault();
    addPasskey();
  };
  main.append(h("h1", {}, "Account"), h("h2", {}, "Second factor"), status, error, area,
    h("h2", {}, "Passkeys"),
    h("p", { className: "muted" }, "A passkey (a security key, this computer's or your phone's) logs in as the second step instead of a code."),
    h("table", {}, h("thead", {}, h("tr", {}, ...["Name", "Added", "Last used", ""].map((t) => h("th", {}, t)))), passkeys),
    passkeysAvailable() ? passkeyForm
      : h("p", { className: "muted", id: "passkeys-unavailable" }, "This browser cannot use passkeys on this page (they need https, or localhost)."),
    h("h2", {}, "Sessions"),
    h("table", {}, h("thead", {}, h("tr", {}, ...["Logged in", "Until", "From", "Browser", "Second factor", ""].map((t) => h("th", {}, t)))), logins),
    h("p", { className: "muted" }, "Logging out everywhere ends every login of this account and closes its open viewers, on every server."),
    h("button", { id: "logout-everywhere", onclick: () => guarded(error, async () => {
      await api("POST", "/api/auth/logout");
      loggedOut("You logged out everywhere.");
    }) }, "Log out everywhere"));
  const loadLogins = () => guarded(error, async () => {
    const mine = await api("GET", "/api/auth/sessions");
    logins.replaceChildren(...mine.map((login) => h("tr", { "data-current": login.current ? "yes" : "no" },
      h("td", {}, when(login.created_at)), h("td", {}, when(login.expires_at)),
      h("td", { className: "mono" }, login.client_ip), h("td", {}, login.user_agent),
      h("td", {}, login.second_factor ? "yes" : "no"),
      h("td", {}, login.current ? "this browser" : h("button", { className: "end-login", onclick: () => guarded(error, async () => {
        await api("DELETE", `/api/auth/sessions/${encodeURIComponent(login.id)}`);
        await loadLogins();
      }) }, "End")))));
  });
  const loadPasskeys = () => guarded(error, async () => {
    const mine = await api("GET", "/api/auth/passkeys");
    passkeys.replaceChildren(...mine.map((key) => h("tr", { "data-passkey": key.id },
      h("td", {}, key.name), h("td", {}, when(key.created_at)), h("td", {}, when(key.last_used_at)),
      h("td", {}, h("button", { className: "remove-passkey", onclick: () => guarded(error, async () => {
        await api("DELETE", `/api/auth/passkeys/${encodeURIComponent(key.id)}`);
        await load();
      }) }, "Remove")))));
  });
  const load = () => guarded(error, async () => {
    loadLogins();
    loadPasskeys();
    const state = await api("GET", "/api/auth/second-factor");
    const keys = state.passkeys === 1 ? "1 passkey" : `${state.passkeys} passkeys`;
    status.textContent = state.totp_enrolled
      ? `Authenticator app (TOTP) enrolled; ${state.recovery_codes_left} recovery codes left.${state.passkeys ? ` And ${keys}.` : ""}`
      : state.passkeys
        ? `${keys} registered.`
        : state.required
          ? "This server requires a second factor of your account: set up an authenticator app or add a passkey to continue."
          : "No second factor yet.";
    area.replaceChildren(state.totp_enrolled ? resetForm() : h("button", { id: "totp-start", className: "primary", onclick: setup }, "Set up an authenticator app"));
  });

  function setup() {
    guarded(error, async () => {
      const fresh = await api("POST", "/api/auth/totp/secret");
      const code = h("input", { id: "totp-code", name: "code", inputmode: "numeric", autocomplete: "one-time-code", required: true });
      const form = h("form", { id: "totp-form" },
        h("p", {}, "Add this key to your authenticator app (or open the link on your phone), then type the code it shows."),
        h("p", {}, "Key: ", h("code", { id: "totp-secret", className: "mono" }, fresh.secret)),
        h("p", {}, h("a", { href: fresh.otpauth_uri, id: "totp-uri" }, "otpauth link")),
        h("label", {}, "Code", code),
        h("button", { className: "primary", type: "submit" }, "Confirm"));
      form.onsubmit = (event) => {
        event.preventDefault();
        guarded(error, async () => {
          const enrolled = await api("POST", "/api/auth/totp", { secret: fresh.secret, code: code.value.trim() });
          token.set(enrolled.access_token);
          area.replaceChildren(
            h("p", {}, "Keep these recovery codes somewhere safe: each logs in once without the app. They are not shown again."),
            h("ul", { id: "recovery-codes", className: "mono" }, ...enrolled.recovery_codes.map((c) => h("li", {}, c))),
            h("button", { id: "recovery-done", onclick: () => { location.hash = "#account"; restart(); } }, "I have saved them"));
        });
      };
      area.replaceChildren(form);
    });
  }

  function addPasskey() {
    guarded(error, async () => {
      const { options } = await api("POST", "/api/auth/passkeys/options");
      let credential;
      try {
        credential = await createPasskey(options);
      } catch (failure) {
        error.textContent = `No passkey was added (${failure.name || failure}).`;
        return;
      }
      const enrolled = await api("POST", "/api/auth/passkeys", { name: passkeyName.value.trim(), credential });
      token.set(enrolled.access_token); // this login now carries the passkey
      location.hash = "#account";
      restart();
    });
  }

  function resetForm() {
    const password = h("input", { type: "password", id: "totp-reset-password", autocomplete: "current-password", required: true });
    const form = h("form", { id: "totp-reset" }, h("label", {}, "Password", password),
      h("button", { type: "submit" }, "Remove the authenticator app"));
    form.onsubmit = (event) => {
      event.preventDefault();
      guarded(error, async () => {
        await api("POST", "/api/auth/totp/reset", { password: password.value });
        loggedOut("The second factor was removed; log in again.");
      });
    };
    return form;
  }

  load();
}
