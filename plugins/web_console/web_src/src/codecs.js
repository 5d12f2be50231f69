// The codecs this page decodes, by wire name: what the viewer lists in
// SessionRequest.codecs, so the relay and the agent never send it anything else.
//
// - "raw": decoded here (zstd.js), with its extensions "raw_copy" (frames that move what
//   the page shows: a scroll), "raw_over" (incremental frames drawn over another
//   codec's picture: the lossless picture back after motion, in parts) and "raw_keep"
//   (keyframe parts drawn over the picture shown: the keyframe due every 10 s, in parts
//   over a slow link), listed after it;
// - "vp9", "h264", "h265", "av1": through WebCodecs, where VideoDecoder.isConfigSupported
//   says this browser can (AV1's frames are plugin frames named "av1": SPEC has no slot);
// - any codec plugin's browser decoder: the server lists them at /codecs/index.json and
//   serves each ES module from its own origin (/codecs/NAME.js), so the console's CSP
//   (script-src 'self') admits them and nothing else.
//
// A browser decoder module's default export:
//   {
//     codec: "png",                     // its wire name, as CodecSpec.wire_name
//     label: "PNG (lossless)",          // optional: the codec menu's text
//     async supported() { ... },        // optional: false leaves it out
//     createDecoder() {                 // one per stream
//       return {
//         // frame: {data: Uint8Array, keyframe, width, height, rects: [{x, y, width, height}],
//         //         pts: number}. Resolves to the pieces to draw, [{x, y, image}], where
//         //         image is an ImageBitmap, ImageData, VideoFrame or canvas; a keyframe's
//         //         pieces cover the whole width x height. Rejects on a malformed frame.
//         async decode(frame) { ... },
//         close() {},
//       };
//     },
//   }

export const WEBCODECS = {
  vp9: "vp09.00.10.08", h264: "avc1.42E01F", h265: "hev1.1.6.L93.B0", av1: "av01.0.08M.08",
};

const LABELS = { raw: "Raw (LAN)", vp9: "VP9", h264: "H.264", h265: "H.265", av1: "AV1" };

// The agent's encoders convert with BT.601, limited range, and say so in the
// stream; Chromium takes VP9's colours from the codec string's defaults
// (BT.709) instead, so the decoder is told outright.
export const COLOR_SPACE = {
  primaries: "smpte170m", transfer: "smpte170m", matrix: "smpte170m", fullRange: false,
};

export function webCodecsConfig(codec) {
  return { codec: WEBCODECS[codec], colorSpace: COLOR_SPACE, optimizeForLatency: true };
}

async function webCodecsSupported(codec) {
  if (!("VideoDecoder" in window)) return false;
  try {
    return (await VideoDecoder.isConfigSupported(webCodecsConfig(codec))).supported === true;
  } catch {
    return false;
  }
}

async function pluginDecoders() {
  let index = [];
  try {
    const response = await fetch("/codecs/index.json");
    if (response.ok) index = await response.json();
  } catch {
    return [];
  }
  const found = [];
  for (const entry of Array.isArray(index) ? index : []) {
    try {
      const module = (await import(entry.module)).default;
      if (!module || module.codec !== entry.codec || typeof module.createDecoder !== "function") {
        console.warn(`browser decoder ${entry.module} does not export codec ${entry.codec}`);
        continue;
      }
      if (module.supported && !(await module.supported())) continue;
      found.push(module);
    } catch (error) {
      console.warn(`browser decoder ${entry.module} did not load`, error);
    }
  }
  return found;
}

/** The codec extensions this page draws (RawFrame.copies; raw frames over another codec's
 * picture): listed after the codecs in SessionRequest.codecs, never offered in the codec
 * menu. */
export const EXTENSIONS = ["raw_copy", "raw_over", "raw_keep"];

/** The extension of each codec whose pictures this page scales up to the size the
 * stream's keyframe states: an agent short of CPU codes motion smaller. An Annex B codec
 * states it in its size SEI (statedSize, SIZE_SEI), VP9 beside the bitstream
 * (EncodedFrame.width and height). */
export const SCALED = { h264: "h264_scaled", h265: "h265_scaled", vp9: "vp9_scaled" };

/** The codecs whose keyframes state the display's size in the agent's size SEI. */
export const SIZE_SEI = new Set(["h264", "h265"]);

/** What the viewer lists in SessionRequest.codecs: every codec it decodes, then the
 * extensions it draws. */
export function wireCodecs(codecs) {
  const scaled = codecs.names.filter((name) => SCALED[name]).map((name) => SCALED[name]);
  return [...codecs.names, ...EXTENSIONS, ...scaled];
}

const SIZE_UUID = Uint8Array.from([
  0x7b, 0x6a, 0x3f, 0x1e, 0x9d, 0x2c, 0x4b, 0x8a, 0xa5, 0xe6, 0xf1, 0xd2, 0xc3, 0xb4, 0xa5, 0x96,
]);
const SIZE_TEXT = /^size=(\d{1,5})x(\d{1,5})\x80/;
/** How far into a keyframe its size SEI is looked for: the agent puts it first. */
const SIZE_SEI_WITHIN = 64;

/** The display's size an H.264 or H.265 keyframe states in the agent's size SEI (a
 * user_data_unregistered message, remote_codec_pyav/annexb.py), or null. */
export function statedSize(data) {
  const end = Math.min(data.length, SIZE_SEI_WITHIN + SIZE_UUID.length);
  for (let at = data.indexOf(SIZE_UUID[0]); at >= 0 && at + SIZE_UUID.length <= end;
    at = data.indexOf(SIZE_UUID[0], at + 1)) {
    if (!SIZE_UUID.every((byte, i) => data[at + i] === byte)) continue;
    const tail = data.subarray(at + SIZE_UUID.length, at + SIZE_UUID.length + 18);
    const match = SIZE_TEXT.exec(String.fromCharCode(...tail));
    return match ? { width: Number(match[1]), height: Number(match[2]) } : null;
  }
  return null;
}

/** Every codec this page decodes: {names: [wire name ...], labels: {name: text},
 * plugins: Map(name -> decoder module)}. */
export async function decodableCodecs() {
  const names = ["raw"];
  for (const codec of Object.keys(WEBCODECS)) {
    if (await webCodecsSupported(codec)) names.push(codec);
  }
  const labels = { ...LABELS };
  const plugins = new Map();
  for (const module of await pluginDecoders()) {
    if (names.includes(module.codec)) continue;
    names.push(module.codec);
    labels[module.codec] = module.label || module.codec;
    plugins.set(module.codec, module);
  }
  return { names, labels, plugins };
}
