// The wire: proto/remote_support.proto, parsed once at load.
import protobuf from "protobufjs";
import protoText from "../../../proto/remote_support.proto";

const root = protobuf.parse(protoText, { keepCase: true }).root;
const Message = root.lookupType("remote_support.v1.Message");

export const enums = Object.fromEntries(
  ["SessionType", "MouseEventType", "KeyEventType", "SpecialKey", "ClipboardFormat",
    "QualityPreset", "CodecPreference"].map((name) => [name, root.lookupEnum(`remote_support.v1.${name}`).values]),
);

/** Serialize one Message carrying `payload` as its `kind` field. */
export function encode(kind, payload) {
  const message = Message.create({ [kind]: payload });
  return Message.encode(message).finish();
}

/** Parse one binary WebSocket message into [kind, payload]; throws on garbage. */
export function decode(bytes) {
  const message = Message.decode(new Uint8Array(bytes));
  const kind = message.payload;
  return [kind, kind ? message[kind] : null];
}

/** protobufjs gives int64 as Long or number; the viewer only needs numbers. */
export function toNumber(value) {
  if (value == null) return 0;
  return typeof value === "number" ? value : Number(value.toString());
}
