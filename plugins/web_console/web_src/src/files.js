// The file-transfer page: the agent's files over /ws/viewer (a FILE_TRANSFER session).
// Browse the roots the agent shares, download files (a folder as a zip) and upload files
// and folders (pickers, or dropped onto the listing). Each transfer is a request of its own
// on the socket (transfer.js: the window, the acknowledgements, SHA-256); MAX_RUNNING run
// at once and the rest wait. A dropped socket is reconnected (a new token, a new socket)
// and every running transfer resumes where the agent has it.
import { ApiError, channelToken, token, viewerSocket } from "./api.js";
import { h } from "./dom.js";
import { FileOp, SessionType, decode, encode, toNumber } from "./proto.js";
import { Download, Upload, describe } from "./transfer.js";

const $ = (id) => document.getElementById(id);
const sessionId = new URLSearchParams(location.search).get("session");
const MAX_RUNNING = 2;
const RECONNECT_DELAYS = [500, 1000, 2000, 4000, 8000];
const GIVE_UP_AFTER = 120_000; // ms without a socket before the page stops trying

const state = {
  ws: null,
  link: null, // the current socket's link (transfer.js), once the server admitted it
  ended: false,
  heartbeat: 0,
  nextRequest: 1,
  cwd: "/",
  pathTyped: false, // the path box holds what the technician typed, not yet submitted
  entries: [],
  transfers: [],
  reconnects: 0, // sockets opened after the first (tests read it)
  lostAt: 0,
  dropAt: 0, // test hook: close the socket once a transfer has moved this many bytes
  held: false, // test hook: no reconnecting while true
  waiting: [], // resolvers of `connected()`
  relist: 0,
  mostActive: 0, // the most transfers that ran at once (tests read it)
};

// ---- words and numbers --------------------------------------------------------------

function status(text, word) {
  $("state").textContent = text;
  $("state").dataset.state = word;
}

function notice(text) {
  $("notice").textContent = text;
}

function showError(text, code = "") {
  $("error").textContent = text;
  $("error").dataset.code = code;
}

function bytes(count) {
  if (count == null) return "?";
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let value = count;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return unit === 0 ? `${value} B` : `${value.toFixed(value < 10 ? 1 : 0)} ${units[unit]}`;
}

