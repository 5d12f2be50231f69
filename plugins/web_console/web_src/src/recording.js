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

/** What a record is worth listing as an event to seek to ({kind, text}), or null. */
export function eventOf(record) {
  const { kind, payload } = record;
  switch (kind) {
    case "chatMessage":
      return { kind: "chat", text: `${payload.sender || "client"}: ${payload.content}` };
    case "clipboardData":
      return { kind: "clipboard", text: `Clipboard: ${payload.data.length} bytes` };
    case "specialKey":
      return { kind: "command", text: `Sent ${SPECIAL_KEYS[payload.key] || "a special key"}` };
    case "switchDisplay":
      return { kind: "display", text: `Switched to display ${payload.displayId}` };
    case "disconnect":
      return { kind: "end", text: `Disconnected: ${payload.reason || "no reason given"}` };
    default:
      return null;
  }
}
