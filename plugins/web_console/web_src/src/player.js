// The recordings player: a recording's segments fetched in order, their video drawn by the
// live viewer's own code (screen.js) at the recorded times. Seeking starts from the last
// keyframe at or before the point (segments start at keyframes) and draws up to it. What the
// page shows is the records applied so far (`next`), not a time: records share milliseconds,
// and an event's seek stops at its own record, before what came back in the same one.
import { ApiError, api, apiBytes, token } from "./api.js";
import { decodableCodecs } from "./codecs.js";
import { eventReader, isKeyframe, readSegment, terminalText } from "./recording.js";
import { Screen } from "./screen.js";

const $ = (id) => document.getElementById(id);
const recordingId = new URLSearchParams(location.search).get("recording");

const player = {
  recording: null,
  records: [], // {at, kind, payload}, in recorded order
  keyframes: [], // indexes into records of video keyframes
  events: [], // {at, index, kind, text}
  output: [], // terminal output: {index, text}
  outputShown: -1, // how many of them the terminal pane shows
  loaded: 0, // segments read so far
  duration: 0,
  position: 0, // ms into the recording
  next: 0, // the first record not yet applied
  playing: false,
  speed: 1,
  seeking: null, // the seek under way (a promise), if any
  integrity: "",
};
const screen = new Screen($("screen"), { names: [], plugins: new Map() });

function status(text, word) {
  $("state").textContent = text;
  $("state").dataset.state = word;
}

const clock = (ms) => {
  const seconds = Math.floor(ms / 1000);
  const h = Math.floor(seconds / 3600);
  const m = Math.floor((seconds % 3600) / 60);
  const s = String(seconds % 60).padStart(2, "0");
  return h ? `${h}:${String(m).padStart(2, "0")}:${s}` : `${m}:${s}`;
};

function showTime() {
  const seek = $("seek");
  seek.max = String(player.duration);
  if (document.activeElement !== seek || !player.playing) seek.value = String(Math.round(player.position));
  $("time").textContent = `${clock(player.position)} / ${clock(player.duration)}`;
  let current = -1;
  for (const [i, event] of player.events.entries()) if (event.index < player.next) current = i;
  for (const [i, item] of [...$("events").children].entries()) {
    item.classList.toggle("current", i === current);
  }
  showTerminal();
}

/** The terminals' output applied so far (the last 20,000 characters of it). */
function showTerminal() {
  let count = 0;
  while (count < player.output.length && player.output[count].index < player.next) count += 1;
  if (count === player.outputShown) return;
  player.outputShown = count;
  $("terminal-section").hidden = player.output.length === 0;
  const text = player.output.slice(0, count).map((o) => o.text).join("");
  $("terminal-log").textContent = text.slice(-20000);
  $("terminal-log").scrollTop = $("terminal-log").scrollHeight;
}

// ---- loading ---------------------------------------------------------------------

function fact(name, value) {
  const dt = document.createElement("dt");
  dt.textContent = name;
  const dd = document.createElement("dd");
  dd.textContent = value;
  $("facts").append(dt, dd);
}

const readEvents = eventReader();

function addRecords(segment) {
  for (const record of segment.records) {
    const index = player.records.length;
    player.records.push(record);
    if (record.kind === "videoFrame" && isKeyframe(record.payload)) player.keyframes.push(index);
    if (record.kind === "backstageData") {
      player.output.push({ index, text: terminalText(record.payload.data) });
    }
    for (const event of readEvents(record)) addEvent({ ...event, at: record.at, index });
    player.duration = Math.max(player.duration, record.at);
  }
}

function addEvent(event) {
  player.events.push(event);
  const at = document.createElement("span");
  at.className = "at mono";
  at.textContent = clock(event.at);
  const button = document.createElement("button");
  button.dataset.kind = event.kind;
  button.dataset.at = String(event.at);
  button.append(at, document.createTextNode(event.text));
  button.onclick = () => seek(event.at, event.index);
  const item = document.createElement("li");
  item.append(button);
  $("events").append(item);
}

