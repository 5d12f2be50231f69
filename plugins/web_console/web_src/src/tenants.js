// Tenants (global administrators): the customers this server keeps apart. Each is
// renamed in place and disabled or enabled with one button; a tenant's first
// administrator is added on the Users page, choosing the tenant.
import { api } from "./api.js";
import { badge, h, when } from "./dom.js";

/** Render the page into `main`; `guarded` and `errorLine` are the console's. */
export function tenantsView(main, { guarded, errorLine }) {
  const error = errorLine();
  const said = h("p", { className: "said", role: "status" });
  const body = h("tbody", { id: "tenants" });
  const load = () => guarded(error, async () => {
    const tenants = await api("GET", "/api/tenants");
    body.replaceChildren(...tenants.map(tenantRow));
  });
  function tenantRow(t) {
    const name = h("input", { value: t.name, "aria-label": `Name of ${t.name}`, className: "tenant-name" });
    name.onchange = () => guarded(error, async () => {
      await api("PATCH", `/api/tenants/${encodeURIComponent(t.id)}`, { name: name.value.trim() });
      said.textContent = `Renamed to ${name.value.trim()}.`;
    });
    const isDefault = t.id === "00000000-0000-0000-0000-000000000001";
    return h("tr", { "data-tenant": t.id },
      h("td", {}, name), h("td", { className: "mono" }, t.id), h("td", {}, when(t.created_at)),
      h("td", {}, t.disabled ? badge("disabled", "offline") : badge("active", "online")),
      h("td", {}, isDefault ? h("span", { className: "muted" }, "holds the global administrators")
        : h("button", {
          className: t.disabled ? "" : "danger",
          onclick: () => guarded(error, async () => {
            if (!t.disabled && !confirm(`Disable ${t.name}? Its users are logged out and its sessions end.`)) return;
            await api("PATCH", `/api/tenants/${encodeURIComponent(t.id)}`, { disabled: !t.disabled });
            said.textContent = `${t.name} is ${t.disabled ? "enabled" : "disabled"}.`;
            load();
          }),
        }, t.disabled ? "Enable" : "Disable")));
  }
  const form = h("form", { className: "card row", id: "new-tenant" },
    h("input", { name: "name", placeholder: "Tenant name", required: true, maxlength: 100 }),
    h("button", { className: "primary" }, "Add tenant"));
  form.onsubmit = (event) => {
    event.preventDefault();
    const name = new FormData(form).get("name").trim();
    guarded(error, async () => {
      await api("POST", "/api/tenants", { name });
      said.textContent = `${name} is added: give it an administrator on the Users page.`;
      form.reset();
      load();
    });
  };
  main.append(h("h1", {}, "Tenants"),
    h("p", { className: "muted" }, "Each tenant's users see only its machines, sessions, codes, recordings and audit log. A disabled tenant's users cannot log in and its agents cannot connect."),
    form, error, said,
    h("table", {}, h("thead", {}, h("tr", {}, ...["Name", "Id", "Created", "State", ""].map((t) => h("th", {}, t)))), body));
  load();
}
