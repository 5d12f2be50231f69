// The browser viewer: one session over /ws/viewer, drawn on a canvas by screen.js (raw
// frames, WebCodecs, codec plugins' browser decoders); the page lists what it decodes
// when it connects and is sent nothing else.
import { api, token, viewerSocket } from "./api.js";
import { decodableCodecs, wireCodecs } from "./codecs.js";
import { scanCode } from "./keys.js";
import { Screen } from "./screen.js";
import { ready as zstdReady } from "./zstd.js";
import {
  ClipboardFormat, CodecPreference, KeyEventType, MouseEventType, SessionType, SpecialKey,
  decode, encode, toNumber,
} from "./proto.js";

const $ = (id) => document.getElementById(id);
const params = new URLSearchParams(location.search);
const sessionId = params.get("session");

const state = {
  ws: null,
  viewOnly: params.get("mode") === "view",
  closedByUser: false,
  ended: false,
  retries: 0,
  displays: [],
  displayId: 0,
  standingNotice: "",
  clipboard: null, // the clipboard text last sent or received
  frames: 0, // drawn in the current second
  rtt: 0,
  heartbeat: null,
  pendingMove: null,
};

const canvas = $("screen");
const screen = new Screen(canvas, { names: [], labels: {}, plugins: new Map() }, {
  shown() {
    state.frames += 1;
    notice("");
  },
  notice,
  cannotDecode: fallBackToRaw,
});
// What tests and diagnostics read of the picture (window.remoteViewer), from the screen;
// state.codecs is what this page decodes (decodableCodecs), the screen's; state.listed what
// it lists in SessionRequest.codecs (wireCodecs).
for (const name of ["codecs", "width", "height", "drawn", "codecFrames", "decoderCodec",
  "pluginCodec", "moves", "redraws", "kept", "repeats", "scaled", "pictureCodec", "zstd"]) {
  Object.defineProperty(state, name, { get: () => screen[name], enumerable: true });
}
Object.defineProperty(state, "listed", { get: () => wireCodecs(screen.codecs), enumerable: true });

/** The status bar's text, and its `data-state` (a stable word tests and styles can use). */
function status(text, word) {
  $("state").textContent = text;
  $("state").dataset.state = word;
}

function send(kind, payload) {
  if (state.ws?.readyState === WebSocket.OPEN) state.ws.send(encode(kind, payload));
}

// ---- connection ----------------------------------------------------------

async function connect() {
  if (!sessionId) return status("No session given.", "ended");
  if (!token.get()) {
    location.href = `./index.html#login`;
    return;
  }
  status("Connecting…", "connecting");
  let grant;
  try {
    const me = await api("GET", "/api/auth/me");
    if (!me.permissions.includes("control")) state.viewOnly = true;
    grant = await api("POST", `/api/sessions/${encodeURIComponent(sessionId)}/viewer-token`);
  } catch (error) {
    status(`Cannot open the session: ${error.message}`, "error");
    if (error.status >= 500 || error.status === undefined) scheduleReconnect();
    return;
  }
  applyViewOnly();
  const ws = viewerSocket(grant);
  state.ws = ws;
  let opened = false;
  ws.onopen = () => {
    opened = true;
    ws.send(encode("sessionRequest", {
      sessionToken: grant.token,
      sessionType: state.viewOnly ? SessionType.VIEW_ONLY : SessionType.SCREEN_CONTROL,
      clientVersion: "web-console",
      codecs: state.listed,
    }));
  };
  ws.onmessage = (event) => {
    try {
      const [kind, payload] = decode(event.data);
      if (kind) handlers[kind]?.(payload);
    } catch (error) {
      console.warn("undecodable message", error);
    }
  };
  ws.onclose = async (event) => {
    clearInterval(state.heartbeat);
    state.ws = null;
    if (state.closedByUser || state.ended) return;
    const refused = !opened && await refusedOrigin();
    if (refused) {
      state.ended = true;
      status(`Refused by the server (origin ${refused.origin}): the operator can allow it with ` +
        `${refused.setting}.`, "refused");
      return;
    }
    status(`Disconnected (${event.code}${event.reason ? `: ${event.reason}` : ""}); reconnecting…`,
      "reconnecting");
    scheduleReconnect();
  };
}

/** A browser cannot read why a WebSocket upgrade failed; the server says whether it was
 * this page's origin (the same check the socket makes), so the viewer stops retrying. */