async function load() {
  if (!recordingId) return status("No recording given.", "error");
  if (!token.get()) {
    location.href = "./index.html#login";
    return;
  }
  const path = `/api/recordings/${encodeURIComponent(recordingId)}`;
  try {
    player.recording = await api("GET", path);
  } catch (error) {
    return status(`Cannot open the recording: ${error.message}`, "error");
  }
  const r = player.recording;
  $("title").textContent = `Recording of session ${r.session_id}`;
  document.title = `Recording ${r.id}`;
  fact("Machine", r.agent_id);
  fact("Started", new Date(r.started_at).toLocaleString());
  fact("Technicians", r.technicians.join(", ") || "—");
  fact("State", r.reason ? `${r.state}: ${r.reason}` : r.state);
  fact("SHA-256", r.sha256 || "—");
  check(path);
  for (let index = 0; index < r.segments; index += 1) {
    status(`Loading segment ${index + 1} of ${r.segments}…`, "loading");
    let segment;
    try {
      segment = readSegment(await apiBytes(`${path}/segments/${index}`));
    } catch (error) {
      const why = error instanceof ApiError ? error.message : `segment ${index} is damaged: ${error.message}`;
      status(`Stopped at segment ${index}: ${why}`, "error");
      break;
    }
    addRecords(segment);
    player.loaded = index + 1;
    if (index === 0) ready();
    showTime();
  }
  if (player.loaded === r.segments && !player.playing) {
    status(r.segments ? "Ready" : "This recording holds nothing.", "ready");
  }
}

/** The integrity badge: the segments read back against the chain the database keeps. */
async function check(path) {
  const badge = $("integrity");
  try {
    const verdict = await api("GET", `${path}/check`);
    player.integrity = verdict.intact ? "intact" : "tampered";
    badge.textContent = verdict.intact ? "Intact" : "Not intact";
    badge.title = verdict.intact ? `SHA-256 chain ${verdict.sha256}` : verdict.reason;
  } catch (error) {
    player.integrity = "unknown";
    badge.textContent = "Not checked";
    badge.title = error.message;
  }
  badge.className = `badge ${player.integrity}`;
  badge.dataset.integrity = player.integrity;
}

function ready() {
  $("play").disabled = false;
  $("seek").disabled = false;
  seek(0);
  requestAnimationFrame(tick);
}

// ---- playing -----------------------------------------------------------------------

function apply(record) {
  if (record.kind === "videoFrame") screen.frame(record.payload);
}

/** Apply every record up to `at` (ms), in order. */
function applyUpTo(at) {
  const { records } = player;
  while (player.next < records.length && records[player.next].at <= at) {
    apply(records[player.next]);
    player.next += 1;
  }
}

let last = 0;
function tick(now) {
  const elapsed = last ? now - last : 0;
  last = now;
  if (player.playing && !player.seeking) {
    player.position = Math.min(player.duration, player.position + elapsed * player.speed);
    applyUpTo(player.position);
    if (player.position >= player.duration && player.loaded === player.recording.segments) {
      pause();
      status("Ended", "ended");
    }
    showTime();
  }
  requestAnimationFrame(tick);
}

/** Go to `at` ms (and no further than record `last`, an event's own): from the last
 * keyframe at or before it, draw every frame up to it. Resolves once they are drawn
 * (`window.remotePlayer.seeking` is null again). */
function seek(at, last = Infinity) {
  const target = Math.max(0, Math.min(player.duration, Number(at)));
  const run = async () => {
    await player.seeking;
    const { records, keyframes } = player;
    let start = 0;
    for (const index of keyframes) {
      if (records[index].at > target || index > last) break;
      start = index;
    }
    screen.reset();
    const canvas = $("screen");
    canvas.getContext("2d").clearRect(0, 0, canvas.width, canvas.height);
    player.next = start;
    const reached = (index) => records[index].at <= target && index <= last;
    while (player.next < records.length && reached(player.next)) {
      if (records[player.next].kind === "videoFrame") apply(records[player.next]);
      player.next += 1;
    }
    player.position = target;
    await screen.settle();
  };
  const seeking = run().finally(() => {
    if (player.seeking === seeking) player.seeking = null;
    showTime();
  });
  player.seeking = seeking;
  return seeking;
}

function play() {
  if (player.position >= player.duration) seek(0);
  player.playing = true;
  $("play").textContent = "Pause";
  status("Playing", "playing");
}

function pause() {
  player.playing = false;
  $("play").textContent = "Play";
  status("Paused", "paused");
}

$("play").onclick = () => (player.playing ? pause() : play());
$("seek").addEventListener("input", () => seek(Number($("seek").value)));
$("speed").onchange = () => {
  player.speed = Number($("speed").value);
};

window.remotePlayer = { state: player, seek, screen }; // for diagnostics and tests
decodableCodecs().then((codecs) => {
  screen.codecs = codecs;
  load();
});
