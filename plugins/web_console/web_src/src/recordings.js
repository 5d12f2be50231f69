// The recordings page (the 'recordings' permission): filter by machine, technician and
// date; check a recording against its hash chain; open it in the player (player.html).
import { api, apiAll } from "./api.js";
import { badge, h, when } from "./dom.js";

const size = (bytes) => (bytes >= 1048576 ? `${(bytes / 1048576).toFixed(1)} MB`
  : `${Math.ceil(bytes / 1024)} kB`);

function duration(r) {
  if (!r.ended_at) return "—";
  const seconds = Math.round((new Date(r.ended_at) - new Date(r.started_at)) / 1000);
  return seconds >= 60 ? `${Math.floor(seconds / 60)} min ${seconds % 60} s` : `${seconds} s`;
}

/** Render the page into `main`; `guarded`, `errorLine` and `every` are the console's. */
export function recordingsView(main, { guarded, errorLine, every }) {
  const error = errorLine();
  const names = new Map(); // agent id -> hostname
  const machine = h("select", { id: "recording-machine" }, h("option", { value: "" }, "Any machine"));
  const technician = h("input", { id: "recording-technician", placeholder: "Technician (user name)" });
  const since = h("input", { id: "recording-since", type: "date", title: "Started on or after" });
  const body = h("tbody", { id: "recordings" });
  const checks = new Map(); // recording id -> its integrity badge, kept across refreshes

  const checkButton = (r) => {
    const cell = h("span", { className: "integrity" });
    const known = checks.get(r.id);
    if (known) {
      cell.append(known);
      return cell;
    }
    const button = h("button", { onclick: () => guarded(error, async () => {
      button.disabled = true;
      button.textContent = "Checking…";
      const verdict = await api("GET", `/api/recordings/${encodeURIComponent(r.id)}/check`);
      const shown = verdict.intact ? badge("intact") : badge("not intact", "tampered");
      shown.title = verdict.intact ? `SHA-256 chain ${verdict.sha256}` : verdict.reason;
      checks.set(r.id, shown);
      cell.replaceChildren(shown);
    }).finally(() => { button.disabled = false; button.textContent = "Check"; }) }, "Check");
    cell.append(button);
    return cell;
  };

  const row = (r) => h("tr", { "data-recording-id": r.id },
    h("td", {}, when(r.started_at)),
    h("td", {}, h("div", {}, names.get(r.agent_id) || r.agent_id), h("div", { className: "muted" }, r.session_id)),
    h("td", {}, r.technicians.join(", ") || "—"),
    h("td", {}, duration(r)), h("td", {}, size(r.bytes)),
    h("td", { title: r.reason || "" }, badge(r.state)),
    h("td", {}, checkButton(r)),
    h("td", {}, r.segments ? h("a", { href: `./player.html?recording=${encodeURIComponent(r.id)}`, className: "play" }, "Play") : ""));

  const load = () => guarded(error, async () => {
    const query = new URLSearchParams({ limit: "200" });
    if (machine.value) query.set("agent_id", machine.value);
    if (technician.value.trim()) query.set("technician", technician.value.trim());
    if (since.value) query.set("since", new Date(`${since.value}T00:00:00`).toISOString());
    const recordings = await apiAll(`/api/recordings?${query}`, 200);
    body.replaceChildren(...recordings.map(row));
    if (!recordings.length) body.append(h("tr", {}, h("td", { colspan: 8, className: "muted" }, "No recordings match.")));
  });
  guarded(error, async () => {
    const machines = await apiAll("/api/machines?limit=1000");
    for (const m of machines) names.set(m.agent_id, m.hostname || m.agent_id);
    machine.append(...machines.map((m) => h("option", { value: m.agent_id }, m.hostname || m.agent_id)));
  });
  machine.addEventListener("change", load);
  since.addEventListener("change", load);
  technician.addEventListener("input", load);
  main.append(h("h1", {}, "Recordings"), error,
    h("div", { className: "row" }, machine, technician, h("label", {}, "Since ", since)),
    h("table", {}, h("thead", {}, h("tr", {}, ...["Started", "Machine / session", "Technicians", "Length", "Size", "State", "Integrity", ""].map((t) => h("th", {}, t)))), body));
  every(10000, load);
}