async function refusedOrigin() {
  try {
    const response = await fetch("/api/viewer-origin", { method: "POST" });
    const answer = response.ok ? await response.json() : null;
    return answer && answer.allowed === false ? answer : null;
  } catch {
    return null;
  }
}

function scheduleReconnect() {
  const delay = Math.min(10000, 1000 * 2 ** state.retries) * (0.75 + Math.random() / 2);
  state.retries += 1;
  setTimeout(connect, delay);
}

function startHeartbeat() {
  clearInterval(state.heartbeat);
  state.heartbeat = setInterval(() => send("heartbeat", { timestamp: BigInt(Date.now()) }), 15000);
  send("heartbeat", { timestamp: BigInt(Date.now()) });
}

// ---- incoming ------------------------------------------------------------

const handlers = {
  sessionResponse(response) {
    if (!response.success) {
      state.ended = true;
      status(`Refused: ${response.error}`, "refused");
      return;
    }
    state.retries = 0;
    screen.needKey = true;
    status(state.viewOnly ? "Connected (view only)" : "Connected", "connected");
    if (response.displayInfo) showDisplays(response.displayInfo);
    startHeartbeat();
  },
  displayInfo: showDisplays,
  videoFrame(frame) {
    const ack = { sequence: frame.sequence, timestamp: frame.timestamp };
    screen.frame(frame, () => send("videoAck", ack)); // once drawn (CONTRACT "Acks")
  },
  heartbeatAck(ack) {
    state.rtt = Date.now() - toNumber(ack.clientTimestamp);
  },
  latencyReport(report) {
    if (toNumber(report.rttMs)) state.rtt = toNumber(report.rttMs);
  },
  chatMessage(message) {
    addChat(message.sender || "client", message.content);
  },
  clipboardData(clip) {
    if (clip.format !== ClipboardFormat.CLIPBOARD_TEXT) return;
    const text = new TextDecoder().decode(clip.data);
    state.clipboard = text; // the remote's: never sent back to it
    $("clipboard").value = text;
    navigator.clipboard?.writeText(text).catch(() => {});
  },
  disconnect(message) {
    state.ended = true;
    status(`Session ended: ${message.reason || "no reason given"}`, "ended");
  },
  cursorPosition() {},
  cursorShape() {},
};

function showDisplays(info) {
  state.displays = info.displays || [];
  const select = $("display");
  select.replaceChildren(
    ...state.displays.map((d) => {
      const option = document.createElement("option");
      option.value = String(d.id);
      option.textContent = `${d.name || `Display ${d.id}`} (${d.width}×${d.height})${d.isPrimary ? " ★" : ""}`;
      return option;
    }),
  );
  const current = state.displayId || info.primaryDisplay;
  if (current) select.value = String(current);
}

/** A line about the picture (a codec this page cannot draw), beside the connection state;
 * with none, what always holds for this page (state.standingNotice). */
function notice(text) {
  const shown = text || state.standingNotice;
  if ($("notice").textContent !== shown) $("notice").textContent = shown;
}

function fallBackToRaw() {
  notice("This browser could not decode the stream; switched to Raw.");
  $("codec").value = "raw";
  sendQuality();
}

// ---- input ----------------------------------------------------------------

function applyViewOnly() {
  document.body.classList.toggle("view-only", state.viewOnly);
  for (const id of ["cad", "lock", "prtsc", "clip-send"]) $(id).disabled = state.viewOnly;
}

// The canvas is letterboxed (object-fit: contain): map through the drawn area only.
function position(event) {
  const box = canvas.getBoundingClientRect();
  const scale = Math.min(box.width / state.width, box.height / state.height);
  const left = box.left + (box.width - state.width * scale) / 2;
  const top = box.top + (box.height - state.height * scale) / 2;
  const x = Math.floor((event.clientX - left) / scale);
  const y = Math.floor((event.clientY - top) / scale);
  return {
    x: Math.max(0, Math.min(state.width - 1, x)),
    y: Math.max(0, Math.min(state.height - 1, y)),
  };
}

function buttons(mask) {
  return {
    left: !!(mask & 1), right: !!(mask & 2), middle: !!(mask & 4), x1: !!(mask & 8), x2: !!(mask & 16),
  };
}

