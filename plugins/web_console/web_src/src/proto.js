// The wire: code that build.mjs generates from proto/remote_support.proto
// (protoc-gen-es). Fields are camelCase, a oneof is {case, value}, and nothing
// is compiled from strings, so it runs under the console's CSP.
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { MessageSchema } from "../gen/remote_support_pb.js";

export {
  ClipboardFormat, CodecPreference, FileOp, KeyEventType, MouseEventType, SessionType, SpecialKey,
} from "../gen/remote_support_pb.js";

/** Serialize one Message carrying `payload` as its `kind` (camelCase) field. */
export function encode(kind, payload) {
  return toBinary(MessageSchema, create(MessageSchema, { payload: { case: kind, value: payload } }));
}

/** Parse one binary WebSocket message into [kind, payload]; throws on garbage. */
export function decode(bytes) {
  const { payload } = fromBinary(MessageSchema, new Uint8Array(bytes));
  return [payload.case, payload.value];
}

/** 64-bit fields arrive as BigInt; the viewer only needs numbers. */
export function toNumber(value) {
  return value == null ? 0 : Number(value);
}
