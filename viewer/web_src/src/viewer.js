// The browser viewer: one session over /ws/viewer, drawn on a canvas.
// raw_zstd frames are decoded here (fzstd); VP9/H.264 through WebCodecs.
import { decompress } from "fzstd";
import { api, token } from "./api.js";
import { scanCode } from "./keys.js";
import { decode, encode, enums, toNumber } from "./proto.js";

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
  width: 0,
  height: 0,
  decoder: null,
  decoderCodec: "",
  needKey: true,
  frames: 0,
  drawn: 0,
  rawFrames: 0,
  bytes: 0,
  rtt: 0,
  heartbeat: null,
  pendingMove: null,
};

const canvas = $("screen");
const ctx = canvas.getContext("2d", { alpha: false });

function status(text) {
  $("state").textContent = text;
}

function send(kind, payload) {
  if (state.ws?.readyState === WebSocket.OPEN) state.ws.send(encode(kind, payload));
}

// ---- connection ----------------------------------------------------------

async function connect() {
  if (!sessionId) return status("No session given.");
  if (!token.get()) {
    location.href = `./index.html#login`;
    return;
  }
  status("Connecting…");
  let viewerToken;
  try {
    const me = await api("GET", "/api/auth/me");
    if (!me.permissions.includes("control")) state.viewOnly = true;
    viewerToken = (await api("POST", `/api/sessions/${encodeURIComponent(sessionId)}/viewer-token`)).token;
  } catch (error) {
    status(`Cannot open the session: ${error.message}`);
    if (error.status >= 500 || error.status === undefined) scheduleReconnect();
    return;
  }
  applyViewOnly();
  const scheme = location.protocol === "https:" ? "wss" : "ws";
  const ws = new WebSocket(`${scheme}://${location.host}/ws/viewer`);
  ws.binaryType = "arraybuffer";
  state.ws = ws;
  ws.onopen = () => {
    ws.send(encode("session_request", {
      session_token: viewerToken,
      session_type: state.viewOnly ? enums.SessionType.VIEW_ONLY : enums.SessionType.SCREEN_CONTROL,
      client_version: "web-console",
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
    if (state.closedByUser || state.ended) return;
    status(`Disconnected (${event.code}${event.reason ? `: ${event.reason}` : ""}); reconnecting…`);
    scheduleReconnect();
  };
}

function scheduleReconnect() {
  const delay = Math.min(10000, 1000 * 2 ** state.retries) * (0.75 + Math.random() / 2);
  state.retries += 1;
  setTimeout(connect, delay);
}

function startHeartbeat() {
  clearInterval(state.heartbeat);
  state.heartbeat = setInterval(() => send("heartbeat", { timestamp: Date.now() }), 15000);
  send("heartbeat", { timestamp: Date.now() });
}

// ---- incoming ------------------------------------------------------------

const handlers = {
  session_response(response) {
    if (!response.success) {
      state.ended = true;
      status(`Refused: ${response.error}`);
      return;
    }
    state.retries = 0;
    state.needKey = true;
    status(state.viewOnly ? "Connected (view only)" : "Connected");
    if (response.display_info) showDisplays(response.display_info);
    startHeartbeat();
  },
  display_info: showDisplays,
  video_frame(frame) {
    const kind = frame.raw ? "raw" : frame.vp9 ? "vp9" : frame.h264 ? "h264" : frame.h265 ? "h265" : null;
    if (kind === "raw") {
      state.rawFrames += 1;
      drawRaw(frame.raw);
    }
    else if (kind) decodeVideo(kind, frame[kind]);
    send("video_ack", { sequence: frame.sequence, timestamp: frame.timestamp });
  },
  heartbeat_ack(ack) {
    state.rtt = Date.now() - toNumber(ack.client_timestamp);
  },
  latency_report(report) {
    if (toNumber(report.rtt_ms)) state.rtt = toNumber(report.rtt_ms);
  },
  chat_message(message) {
    addChat(message.sender || "client", message.content);
  },
  clipboard_data(clip) {
    if (clip.format !== enums.ClipboardFormat.CLIPBOARD_TEXT) return;
    const text = new TextDecoder().decode(clip.data);
    $("clipboard").value = text;
    navigator.clipboard?.writeText(text).catch(() => {});
  },
  disconnect(message) {
    state.ended = true;
    status(`Session ended: ${message.reason || "no reason given"}`);
  },
  cursor_position() {},
  cursor_shape() {},
};

function showDisplays(info) {
  state.displays = info.displays || [];
  const select = $("display");
  select.replaceChildren(
    ...state.displays.map((d) => {
      const option = document.createElement("option");
      option.value = String(d.id);
      option.textContent = `${d.name || `Display ${d.id}`} (${d.width}×${d.height})${d.is_primary ? " ★" : ""}`;
      return option;
    }),
  );
  const current = state.displayId || info.primary_display;
  if (current) select.value = String(current);
}

function resize(width, height) {
  if (state.width === width && state.height === height) return;
  state.width = width;
  state.height = height;
  canvas.width = width;
  canvas.height = height;
}

function bgraToImage(bytes, offset, width, height) {
  const image = ctx.createImageData(width, height);
  const out = image.data;
  for (let i = 0, j = offset; i < out.length; i += 4, j += 4) {
    out[i] = bytes[j + 2];
    out[i + 1] = bytes[j + 1];
    out[i + 2] = bytes[j];
    out[i + 3] = 255;
  }
  return image;
}

function drawRaw(raw) {
  state.bytes += raw.data.length;
  let bytes;
  try {
    bytes = raw.compressed ? decompress(raw.data) : raw.data;
  } catch (error) {
    console.warn("bad zstd frame", error);
    return;
  }
  if (raw.is_keyframe) {
    if (bytes.length !== raw.width * raw.height * 4) return;
    resize(raw.width, raw.height);
    ctx.putImageData(bgraToImage(bytes, 0, raw.width, raw.height), 0, 0);
    state.needKey = false;
    shown();
    return;
  }
  if (state.needKey) return;
  let offset = 0;
  for (const r of raw.dirty_rects || []) {
    const size = r.width * r.height * 4;
    if (r.x < 0 || r.y < 0 || r.x + r.width > state.width || r.y + r.height > state.height ||
      offset + size > bytes.length) return;
    ctx.putImageData(bgraToImage(bytes, offset, r.width, r.height), r.x, r.y);
    offset += size;
  }
  shown();
}

/** A frame reached the canvas: counted for the status bar (and `drawn` for diagnostics). */
function shown() {
  state.frames += 1;
  state.drawn += 1;
}

const CODECS = { vp9: "vp09.00.10.08", h264: "avc1.42E01F", h265: "hev1.1.6.L93.B0" };

function decodeVideo(kind, chunk) {
  state.bytes += chunk.data.length;
  if (!("VideoDecoder" in window)) return fallBackToRaw();
  if (state.decoderCodec !== kind) {
    if (!chunk.keyframe) return;
    state.decoder?.close();
    state.decoder = new VideoDecoder({
      output(frame) {
        resize(frame.displayWidth, frame.displayHeight);
        ctx.drawImage(frame, 0, 0);
        frame.close();
        shown();
      },
      error(error) {
        console.warn("decoder error", error);
        state.decoderCodec = "";
        fallBackToRaw();
      },
    });
    try {
      state.decoder.configure({ codec: CODECS[kind], optimizeForLatency: true });
    } catch (error) {
      return fallBackToRaw();
    }
    state.decoderCodec = kind;
  }
  state.decoder.decode(new EncodedVideoChunk({
    type: chunk.keyframe ? "key" : "delta",
    timestamp: toNumber(chunk.pts),
    data: chunk.data,
  }));
}

function fallBackToRaw() {
  $("codec").value = String(enums.CodecPreference.CODEC_RAW);
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
  send("mouse_event", { ...position(event), buttons: buttons(event.buttons), event_type: type, ...extra });
}

const BUTTON_BIT = [1, 4, 2, 8, 16];
canvas.addEventListener("pointermove", (event) => {
  if (state.pendingMove === null) {
    requestAnimationFrame(() => {
      const last = state.pendingMove;
      state.pendingMove = null;
      mouse(last, enums.MouseEventType.MOUSE_MOVE);
    });
  }
  state.pendingMove = event;
});
canvas.addEventListener("pointerdown", (event) => {
  canvas.focus();
  canvas.setPointerCapture(event.pointerId);
  mouse(event, enums.MouseEventType.MOUSE_DOWN);
  event.preventDefault();
});
canvas.addEventListener("pointerup", (event) => {
  // `buttons` no longer has the released one: report it pressed in this event.
  const mask = event.buttons | (BUTTON_BIT[event.button] ?? 0);
  if (state.viewOnly || !state.width) return;
  send("mouse_event", {
    ...position(event), buttons: buttons(mask), event_type: enums.MouseEventType.MOUSE_UP,
  });
});
canvas.addEventListener("contextmenu", (event) => event.preventDefault());
canvas.addEventListener("wheel", (event) => {
  event.preventDefault();
  mouse(event, enums.MouseEventType.MOUSE_WHEEL, {
    wheel_delta_x: -Math.sign(event.deltaX) * 120,
    wheel_delta_y: -Math.sign(event.deltaY) * 120,
  });
}, { passive: false });

function key(event, down) {
  if (state.viewOnly) return;
  event.preventDefault();
  send("key_event", {
    down,
    key_type: enums.KeyEventType.KEY_SCAN,
    vk_code: event.keyCode || 0,
    scan_code: scanCode(event.code),
    unicode: event.key.length === 1 ? event.key : "",
    modifiers: {
      ctrl: event.ctrlKey, alt: event.altKey, shift: event.shiftKey, meta: event.metaKey,
      caps_lock: event.getModifierState("CapsLock"), num_lock: event.getModifierState("NumLock"),
    },
  });
}
canvas.addEventListener("keydown", (event) => key(event, true));
canvas.addEventListener("keyup", (event) => key(event, false));

$("cad").onclick = () => send("special_key", { key: enums.SpecialKey.CTRL_ALT_DEL });
$("lock").onclick = () => send("special_key", { key: enums.SpecialKey.LOCK_SCREEN });
$("prtsc").onclick = () => send("special_key", { key: enums.SpecialKey.PRINT_SCREEN });

$("display").onchange = () => {
  state.displayId = Number($("display").value);
  send("switch_display", { display_id: state.displayId });
};

function sendQuality() {
  send("quality_settings", {
    preset: Number($("quality").value),
    codec: Number($("codec").value),
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
  send("chat_message", {
    id: crypto.randomUUID(), sender: "technician", content, timestamp: Math.floor(Date.now() / 1000),
  });
  addChat("technician", content);
  $("chat-input").value = "";
};

$("clip-send").onclick = () => send("clipboard_data", {
  format: enums.ClipboardFormat.CLIPBOARD_TEXT,
  data: new TextEncoder().encode($("clipboard").value),
  mime_type: "text/plain",
});
$("clip-get").onclick = () => send("clipboard_request", {});

$("leave").onclick = () => {
  state.closedByUser = true;
  send("disconnect", { reason: "technician left" });
  state.ws?.close(1000);
  status("Left the session.");
};

// ---- status bar ------------------------------------------------------------------

setInterval(() => {
  const kbps = Math.round((state.bytes * 8) / 1000);
  $("fps").textContent = `${state.frames} fps`;
  $("rtt").textContent = `${state.rtt} ms`;
  $("bitrate").textContent = `${kbps} kbit/s`;
  send("latency_report", { rtt_ms: state.rtt, fps: state.frames, bitrate_kbps: kbps });
  state.frames = 0;
  state.bytes = 0;
}, 1000);

window.remoteViewer = state; // for diagnostics and tests
connect();