function mouse(event, type, extra = {}) {
  if (state.viewOnly || !state.width) return;
  send("mouseEvent", { ...position(event), buttons: buttons(event.buttons), eventType: type, ...extra });
}

const BUTTON_BIT = [1, 4, 2, 8, 16];
canvas.addEventListener("pointermove", (event) => {
  if (state.pendingMove === null) {
    requestAnimationFrame(() => {
      const last = state.pendingMove;
      state.pendingMove = null;
      mouse(last, MouseEventType.MOUSE_MOVE);
    });
  }
  state.pendingMove = event;
});
canvas.addEventListener("pointerdown", (event) => {
  canvas.focus();
  canvas.setPointerCapture(event.pointerId);
  mouse(event, MouseEventType.MOUSE_DOWN);
  event.preventDefault();
});
canvas.addEventListener("pointerup", (event) => {
  // `buttons` no longer has the released one: report it pressed in this event.
  const mask = event.buttons | (BUTTON_BIT[event.button] ?? 0);
  if (state.viewOnly || !state.width) return;
  send("mouseEvent", {
    ...position(event), buttons: buttons(mask), eventType: MouseEventType.MOUSE_UP,
  });
});
canvas.addEventListener("contextmenu", (event) => event.preventDefault());
canvas.addEventListener("wheel", (event) => {
  event.preventDefault();
  mouse(event, MouseEventType.MOUSE_WHEEL, {
    wheelDeltaX: -Math.sign(event.deltaX) * 120,
    wheelDeltaY: -Math.sign(event.deltaY) * 120,
  });
}, { passive: false });

// Keys go as the characters they type (KEY_UNICODE), so the remote side receives what
// the technician typed whatever the two keyboard layouts are; keys that type nothing
// (Enter, arrows, F-keys, Ctrl, ...) go as physical keys (KEY_SCAN). "Physical keys"
// sends every key by position instead, as games and some shortcuts want.
const physicalKeys = $("physical-keys");
physicalKeys.checked = localStorage.getItem("physicalKeys") === "1";
physicalKeys.onchange = () => {
  localStorage.setItem("physicalKeys", physicalKeys.checked ? "1" : "0");
  canvas.focus();
};

/** Whether a KeyboardEvent.key is text (one character) rather than a key's name. */
const isText = (key) => [...key].length === 1;

function key(event, down) {
  if (state.viewOnly) return;
  event.preventDefault();
  if (!physicalKeys.checked) {
    // AltGr and a dead key only shape the next character, which carries their effect.
    if (event.key === "Dead" || event.key === "AltGraph") return;
    if (isText(event.key)) {
      if (!down) return; // a character is typed once, on its key's press (and repeats)
      const altGr = event.getModifierState("AltGraph");
      send("keyEvent", {
        down: true,
        keyType: KeyEventType.KEY_UNICODE,
        unicode: event.key,
        // the modifiers of a shortcut (Ctrl+C); Shift and AltGr are in the character
        modifiers: {
          ctrl: event.ctrlKey && !altGr, alt: event.altKey && !altGr, meta: event.metaKey,
        },
      });
      return;
    }
  }
  send("keyEvent", {
    down,
    keyType: KeyEventType.KEY_SCAN,
    vkCode: event.keyCode || 0,
    scanCode: scanCode(event.code),
    unicode: event.key.length === 1 ? event.key : "",
    modifiers: {
      ctrl: event.ctrlKey, alt: event.altKey, shift: event.shiftKey, meta: event.metaKey,
      capsLock: event.getModifierState("CapsLock"), numLock: event.getModifierState("NumLock"),
    },
  });
}
canvas.addEventListener("keydown", (event) => key(event, true));
canvas.addEventListener("keyup", (event) => key(event, false));

$("cad").onclick = () => send("specialKey", { key: SpecialKey.CTRL_ALT_DEL });
$("lock").onclick = () => send("specialKey", { key: SpecialKey.LOCK_SCREEN });
$("prtsc").onclick = () => send("specialKey", { key: SpecialKey.PRINT_SCREEN });

$("display").onchange = () => {
  state.displayId = Number($("display").value);
  send("switchDisplay", { displayId: state.displayId });
};

/** The codec menu: Auto, then every codec this page decodes, by wire name. */
function codecMenu() {
  const select = $("codec");
  select.replaceChildren(
    ...[["", "Auto"], ...state.codecs.names.map((name) => [name, state.codecs.labels[name] || name])]
      .map(([value, text]) => {
        const option = document.createElement("option");
        option.value = value;
        option.textContent = text;
        return option;
      }),
  );
}

