// Which protobuf code should the browser viewer ship? Each candidate is generated
// from proto/remote_support.proto, bundled the way the console is (esbuild,
// minified, ESM), then timed in Node on what the viewer does most:
//   - decode one 1080p raw keyframe (8 MB of BGRA in RawFrame.data),
//   - decode 10,000 small messages (heartbeat acks, cursor positions, latency reports, chat),
//   - encode 10,000 mouse events (what the viewer sends while the pointer moves).
// The reflection baseline is today's protobufjs.parse(), which compiles its coders
// with new Function() and so cannot run under the console's CSP.
//
//   cd bench/web_wire && npm ci && node bench.mjs [--json ../results/web_wire.json]
import { build } from "esbuild";
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { gzipSync } from "node:zlib";

const here = dirname(fileURLToPath(import.meta.url));
const proto = resolve(here, "..", "..", "proto");
const bin = (name) => join(here, "node_modules", ".bin", name);
const work = mkdtempSync(join(tmpdir(), "web-wire-"));
const jsonArg = process.argv.indexOf("--json");
const jsonPath = resolve(jsonArg > 0 ? process.argv[jsonArg + 1] : join(here, "..", "results", "web_wire.json"));

// ---- generate ------------------------------------------------------------------------
execFileSync(bin("buf"), ["generate", proto, "--template", JSON.stringify({
  version: "v2",
  plugins: [{ local: bin("protoc-gen-es"), out: join(work, "es"), opt: ["target=js"] }],
})]);
execFileSync(bin("pbjs"), ["-t", "static-module", "-w", "es6", "--keep-case", "--no-verify",
  "--no-convert", "--no-delimited", "--no-comments", "--no-typeurl",
  "-o", join(work, "pbjs-static.js"), join(proto, "remote_support.proto")]);

// Each candidate: the same three operations behind one small adapter.
const adapters = {
  "protobuf-es (protoc-gen-es)": `
    import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
    import { MessageSchema } from "./es/remote_support_pb.js";
    export const decode = (bytes) => fromBinary(MessageSchema, bytes);
    export const encode = (kind, value) =>
      toBinary(MessageSchema, create(MessageSchema, { payload: { case: kind.es, value } }));
    export const camel = true;`,
  "protobufjs static-module (pbjs)": `
    import { remote_support } from "./pbjs-static.js";
    const Message = remote_support.v1.Message;
    export const decode = (bytes) => Message.decode(bytes);
    export const encode = (kind, value) => Message.encode({ [kind.snake]: value }).finish();
    export const camel = false;`,
  "protobufjs reflection (today, needs eval)": `
    import protobuf from "protobufjs";
    import text from "${join(proto, "remote_support.proto")}";
    const Message = protobuf.parse(text, { keepCase: true }).root.lookupType("remote_support.v1.Message");
    export const decode = (bytes) => Message.decode(bytes);
    export const encode = (kind, value) => Message.encode(Message.create({ [kind.snake]: value })).finish();
    export const camel = false;`,
};

async function bundle(name, source) {
  const entry = join(work, `${name.replace(/\W+/g, "-")}.entry.js`);
  writeFileSync(entry, source);
  const out = `${entry}.bundle.mjs`;
  await build({
    entryPoints: [entry], bundle: true, minify: true, format: "esm", outfile: out,
    target: ["chrome110"], loader: { ".proto": "text" }, nodePaths: [join(here, "node_modules")],
    logLevel: "error",
  });
  const code = readFileSync(out);
  return { out, bytes: code.length, gzip: gzipSync(code).length,
    evaluates: /(^|[^\w$.])(eval|Function)\s*\(/.test(code.toString()) };
}

// ---- the workload ----------------------------------------------------------------------
const camelize = (value) => {
  if (Array.isArray(value)) return value.map(camelize);
  if (!value || typeof value !== "object" || value instanceof Uint8Array) return value;
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [
    k.replace(/_(\w)/g, (_, c) => c.toUpperCase()), camelize(v)]));
};
const kind = (snake) => ({ snake, es: snake.replace(/_(\w)/g, (_, c) => c.toUpperCase()) });
const W = 1920, H = 1080;
const pixels = new Uint8Array(W * H * 4);
for (let i = 0; i < pixels.length; i++) pixels[i] = (i * 2654435761) >>> 24;
const frame = [kind("video_frame"), { timestamp: 1_700_000_000_000_000, sequence: 7, display_id: 1,
  raw: { width: W, height: H, data: pixels, compressed: false, is_keyframe: true } }];
