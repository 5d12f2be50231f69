// A recording's segment read back (remote_core/recording.py's format, no I/O here): the
// header (magic, index, the chain's link before it), then records of
// at_ms (u32), length (u32) and the Message wrapper as the relay forwarded it.
import { decode } from "./proto.js";

const MAGIC = "RSREC01\n";
const HEADER_BYTES = 8 + 4 + 32;
const RECORD_BYTES = 8;

/** Parse one segment into {index, records: [{at, kind, payload}]} in recorded order.
 * Throws on anything that is not a whole segment; a record whose message does not parse
 * is kept as kind "" (a newer server's message this page does not know). */
export function readSegment(bytes) {
  if (bytes.length < HEADER_BYTES) throw new Error("shorter than a segment header");
  if (new TextDecoder().decode(bytes.subarray(0, 8)) !== MAGIC) {
    throw new Error("not a recording segment (bad magic)");
  }
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const index = view.getUint32(8);
  const records = [];
  let pos = HEADER_BYTES;
  while (pos < bytes.length) {
    if (pos + RECORD_BYTES > bytes.length) throw new Error(`a record header is cut off at byte ${pos}`);
    const at = view.getUint32(pos);
    const length = view.getUint32(pos + 4);
    pos += RECORD_BYTES;
    if (pos + length > bytes.length) throw new Error(`a record runs past the end at byte ${pos}`);
    let kind = "";
    let payload = null;
    try {
      [kind, payload] = decode(bytes.subarray(pos, pos + length));
    } catch {
      // not a message this page knows: its time still counts
    }
    records.push({ at, kind: kind || "", payload });
    pos += length;
  }
  return { index, records };
}

/** Whether a VideoFrame message starts a picture on its own (any codec's keyframe). */
export function isKeyframe(frame) {
  const value = frame?.encoding?.value;
  return Boolean(value && (value.isKeyframe || value.keyframe));
}

const SPECIAL_KEYS = ["Ctrl+Alt+Del", "Lock screen", "Print Screen"];
const NOTES = {
  terminal_opened: ["command", (n) => `${n.technician} opened a terminal`],
  terminal_closed: ["command", (n) => `Terminal closed${n.text ? `: ${n.text}` : ""}`],
  files_opened: ["file", (n) => `${n.technician} opened the machine's files`],
  files_closed: ["file", (n) => `Files closed${n.text ? `: ${n.text}` : ""}`],
  file: ["file", (n) => `${n.technician} ${n.text}`],
};

// Terminal output as text: escape sequences (colours, cursor moves, titles) dropped.
const ESCAPES = /\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]|\r(?!\n)/g;
export function terminalText(bytes) {
  return new TextDecoder().decode(bytes).replace(ESCAPES, "").replace(/\r\n/g, "\n");
}

/** A reader of a recording's records in order, saying which are events to seek to:
 * read(record) returns [{kind, text}] (most often none). It keeps each terminal's typed
 * line, so a command is one event when Enter ends it. */
export function eventReader() {
  const lines = new Map(); // terminal viewer id -> the line typed so far
  return (record) => {
    const { kind, payload } = record;
    switch (kind) {
      case "chatMessage":
        return [{ kind: "chat", text: `${payload.sender || "client"}: ${payload.content}` }];
      case "clipboardData":
        return [{ kind: "clipboard", text: `Clipboard: ${payload.data.length} bytes` }];
      case "specialKey":
        return [{ kind: "command", text: `Sent ${SPECIAL_KEYS[payload.key] || "a special key"}` }];
      case "switchDisplay":
        return [{ kind: "display", text: `Switched to display ${payload.displayId}` }];
      case "disconnect":
        return [{ kind: "end", text: `Disconnected: ${payload.reason || "no reason given"}` }];
      case "recordingNote":
        if (payload.kind === "terminal_input") return typed(lines, payload);
        if (payload.kind in NOTES) {
          const [eventKind, text] = NOTES[payload.kind];
          return [{ kind: eventKind, text: text(payload) }];
        }
        return [];
      default:
        return [];
    }
  };
}

/** A terminal's input: each line Enter ends is a command event (backspaces applied,
 * other control characters dropped); input kept as timing only (no bytes) is none. */
function typed(lines, note) {
  const found = [];
  let line = lines.get(note.viewerId) || "";
  for (const char of new TextDecoder().decode(note.data)) {
    if (char === "\r" || char === "\n") {
      if (line.trim()) found.push({ kind: "command", text: `$ ${line.trim()}` });
      line = "";
    } else if (char === "\x7f" || char === "\b") {
      line = line.slice(0, -1);
    } else if (char >= " ") {
      line += char;
    }
  }
  lines.set(note.viewerId, line.slice(-500));
  return found;
}
