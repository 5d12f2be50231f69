// Zstandard decompression of raw frames: zstd's own decoder built to WebAssembly
// (build.mjs takes it from the zstddec package), about three times fzstd's speed: a
// 1080p keyframe, which every viewer gets at least every 10 s, took 29-35 ms in fzstd
// (11-13 here, in Chromium) and held every change behind it that long. fzstd stays for
// a page that cannot compile WebAssembly (a policy without 'wasm-unsafe-eval'), and for
// the frames that arrive before the module is ready.
import { decompress as decompressInJs } from "fzstd";
import wasmBase64 from "../gen/zstd_wasm.js";

const MAX_BYTES = 8192 * 4608 * 4; // the largest frame a viewer accepts (MAX_PIXELS)

let zstd = null; // the module's exports, once instantiated
let heap = null; // a view of its memory, made again when the memory grows
const input = { at: 0, size: 0 }; // buffers in its memory, kept from frame to frame
const output = { at: 0, size: 0 };

/** The decoder in use: "wasm" once the module is ready, "js" before or without it. */
export let decoder = "js";

/** Instantiate the module; resolves to the decoder in use (never rejects). */
export const ready = (async () => {
  try {
    const bytes = Uint8Array.from(atob(wasmBase64), (c) => c.charCodeAt(0));
    const env = { emscripten_notify_memory_growth: () => { heap = null; } };
    const { instance } = await WebAssembly.instantiate(bytes, { env });
    zstd = instance.exports;
    decoder = "wasm";
  } catch {
    // compiling WebAssembly is refused here: fzstd decodes every frame
  }
  return decoder;
})();

/** Make `buffer` (one of the two above) hold at least `size` bytes. */
function room(buffer, size) {
  if (buffer.size >= size) return;
  if (buffer.at) zstd.free(buffer.at);
  Object.assign(buffer, { at: 0, size: 0 }); // never left naming freed memory
  const at = zstd.malloc(size);
  if (!at) throw new Error(`no memory for ${size} bytes`);
  Object.assign(buffer, { at, size });
}

/** The `size` bytes `data` decompresses to, or an error when it is not exactly that.
 * With the WebAssembly decoder the result is a view of its memory, valid until the next
 * call: use it at once. */
export function decompress(data, size) {
  if (!(size > 0 && size <= MAX_BYTES)) throw new Error(`a frame of ${size} bytes`);
  if (!zstd) {
    const bytes = decompressInJs(data);
    if (bytes.length !== size) throw new Error(`${bytes.length} bytes, not ${size}`);
    return bytes;
  }
  room(input, data.length);
  room(output, size);
  heap ??= new Uint8Array(zstd.memory.buffer);
  heap.set(data, input.at);
  const made = zstd.ZSTD_decompress(output.at, size, input.at, data.length);
  if (zstd.ZSTD_isError(made)) throw new Error("not a Zstandard frame of this size");
  if (made !== size) throw new Error(`${made} bytes, not ${size}`);
  heap ??= new Uint8Array(zstd.memory.buffer);
  return heap.subarray(output.at, output.at + size);
}
