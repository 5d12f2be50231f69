// The backstage terminal: a shell on the agent's machine over /ws/viewer (a BACKSTAGE
// session), drawn by xterm.js. Bytes both ways are UTF-8; output is acknowledged once
// xterm.js has written it (the agent sends at most its window ahead of that), so a
// flood of output never piles up in this page.
import "./cspstyle.js"; // before xterm.js makes its first <xterm-style>
import { FitAddon } from "@xterm/addon-fit";
import { Terminal } from "@xterm/xterm";
import { channelToken, token, viewerSocket } from "./api.js";
import { SessionType, decode, encode } from "./proto.js";

const $ = (id) => document.getElementById(id);
const sessionId = new URLSearchParams(location.search).get("session");
const MAX_CHUNK = 64 * 1024; // bytes of input in one BackstageData (the server's limit)
const ACK_EVERY = 32 * 1024; // acknowledge at least this often, and 50 ms after output
const encoder = new TextEncoder();

const state = { ws: null, ended: false, unacked: 0, ackTimer: 0, heartbeat: 0 };

const term = new Terminal({
  cursorBlink: true,
  fontFamily: 'ui-monospace, "SFMono-Regular", Menlo, Consolas, monospace',
  fontSize: 14,
  scrollback: 5000,
});
const fit = new FitAddon();
term.loadAddon(fit);
term.open($("terminal"));
fit.fit();
showSize();

/** The status bar's text, and its `data-state` (a stable word tests and styles can use). */
function status(text, word) {
  $("state").textContent = text;
  $("state").dataset.state = word;
}

function notice(text) {
  $("notice").textContent = text;
}

function showSize() {
  $("size").textContent = `${term.cols}×${term.rows}`;
  $("size").dataset.rows = String(term.rows);
  $("size").dataset.cols = String(term.cols);
}

function send(kind, payload) {
  if (state.ws?.readyState === WebSocket.OPEN) state.ws.send(encode(kind, payload));
}

// ---- connection ----------------------------------------------------------------------

async function connect() {
  if (!sessionId) return status("No session given.", "ended");
  if (!token.get()) {
    location.href = "./index.html#login";
    return undefined;
  }
  status("Connecting…", "connecting");
  let grant;
  try {
    grant = await channelToken(sessionId, "backstage", "the terminal", (text) => status(text, "asking"));
  } catch (error) {
    state.ended = true;
    return status(`Cannot open a terminal: ${error.message}`, "refused");
  }
  const ws = viewerSocket(grant);
  state.ws = ws;
  ws.onopen = () => {
    ws.send(encode("sessionRequest", {
      sessionToken: grant.token, sessionType: SessionType.BACKSTAGE, clientVersion: "web-console",
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
  ws.onclose = (event) => {
    clearInterval(state.heartbeat);
    state.ws = null;
    if (state.ended) return;
    ended(`Disconnected (${event.code}${event.reason ? `: ${event.reason}` : ""})`);
  };
  return undefined;
}

function ended(text) {
  state.ended = true;
  term.options.disableStdin = true;
  status(text, "ended");
}

// ---- incoming ------------------------------------------------------------------------

const handlers = {
  sessionResponse(response) {
    if (!response.success) {
      state.ended = true;
      status(`Refused: ${response.error}`, "refused");
      return;
    }
    status("Connected", "connected");
    sendSize();
    clearInterval(state.heartbeat);
    state.heartbeat = setInterval(() => send("heartbeat", { timestamp: BigInt(Date.now()) }), 15000);
    term.focus();
  },
  backstageData(message) {
    const { length } = message.data;
    term.write(message.data, () => acknowledge(length));
  },
  disconnect(message) {
    ended(`Terminal ended: ${message.reason || "no reason given"}`);
  },
  heartbeatAck() {},
};

function acknowledge(count) {
  state.unacked += count;
  if (state.unacked >= ACK_EVERY) flushAck();
  else if (!state.ackTimer) state.ackTimer = setTimeout(flushAck, 50);
}

function flushAck() {
  clearTimeout(state.ackTimer);
  state.ackTimer = 0;
  if (state.unacked > 0) send("backstageAck", { bytes: BigInt(state.unacked) });
  state.unacked = 0;
}

// ---- outgoing ------------------------------------------------------------------------

function sendInput(bytes) {
  if (state.ended) return;
  for (let at = 0; at < bytes.length; at += MAX_CHUNK) {
    send("backstageData", { data: bytes.subarray(at, at + MAX_CHUNK) });
  }
}

function sendSize() {
  showSize();
  send("backstageResize", { rows: term.rows, cols: term.cols });
}

term.onData((text) => sendInput(encoder.encode(text)));
term.onBinary((text) => sendInput(Uint8Array.from(text, (c) => c.charCodeAt(0) & 0xff)));
term.onResize(() => sendSize());
new ResizeObserver(() => fit.fit()).observe($("terminal"));

// ---- copy and paste ------------------------------------------------------------------

async function copySelection() {
  const text = term.getSelection();
  if (!text) {
    notice("Select text to copy first.");
    return;
  }
  try {
    await navigator.clipboard.writeText(text);
    notice("Copied.");
  } catch (error) {
    notice(`Copy failed: ${error.message}`);
  }
  term.focus();
}

async function pasteClipboard() {
  try {
    const text = await navigator.clipboard.readText();
    if (text) term.paste(text); // bracketed when the shell asked for it; sent as input
  } catch (error) {
    notice(`Paste failed (${error.message}); Ctrl+Shift+V pastes too.`);
  }
  term.focus();
}

// Ctrl+Shift+C copies; Ctrl+Shift+V is left to the browser, whose paste event xterm.js
// takes. Plain Ctrl+C and Ctrl+V go to the shell, as in any terminal.
term.attachCustomKeyEventHandler((event) => {
  if (!(event.ctrlKey && event.shiftKey) || event.type !== "keydown") return true;
  if (event.code === "KeyC") {
    event.preventDefault();
    copySelection();
    return false;
  }
  return event.code !== "KeyV";
});

$("copy").addEventListener("click", copySelection);
$("paste").addEventListener("click", pasteClipboard);
$("leave").addEventListener("click", () => {
  send("disconnect", { reason: "the technician left the terminal" });
  state.ended = true;
  state.ws?.close(1000);
  ended("You left the terminal.");
});

/** For tests and the curious: the terminal, and its screen as text (one string a row). */
window.remoteTerminal = {
  term,
  state,
  lines() {
    const buffer = term.buffer.active;
    const rows = [];
    for (let y = 0; y < buffer.length; y += 1) rows.push(buffer.getLine(y)?.translateToString(true) ?? "");
    return rows;
  },
};

connect();