function duration(seconds) {
  if (seconds == null || !Number.isFinite(seconds)) return "";
  const s = Math.round(seconds);
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${s % 60} s`;
  return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
}

/** st_mode's permission bits as `ls -l` shows them (the kind first: d, l or -). */
function permissions(mode, isDir, isLink) {
  const bits = "rwxrwxrwx".split("").map((c, i) => ((mode >> (8 - i)) & 1 ? c : "-"));
  const special = [[0o4000, 2, "s"], [0o2000, 5, "s"], [0o1000, 8, "t"]];
  for (const [bit, at, letter] of special) {
    if (mode & bit) bits[at] = bits[at] === "x" ? letter : letter.toUpperCase();
  }
  return (isLink ? "l" : isDir ? "d" : "-") + bits.join("");
}

function modified(mtime) {
  const seconds = toNumber(mtime);
  return seconds ? new Date(seconds * 1000).toLocaleString() : "—";
}

function join(directory, name) {
  return directory === "/" ? `/${name}` : `${directory}/${name}`;
}

function parent(path) {
  const at = path.lastIndexOf("/");
  return at <= 0 ? "/" : path.slice(0, at);
}

// ---- the socket ---------------------------------------------------------------------

const sleep = (ms) => new Promise((resolve) => { setTimeout(resolve, ms); });


/** A link (see transfer.js) over one admitted socket. */
function makeLink(ws) {
  const handlers = new Map();
  return {
    handlers,
    alive: () => state.ws === ws && ws.readyState === WebSocket.OPEN && !state.ended,
    send(kind, payload) {
      if (state.ws === ws && ws.readyState === WebSocket.OPEN) ws.send(encode(kind, payload));
    },
    open(handler) {
      const id = state.nextRequest;
      state.nextRequest = (state.nextRequest % 0xffffffff) + 1;
      handlers.set(id, handler);
      return id;
    },
    close(id) {
      handlers.delete(id);
    },
  };
}

/** Resolves once a socket is admitted (at once if one is). */
function connected() {
  if (state.link) return Promise.resolve(state.link);
  if (state.ended) return Promise.reject(new Error("the page is no longer connected"));
  return new Promise((resolve, reject) => state.waiting.push({ resolve, reject }));
}

async function connect() {
  if (!sessionId) {
    status("No session given.", "ended");
    state.ended = true;
    return;
  }
  if (!token.get()) {
    location.href = "./index.html#login";
    return;
  }
  status(state.reconnects ? "Reconnecting…" : "Connecting…", state.reconnects ? "reconnecting" : "connecting");
  let grant;
  try {
    grant = await channelToken(sessionId, "file_transfer", "file transfer", (text) => status(text, "asking"));
  } catch (error) {
    if (state.reconnects && !(error instanceof ApiError)) {
      lost(); // the network, not a refusal: try again
      return;
    }
    end(`Cannot open the files: ${error.message}`, "refused");
    return;
  }
  if (state.ended) return;
  const ws = viewerSocket(grant);
  state.ws = ws;
  ws.onopen = () => {
    ws.send(encode("sessionRequest", {
      sessionToken: grant.token, sessionType: SessionType.FILE_TRANSFER, clientVersion: "web-console",
    }));
  };
  ws.onmessage = (event) => {
    if (state.ws !== ws) return;
    let kind;
    let payload;
    try {
      [kind, payload] = decode(event.data);
    } catch (error) {
      console.warn("undecodable message", error);
      return;
    }
    if (kind === "sessionResponse") admitted(ws, payload);
    else if (kind === "disconnect") end(`The server ended the file session: ${payload.reason || "no reason given"}`, "ended");
    else if (kind === "fileReply" || kind === "fileData" || kind === "fileAck") route(kind, payload);
  };
  ws.onclose = (event) => {
    if (state.ws !== ws) return;
    state.ws = null;
    dropped(event);
  };
}

function admitted(ws, response) {
  if (!response.success) {
    end(`Refused: ${response.error}`, "refused");
    ws.close(1000);
    return;
  }
  const link = makeLink(ws);
  state.link = link;
  state.lostAt = 0;
  status("Connected", "connected");
  clearInterval(state.heartbeat);
  state.heartbeat = setInterval(() => link.send("heartbeat", { timestamp: BigInt(Date.now()) }), 15000);
  for (const waiter of state.waiting.splice(0)) waiter.resolve(link);
  list(state.cwd);
  for (const transfer of state.transfers) if (transfer.active) transfer.start(link);
  schedule();
}

function route(kind, message) {
  const handler = state.link?.handlers.get(message.requestId);
  if (!handler) return; // a cancelled or forgotten request's last words
  if (kind === "fileReply") handler.reply(message);
  else if (kind === "fileData") handler.data(message);
  else handler.ack(message);
}

/** The socket closed without the page or the server ending the session: reconnect. */
function dropped(event) {
  clearInterval(state.heartbeat);
  const { link } = state;
  state.link = null;
  if (link) for (const [, handler] of link.handlers) handler.lost?.();
  for (const transfer of state.transfers) if (transfer.active) transfer.suspend();
  if (state.ended) return;
  notice(`The connection dropped (${event.code}${event.reason ? `: ${event.reason}` : ""}); reconnecting.`);
  lost();
}

async function lost() {
  if (!state.lostAt) state.lostAt = Date.now();
  if (Date.now() - state.lostAt > GIVE_UP_AFTER) {
    end("Disconnected: the server could not be reached again.", "ended");
    return;
  }
  status("Reconnecting…", "reconnecting");
  await sleep(RECONNECT_DELAYS[Math.min(state.reconnects, RECONNECT_DELAYS.length - 1)]);
  while (state.held) await sleep(100); // a test looks at the agent's side meanwhile
  state.reconnects += 1;
  if (!state.ended) connect();
}

function end(text, word) {
  if (state.ended) return;
  state.ended = true;
  clearInterval(state.heartbeat);
  status(text, word);
  for (const waiter of state.waiting.splice(0)) waiter.reject(new Error(text));
  for (const transfer of state.transfers) {
    if (!transfer.finished) transfer.fail("ended", `Stopped: ${text}`);
  }
  state.link = null;
}

// ---- requests that are one answer (LIST, MKDIR) --------------------------------------

/** Send a request and resolve with its reply (rejects if the socket drops first). */
async function call(fields) {
  const link = await connected();
  return new Promise((resolve, reject) => {
    const id = link.open({
      reply(message) {
        link.close(id);
        resolve(message);
      },
      data() {},
      ack() {},
      lost() {
        reject(new Error("the connection dropped"));
      },
    });
    link.send("fileRequest", { requestId: id, ...fields });
  });
}

/** `call`, again after a dropped socket (for requests that are safe to repeat). */
async function callAgain(fields) {
  for (let tries = 0; ; tries += 1) {
    try {
      return await call(fields);
    } catch (error) {
      if (state.ended || tries >= 5) throw error;
    }
  }
}

// ---- the listing --------------------------------------------------------------------

let listing = 0; // the newest LIST's number: an older answer is not shown

async function list(path) {
  const mine = ++listing;
  let reply;
  try {
    reply = await call({ op: FileOp.LIST, path });
  } catch {
    return; // the socket dropped; admitted() lists again
  }
  if (mine !== listing) return;
  if (reply.error) {
    showError(`Cannot open ${path}: ${describe(reply.error, reply.message)}`, reply.error);
    showPath();
    return;
  }
  showError("");
  state.cwd = path;
  state.entries = [...reply.entries].sort((a, b) => (b.isDir - a.isDir) || a.name.localeCompare(b.name));
  render();
}

function crumbs() {
  const nav = $("crumbs");
  const parts = state.cwd === "/" ? [] : state.cwd.slice(1).split("/");
  const items = [h("button", { className: "crumb", "data-path": "/", onclick: () => list("/") }, "Roots")];
  let path = "";
  for (const part of parts) {
    path += `/${part}`;
    const target = path;
    items.push(h("span", { className: "muted" }, "/"),
      h("button", { className: "crumb", "data-path": target, onclick: () => list(target) }, part));
  }
  nav.replaceChildren(...items);
}

/** The path box says where the page is, except while the technician is typing a path into
 * it: a listing that arrives meanwhile (the first one, one after an upload) keeps the typing. */
function showPath() {
  const box = $("path");
  if (state.pathTyped && document.activeElement === box) return;
  state.pathTyped = false;
  box.value = state.cwd;
}

function render() {
  crumbs();
  showPath();
  const atRoots = state.cwd === "/";
  for (const id of ["upload-files", "upload-folder"]) $(id).disabled = atRoots;
  $("mkdir-form").querySelector("button").disabled = atRoots;
  $("up").disabled = atRoots;
  const rows = state.entries.map((entry) => {
    const path = join(state.cwd, entry.name);
    // A link the agent shows as itself (broken, or leading out of the root) may be a folder:
    // opening it asks the agent, whose refusal is shown.
    const name = entry.isDir || entry.isLink
      ? h("button", { className: "link entry-open", "data-path": path, onclick: () => list(path) },
        entry.isDir ? `${entry.name}/` : entry.name)
      : h("span", { className: "entry-name" }, entry.name);
    return h("tr", { className: entry.isDir ? "dir" : "file", "data-name": entry.name },
      h("td", {}, name, entry.isLink ? h("span", { className: "muted", title: "a symbolic link" }, " ↪") : ""),
      h("td", { title: entry.isDir ? "" : `${toNumber(entry.size)} bytes` }, entry.isDir ? "—" : bytes(toNumber(entry.size))),
      h("td", {}, modified(entry.mtime)),
      h("td", { className: "mono" }, permissions(entry.mode, entry.isDir, entry.isLink)),
      h("td", {}, h("button", {
        className: "download", title: entry.isDir ? "Download the folder as a zip" : "Download the file",
        onclick: () => download(entry, path),
      }, "Download")));
  });
  if (!rows.length) {
    rows.push(h("tr", {}, h("td", { colspan: 5, className: "muted" }, atRoots ? "No folders are shared." : "This folder is empty.")));
  }
  $("entries").replaceChildren(...rows);
}

// ---- transfers ----------------------------------------------------------------------

let drawing = 0; // a redraw is due (soon after a change)
let ticking = 0; // the next redraw of rates and times left, while something runs

function changed(transfer) {
  if (state.dropAt && transfer.done >= state.dropAt && state.ws) {
    state.dropAt = 0;
    state.ws.close(4000, "the test dropped the socket");
  }
  if (transfer.finished) {
    schedule();
    if (transfer.kind === "upload" && transfer.state === "done" && parent(transfer.path) === state.cwd) {
      clearTimeout(state.relist);
      state.relist = setTimeout(() => list(state.cwd), 300);
    }
  }
  if (!drawing) drawing = setTimeout(drawTransfers, 200);
}

function add(transfer) {
  state.transfers.push(transfer);
  changed(transfer);
  schedule();
}

/** Start queued transfers while fewer than MAX_RUNNING run (on an admitted socket). */
function schedule() {
  if (!state.link) return;
  let running = state.transfers.filter((t) => t.active).length;
  for (const transfer of state.transfers) {
    if (running >= MAX_RUNNING) break;
    if (transfer.state === "queued") {
      transfer.start(state.link);
      running += 1;
    }
  }
  state.mostActive = Math.max(state.mostActive, running);
}

function save(transfer, blob) {
  const url = URL.createObjectURL(blob);
  const anchor = h("a", { href: url, download: transfer.name, hidden: true });
  document.body.append(anchor);
  anchor.click();
  anchor.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
}

/** Downloads above this size (and folders, whose zip's size is unknown) are written to a
 * file the technician picks as they arrive, where the browser can (showSaveFilePicker):
 * a Blob is held whole in the browser until it is saved, which Chromium refuses past a
 * few hundred MB. Smaller ones arrive as a Blob, saved without a question. */
const STREAM_FROM = 64 * 1024 * 1024;

async function download(entry, path) {
  const size = toNumber(entry.size);
  const name = entry.isDir ? `${entry.name}.zip` : entry.name;
  let sink = null;
  if (typeof window.showSaveFilePicker === "function"
      && (entry.isDir ? Infinity : size) > window.remoteFiles.streamFrom) {
    try {
      const handle = await window.showSaveFilePicker({ suggestedName: name });
      const writable = await handle.createWritable();
      sink = {
        write: (data) => writable.write(data),
        close: () => writable.close(),
        async abort() { // nothing of it stays: not its bytes, nor the empty file picked
          try {
            await writable.abort();
          } catch {
            // already errored or closed: its bytes are gone either way
          }
          await handle.remove?.();
        },
      };
    } catch (error) {
      if (error.name === "AbortError") return; // the technician chose no file
      notice(`Saving straight to disk is not possible here (${error.message}); the download is kept in the browser until it ends.`);
    }
  }
  add(new Download({ name: entry.name, path, size, isDir: entry.isDir, sink }, changed, save));
}

/** Upload `files` ({file, rel}: rel a '/'-separated path below the folder) and create
 * `dirs` (the same) first, into the folder shown now. */
async function upload(files, dirs) {
  const base = state.cwd;
  if (base === "/") {
    showError("Open a shared folder first: files go into a folder, not beside the roots.");
    return;
  }
  const overwrite = $("overwrite").checked;
  const needed = new Set(dirs);
  for (const { rel } of files) {
    for (let at = rel.indexOf("/"); at > 0; at = rel.indexOf("/", at + 1)) needed.add(rel.slice(0, at));
  }
  const ordered = [...needed].sort((a, b) => a.split("/").length - b.split("/").length || a.localeCompare(b));
  for (const dir of ordered) {
    let reply;
    try {
      reply = await callAgain({ op: FileOp.MKDIR, path: join(base, dir) });
    } catch (error) {
      showError(`Cannot create the folder ${dir}: ${error.message}`);
      return;
    }
    if (reply.error && reply.error !== "exists") {
      showError(`Cannot create the folder ${dir}: ${describe(reply.error, reply.message)}`, reply.error);
      return;
    }
  }
  if (ordered.length && base === state.cwd) list(base);
  for (const { file, rel } of files) add(new Upload({ file, path: join(base, rel), overwrite }, changed));
}

function drawTransfers() {
  drawing = 0;
  const rows = state.transfers.map((t) => {
    const progress = h("progress", { max: t.size ?? 1 });
    if (t.size != null) progress.value = Math.min(t.done, t.size);
    else progress.removeAttribute("value"); // indeterminate: a folder's zip
    const words = t.state === "failed" ? t.message : t.state === "cancelled" ? "" : t.note;
    return h("tr", { className: `transfer ${t.kind}`, "data-id": t.id, "data-state": t.state, "data-path": t.path },
      h("td", { title: t.kind }, t.kind === "upload" ? "↑" : "↓"),
      h("td", { className: "transfer-name", title: t.path }, t.name),
      h("td", {}, progress),
      h("td", { className: "transfer-bytes" }, `${bytes(t.done)} / ${bytes(t.size)}`),
      h("td", {}, t.state === "running" && t.rate() ? `${bytes(Math.round(t.rate()))}/s` : ""),
      h("td", {}, duration(t.left())),
      h("td", {}, h("span", { className: `badge ${t.state}` }, t.state),
        words ? h("div", { className: t.state === "failed" ? "transfer-message error" : "transfer-message muted" }, words) : ""),
      h("td", {}, t.finished ? "" : h("button", { className: "cancel", onclick: () => t.cancel() }, "Cancel")));
  });
  $("transfers").replaceChildren(...rows);
  clearTimeout(ticking);
  ticking = state.transfers.some((t) => t.state === "running") ? setTimeout(drawTransfers, 1000) : 0;
}

// ---- picking and dropping -----------------------------------------------------------

function picked(input) {
  const files = [...input.files].map((file) => ({ file, rel: file.webkitRelativePath || file.name }));
  input.value = "";
  if (files.length) upload(files, []);
}

const entryFile = (entry) => new Promise((resolve, reject) => { entry.file(resolve, reject); });
const readSome = (reader) => new Promise((resolve, reject) => { reader.readEntries(resolve, reject); });

/** Every file and folder below a dropped entry, with paths relative to the drop. */
async function walk(entry, prefix, out) {
  const rel = prefix + entry.name;
  if (entry.isFile) {
    out.files.push({ file: await entryFile(entry), rel });
  } else if (entry.isDirectory) {
    out.dirs.push(rel);
    const reader = entry.createReader();
    for (let batch = await readSome(reader); batch.length; batch = await readSome(reader)) {
      for (const child of batch) await walk(child, `${rel}/`, out);
    }
  }
}

async function onDrop(event) {
  event.preventDefault();
  $("drop").classList.remove("dragging");
  // The entries must be taken during the event; walking them may take longer.
  const items = [...(event.dataTransfer?.items || [])].filter((item) => item.kind === "file");
  const taken = items.map((item) => ({ entry: item.webkitGetAsEntry?.(), file: item.getAsFile() }));
  const out = { files: [], dirs: [] };
  try {
    for (const { entry, file } of taken) {
      if (entry) await walk(entry, "", out);
      else if (file) out.files.push({ file, rel: file.name });
    }
  } catch (error) {
    showError(`Cannot read what was dropped: ${error.message}`);
    return;
  }
  if (out.files.length || out.dirs.length) upload(out.files, out.dirs);
}

const drop = $("drop");
drop.addEventListener("dragover", (event) => {
  if (![...(event.dataTransfer?.types || [])].includes("Files")) return;
  event.preventDefault();
  event.dataTransfer.dropEffect = state.cwd === "/" ? "none" : "copy";
  drop.classList.add("dragging");
});
drop.addEventListener("dragleave", (event) => {
  if (!drop.contains(event.relatedTarget)) drop.classList.remove("dragging");
});
drop.addEventListener("drop", onDrop);

$("upload-files").addEventListener("click", () => $("pick-files").click());
$("upload-folder").addEventListener("click", () => $("pick-folder").click());
$("pick-files").addEventListener("change", (event) => picked(event.target));
$("pick-folder").addEventListener("change", (event) => picked(event.target));
$("path").addEventListener("input", () => {
  state.pathTyped = true;
});
$("path-form").addEventListener("submit", (event) => {
  event.preventDefault();
  state.pathTyped = false;
  const path = $("path").value.trim() || "/";
  list(path.length > 1 ? path.replace(/\/+$/, "") : path);
});
$("up").addEventListener("click", () => list(parent(state.cwd)));
$("refresh").addEventListener("click", () => list(state.cwd));
$("mkdir-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const name = $("folder-name").value.trim();
  if (!name) return;
  const base = state.cwd;
  let reply;
  try {
    reply = await call({ op: FileOp.MKDIR, path: join(base, name) });
  } catch (error) {
    showError(`Cannot create the folder: ${error.message}`);
    return;
  }
  if (reply.error) {
    showError(`Cannot create the folder ${name}: ${describe(reply.error, reply.message)}`, reply.error);
    return;
  }
  $("folder-name").value = "";
  showError("");
  notice(`Created ${join(base, name)}.`);
  if (base === state.cwd) list(base);
});
$("leave").addEventListener("click", () => {
  const { ws } = state;
  for (const transfer of state.transfers) transfer.cancel();
  state.link?.send("disconnect", { reason: "the technician left the file session" });
  end("You left the file session.", "ended");
  ws?.close(1000);
});

/** For tests and the curious: the state, each transfer in brief, and a way to drop the
 * socket as a network would (the page reconnects and resumes as it does then), at once or
 * once a transfer has moved so many bytes, and to hold the reconnection back a while. */
window.remoteFiles = {
  state,
  streamFrom: STREAM_FROM, // tests move it: Infinity keeps every download in the browser
  transfers: () => state.transfers.map((t) => ({
    id: t.id, kind: t.kind, name: t.name, path: t.path, size: t.size, done: t.done, state: t.state,
    error: t.error, message: t.message, resumes: t.resumes, restarts: t.restarts, sha256: t.sha256 || "",
    maxOutstanding: t.maxOutstanding ?? null, maxUnacked: t.maxUnacked ?? null,
  })),
  dropSocket(code = 4000) {
    state.ws?.close(code, "the test dropped the socket");
  },
  dropAt(count) {
    state.dropAt = count;
  },
  hold(held) {
    state.held = Boolean(held);
  },
};

render();
connect();
