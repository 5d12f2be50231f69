// The webhook delivery log (administrators): recent attempts, or only the failures.
import { api } from "./api.js";
import { badge, h, items, when } from "./dom.js";

const KINDS = { delivered: "online", retrying: "pending", failed: "failed", refused: "failed" };

/** Render the page into `main`; `guarded`, `errorLine` and `every` are the console's. */
export function webhooksView(main, { guarded, errorLine, every }) {
  const error = errorLine();
  const body = h("tbody", { id: "webhook-deliveries" });
  const failedOnly = h("input", { type: "checkbox", id: "webhook-failed-only" });
  const load = () => guarded(error, async () => {
    const query = new URLSearchParams({ limit: "200" });
    if (failedOnly.checked) query.set("failed", "true");
    const deliveries = items(await api("GET", `/api/webhooks/deliveries?${query}`));
    body.replaceChildren(...deliveries.map((d) => h("tr", { "data-outcome": d.outcome },
      h("td", {}, when(d.created_at)), h("td", {}, d.event), h("td", {}, d.target),
      h("td", { className: "mono" }, d.url), h("td", {}, String(d.attempt)),
      h("td", {}, badge(d.outcome, KINDS[d.outcome] || "")),
      h("td", {}, d.status_code === null ? "—" : String(d.status_code)),
      h("td", { className: "muted" }, d.error || ""))));
    if (!deliveries.length) {
      body.append(h("tr", {}, h("td", { colspan: 8, className: "muted" },
        failedOnly.checked ? "No failed deliveries." : "No deliveries yet (is a webhook target configured?).")));
    }
  });
  failedOnly.addEventListener("change", load);
  main.append(h("h1", {}, "Webhooks"),
    h("p", { className: "muted" }, "Each attempt to deliver an event to a webhook target, newest first. Targets are configured in the server's settings ([plugins.webhooks])."),
    h("div", { className: "row" }, h("label", {}, failedOnly, " Failures only")), error,
    h("table", {}, h("thead", {}, h("tr", {}, ...["Time", "Event", "Target", "URL", "Attempt", "Outcome", "Status", "Error"].map((t) => h("th", {}, t)))), body));
  every(5000, load);
}