const small = [
  [kind("heartbeat_ack"), { client_timestamp: 1_700_000_000_000, server_timestamp: 1_700_000_000_001 }],
  [kind("cursor_position"), { x: 640, y: 360, visible: true }],
  [kind("latency_report"), { rtt_ms: 12, fps: 30, bitrate_kbps: 2500 }],
  [kind("chat_message"), { id: "6f1c", sender: "user", content: "it works now, thanks", timestamp: 1_700_000_000 }],
];
const mouse = [kind("mouse_event"), { x: 100, y: 200, event_type: 0,
  buttons: { left: true, right: false, middle: false, x1: false, x2: false } }];

function time(fn, rounds) {
  fn(); // warm up
  const samples = [];
  for (let r = 0; r < rounds; r++) {
    const start = process.hrtime.bigint();
    fn();
    samples.push(Number(process.hrtime.bigint() - start) / 1e6);
  }
  samples.sort((a, b) => a - b);
  return samples[Math.floor(samples.length / 2)];
}

const rows = [];
for (const [name, source] of Object.entries(adapters)) {
  const built = await bundle(name, source);
  const lib = await import(pathToFileURL(built.out).href);
  // protobuf-es names fields in camelCase and holds a oneof as {case, value}.
  const payload = (value) => {
    if (!lib.camel) return value;
    const { raw, ...rest } = camelize(value);
    return raw ? { ...rest, encoding: { case: "raw", value: raw } } : rest;
  };
  const frameBytes = lib.encode(frame[0], payload(frame[1]));
  const smallBytes = Array.from({ length: 10_000 }, (_, i) => {
    const [k, v] = small[i % small.length];
    return lib.encode(k, payload(v));
  });
  const decoded = lib.decode(frameBytes);
  const raw = lib.camel ? decoded.payload.value.encoding.value : decoded.video_frame.raw;
  if (raw.data.length !== pixels.length || raw.data[12345] !== pixels[12345]) throw new Error(`${name}: bad round trip`);
  const mouseValue = payload(mouse[1]);
  rows.push({
    candidate: name,
    bundle_bytes: built.bytes,
    bundle_gzip_bytes: built.gzip,
    evaluates_strings: built.evaluates,
    decode_1080p_raw_ms: time(() => lib.decode(frameBytes), 30),
    decode_10k_small_ms: time(() => { for (const b of smallBytes) lib.decode(b); }, 15),
    encode_10k_mouse_ms: time(() => { for (let i = 0; i < 10_000; i++) lib.encode(mouse[0], mouseValue); }, 15),
  });
}

const header = ["candidate", "bundle", "gzip", "evaluates", "1080p raw decode", "10k small decode", "10k mouse encode"];
const table = rows.map((r) => [r.candidate, `${(r.bundle_bytes / 1024).toFixed(1)} KiB`,
  `${(r.bundle_gzip_bytes / 1024).toFixed(1)} KiB`, r.evaluates_strings ? "yes" : "no",
  `${r.decode_1080p_raw_ms.toFixed(3)} ms`, `${r.decode_10k_small_ms.toFixed(2)} ms`,
  `${r.encode_10k_mouse_ms.toFixed(2)} ms`]);
const widths = header.map((h, i) => Math.max(h.length, ...table.map((r) => r[i].length)));
const line = (cells) => `| ${cells.map((c, i) => c.padEnd(widths[i])).join(" | ")} |`;
console.log(line(header));
console.log(`|${widths.map((w) => "-".repeat(w + 2)).join("|")}|`);
for (const r of table) console.log(line(r));
mkdirSync(dirname(jsonPath), { recursive: true });
writeFileSync(jsonPath, JSON.stringify({ node: process.version, rows }, null, 2));
console.log(`\nwritten: ${jsonPath}`);