function sendQuality() {
  const name = $("codec").value;
  send("qualitySettings", {
    preset: Number($("quality").value),
    codec: CodecPreference[`CODEC_${name.toUpperCase()}`] ?? CodecPreference.CODEC_AUTO,
    codecName: name,
  });
}
$("quality").onchange = sendQuality;
$("codec").onchange = sendQuality;

// ---- chat and clipboard -------------------------------------------------------

function addChat(sender, content) {
  const line = document.createElement("li");
  const who = document.createElement("b");
  who.textContent = `${sender}: `;
  line.append(who, document.createTextNode(content));
  $("chat-log").append(line);
  line.scrollIntoView({ block: "nearest" });
}

$("chat-form").onsubmit = (event) => {
  event.preventDefault();
  const content = $("chat-input").value.trim();
  if (!content) return;
  send("chatMessage", {
    id: crypto.randomUUID(), sender: "technician", content, timestamp: BigInt(Math.floor(Date.now() / 1000)),
  });
  addChat("technician", content);
  $("chat-input").value = "";
};

// Clipboard text goes both ways: the agent sends what the end user copies; this page
// sends the technician's clipboard when the page gains the focus (where the browser
// lets it read the clipboard) and on "Send to remote". Text above MAX_CLIPBOARD_BYTES
// is refused here with a notice, never sent to be refused by the socket's size limit.
const MAX_CLIPBOARD_BYTES = 1024 * 1024; // remote_core.protocol.MAX_CLIPBOARD_BYTES

function sendClipboard(text) {
  const data = new TextEncoder().encode(text);
  if (data.length > MAX_CLIPBOARD_BYTES) {
    notice(`Clipboard not sent: ${(data.length / 1048576).toFixed(1)} MB of text, `
      + `more than the ${MAX_CLIPBOARD_BYTES / 1048576} MB shared.`);
    return false;
  }
  state.clipboard = text;
  send("clipboardData", { format: ClipboardFormat.CLIPBOARD_TEXT, data, mimeType: "text/plain" });
  return true;
}

async function shareClipboardOnFocus() {
  if (state.viewOnly || !navigator.clipboard?.readText) return;
  let text;
  try {
    text = await navigator.clipboard.readText();
  } catch {
    return; // not allowed here: "Send to remote" still is
  }
  if (text && text !== state.clipboard) sendClipboard(text);
}
window.addEventListener("focus", shareClipboardOnFocus);

$("clip-send").onclick = () => sendClipboard($("clipboard").value);
$("clip-get").onclick = () => send("clipboardRequest", {});

// The machine's files, in a tab of their own (it gets a copy of this tab's sessionStorage,
// where the login token is); the server asks for the 'file_transfer' permission there.
// The button is disabled in the page until this binds it (a click before did nothing),
// and stays so without a session.
$("files").onclick = () => {
  window.open(`./files.html?session=${encodeURIComponent(sessionId)}`, "_blank");
};
$("files").disabled = !sessionId;

$("leave").onclick = () => {
  state.closedByUser = true;
  send("disconnect", { reason: "technician left" });
  state.ws?.close(1000);
  status("Left the session.", "ended");
};

// ---- status bar ------------------------------------------------------------------

setInterval(() => {
  const kbps = Math.round((screen.bytes * 8) / 1000);
  $("fps").textContent = `${state.frames} fps`;
  $("rtt").textContent = `${state.rtt} ms`;
  $("bitrate").textContent = `${kbps} kbit/s`;
  send("latencyReport", { rttMs: BigInt(state.rtt), fps: state.frames, bitrateKbps: kbps });
  state.frames = 0;
  screen.bytes = 0;
}, 1000);

window.remoteViewer = state; // for diagnostics and tests
// The first frame is the largest (a whole screen): its decoder first.
Promise.all([decodableCodecs(), zstdReady]).then(([codecs]) => {
  screen.codecs = codecs;
  codecMenu();
  // Browsers give WebCodecs only to secure contexts (HTTPS, or loopback).
  if (!window.isSecureContext) {
    state.standingNotice = "Video codecs need HTTPS: this page decodes raw frames only.";
    notice("");
  }
  connect();
});
