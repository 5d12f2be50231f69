// A remote screen drawn on a canvas from VideoFrame messages: raw frames decoded here
// (zstd.js), VP9/H.264/H.265/AV1 through WebCodecs, a codec plugin's frames by its browser
// decoder (codecs.js). The live viewer and the recordings player draw with this one code.
import { SIZE_SEI, WEBCODECS, statedSize, webCodecsConfig } from "./codecs.js";
import { toNumber } from "./proto.js";
import { decoder as zstdDecoder, decompress } from "./zstd.js";

/** A picture is drawn at most this many times larger each way than it was coded (the
 * agent halves it: SCALED), as remote_codec_pyav's decoder does. */
const MOST_UPSCALE = 4;

export class Screen {
  /**
   * @param {HTMLCanvasElement} canvas
   * @param {{names: string[], plugins: Map}} codecs what this page decodes (decodableCodecs)
   * @param {{shown?: () => void, notice?: (text: string) => void,
   *          cannotDecode?: () => void}} on  a frame reached the canvas; a line about the
   *   picture; the browser failed a video stream (the viewer asks for raw frames then)
   */
  constructor(canvas, codecs, on = {}) {
    this.canvas = canvas;
    this.ctx = canvas.getContext("2d", { alpha: false });
    this.codecs = codecs;
    this.on = on;
    this.width = 0;
    this.height = 0;
    this.drawn = 0; // frames that reached the canvas
    this.moves = 0; // moves of the picture drawn (RawFrame.copies: a scroll)
    this.redraws = 0; // raw pictures drawn in parts over another codec's (raw_over)
    this.kept = 0; // keyframe parts drawn over the picture shown (raw_keep)
    this.repeats = 0; // keyframes of the picture shown, skipped (RawFrame.repeat)
    this.received = null; // the last frame's sequence
    this.inStep = false; // every frame since a raw keyframe came in order and drew whole
    this.pictureCodec = ""; // the codec that drew the canvas last
    this.scratch = null; // what a move and a scaled picture go through (scratchOf)
    this.scratchCtx = null;
    this.bytes = 0; // encoded bytes since the caller last cleared it
    this.codecFrames = {}; // frames received, by codec
    this.scaled = 0; // decoded pictures drawn larger than they were coded (SCALED)
    this.decoder = null;
    this.decoderCodec = "";
    this.codedDisplay = null;
    this.plugin = null;
    this.pluginCodec = "";
    this.pluginQueue = Promise.resolve();
    this.needKey = true;
    this.decoding = []; // [timestamp, done] of the frames in the video decoder, in order
    this.drawing = Promise.resolve(); // raw frames and decoded pictures, drawn in turn
    this.stream = 0; // counts resets: what was in line before one is not drawn
    this.rgba = null; // the ImageData a decoded picture is converted into (put)
  }

  /** The raw frames' Zstandard decoder: "wasm", or "js" where WebAssembly is refused. */
  get zstd() {
    return zstdDecoder;
  }

  /** Draw one VideoFrame message; returns its codec's wire name ("" for none). `done` is
   * called once the frame is on the canvas or dropped: a frame in a video decoder or a
   * plugin's is drawn later, and the viewer acknowledges it then (CONTRACT "Acks"), so
   * the agent's flow window bounds the frames waiting in this page too, and a page that
   * falls behind gets fewer, newer frames instead of a queue. */
  frame(frame, done = () => {}) {
    const { case: slot, value } = frame.encoding;
    // A slot whose message names its codec (a plugin frame) goes by that name.
    const codec = typeof value?.codec === "string" ? value.codec : slot;
    if (!codec) {
      done();
      return "";
    }
    this.codecFrames[codec] = (this.codecFrames[codec] || 0) + 1;
    const sequence = toNumber(frame.sequence);
    const follows = this.received !== null && sequence === this.received + 1;
    this.received = sequence;
    if (codec === "raw") {
      this.draw(() => this.raw(value, follows), done);
      return codec;
    }
    // The agent repeats a keyframe only once its raw frames have drawn the whole picture
    // again: frames of another codec before them matter only if some never came.
    if (!follows) this.draw(() => { this.inStep = false; });
    if (codec in WEBCODECS && this.codecs.names.includes(codec)) {
      this.video(codec, value, done);
    } else if (this.codecs.plugins.has(codec)) {
      this.pluginFrame(codec, value, done);
    } else {
      this.on.notice?.(`This page cannot decode ${codec} frames; choose another codec.`);
      done();
    }
    return codec;
  }

  /** The video decoder drew the frame of `timestamp`: it and those before it are done
   * (all of them, with no timestamp: the decoder is gone, and nothing more comes out).
   * Matched by value, not order: a new encoder at the agent starts its timestamps over. */
  videoDone(timestamp) {
    const found = this.decoding.findIndex(([at]) => at === timestamp);
    const done = timestamp === undefined ? this.decoding.length : found + 1 || 1;
    for (const [, callback] of this.decoding.splice(0, done)) callback();
  }

  /** Forget every decoder's state: the next picture must start with a keyframe (a new
   * stream, or a player seeking). */
  reset() {
    this.decoder?.close();
    this.decoder = null;
    this.decoderCodec = "";
    this.videoDone();
    this.plugin?.close?.();
    this.plugin = null;
    this.pluginCodec = "";
    this.pluginQueue = Promise.resolve();
    this.stream += 1;
    this.received = null;
    this.inStep = false;
    this.needKey = true;
    this.pictureCodec = "";
  }

  /** Draw in turn after what is being drawn (a decoded picture's conversion takes a
   * while), unless the screen was reset meanwhile, then call `done`; the first in line is
   * drawn before the page next paints. */
  draw(drawing, done = () => {}) {
    const stream = this.stream;
    this.drawing = this.drawing.then(() => (stream === this.stream ? drawing() : undefined))
      .catch((error) => console.warn("frame not drawn", error)).finally(done);
  }

  /** A decoded picture onto the canvas, as RGBA the browser converts it to (copyTo), not
   * drawn as a VideoFrame: where the CPU draws the canvas (no GPU), drawImage took twice
   * the page's CPU in bench/browser.py's full screen, and a page that falls behind gets
   * frames late. A picture coded smaller than the display (the agent was short of CPU:
   * SCALED) is converted at its own size and scaled up from the scratch canvas, each of
   * its pixels drawn as a block: 1 ms a 1080p picture where the CPU draws the canvas,
   * against 6 ms smoothed (motion, until the exact picture comes back). drawImage where
   * the picture cannot be copied. */
  async put(frame, width, height) {
    this.resize(width, height);
    const scaled = frame.displayWidth < width || frame.displayHeight < height;
    const [w, h] = scaled ? [frame.displayWidth, frame.displayHeight] : [width, height];
    if (this.rgba?.width !== w || this.rgba?.height !== h) this.rgba = new ImageData(w, h);
    try {
      await frame.copyTo(this.rgba.data, { rect: { x: 0, y: 0, width: w, height: h },
        format: "RGBA" });
      if (!scaled) {
        this.ctx.putImageData(this.rgba, 0, 0);
        return;
      }
      this.scaled += 1;
      this.scratchOf(w, h).putImageData(this.rgba, 0, 0);
      this.ctx.imageSmoothingEnabled = false; // (a canvas's size change resets it)
      this.ctx.drawImage(this.scratch, 0, 0, w, h, 0, 0, width, height);
    } catch {
      this.ctx.drawImage(frame, 0, 0, w, h, 0, 0, width, height);
    }
  }

  /** Resolves once every frame given so far is drawn (or dropped). */
  async settle() {
    if (this.decoder && this.decoder.state === "configured") {
      try {
        await this.decoder.flush();
      } catch {
        // reset or closed meanwhile: nothing more to draw
      }
    }
    await this.drawing;
    await this.pluginQueue;
  }

  resize(width, height) {
    if (this.width === width && this.height === height) return;
    this.width = width;
    this.height = height;
    this.canvas.width = width;
    this.canvas.height = height;
  }

  shown() {
    this.drawn += 1;
    this.on.shown?.();
  }

  /** A whole picture of `codec` reached the canvas: raw frames may draw over it
   * (after motion, the agent sends the lossless picture back in parts: raw_over). */
  pictured(codec) {
    this.pictureCodec = codec;
    this.needKey = false;
  }

  /** BGRA rows as an opaque RGBA ImageData, a pixel at a time as one 32-bit word (signed:
   * V8 keeps those small integers, where unsigned words past 2^31 become doubles), about
   * twice as fast as a byte at a time. */
  bgraToImage(bytes, offset, width, height) {
    const image = this.ctx.createImageData(width, height);
    const out = new Int32Array(image.data.buffer);
    let start = bytes.byteOffset + offset;
    let buffer = bytes.buffer;
    if (start % 4) { // a frame sent uncompressed sits anywhere in its message
      buffer = bytes.slice(offset, offset + out.length * 4).buffer;
      start = 0;
    }
    const pixels = new Int32Array(buffer, start, out.length);
    // Words in the byte order of every browser's platform (little-endian): BGRA is ARGB.
    for (let i = 0; i < out.length; i++) {
      const p = pixels[i];
      out[i] = (p & 0x0000ff00) | ((p >>> 16) & 0xff) | ((p & 0xff) << 16) | 0xff000000;
    }
    return image;
  }

  /** Draw a raw frame, which `follows` the last one received. A keyframe of the picture
   * the frame before it left (`repeat`: the one due every 10 s) is skipped while every
   * frame since a raw keyframe came in order and drew whole: decoding a 1080p one held
   * a typed word some 20 ms. */
  raw(raw, follows) {
    this.bytes += raw.data.length;
    const inStep = this.inStep && follows;
    this.inStep = false; // until this frame is drawn whole
    if (raw.isKeyframe && raw.repeat && inStep && !this.needKey
      && this.width === raw.width && this.height === raw.height) {
      this.repeats += 1;
      this.inStep = true;
      return;
    }
    const size = raw.isKeyframe ? raw.width * raw.height * 4
      : raw.dirtyRects.reduce((sum, r) => sum + r.width * r.height * 4, 0);
    let bytes;
    try {
      bytes = size === 0 ? new Uint8Array(0) // moves only (raw_copy)
        : raw.compressed ? decompress(raw.data, size) : raw.data;
    } catch (error) {
      console.warn("bad zstd frame", error);
      return;
    }
    if (bytes.length !== size) return; // the rectangles' pixels, exactly (CONTRACT)
    if (raw.isKeyframe) {
      // A keyframe part (raw_keep): only its top rows are the screen, and a picture of
      // its size stays below them until the rest comes, where the placeholder would blank
      // it for the second a slow link takes.
      const rows = raw.rows > 0 && raw.rows < raw.height && !this.needKey &&
        this.width === raw.width && this.height === raw.height ? raw.rows : raw.height;
      this.resize(raw.width, raw.height);
      this.ctx.putImageData(this.bgraToImage(bytes, 0, raw.width, rows), 0, 0);
      if (rows < raw.height) this.kept += 1;
      this.pictured("raw");
      this.shown();
      this.inStep = rows === raw.height || inStep; // a part keeps the picture below it
      return;
    }
    if (this.needKey) return;
    const inside = (x, y, width, height) => x >= 0 && y >= 0 && width > 0 && height > 0 &&
      x + width <= this.width && y + height <= this.height;
    // Moves of what the canvas shows (a scroll), in order.
    const copies = raw.copies || [];
    if (!copies.every((c) => inside(c.x, c.y, c.width, c.height) &&
      inside(c.srcX, c.srcY, c.width, c.height))) return;
    if (this.pictureCodec !== "raw") {
      this.redraws += 1;
      this.pictureCodec = "raw";
    }
    for (const c of copies) this.move(c);
    let offset = 0;
    for (const r of raw.dirtyRects) {
      const size = r.width * r.height * 4;
      if (!inside(r.x, r.y, r.width, r.height) || offset + size > bytes.length) return;
      this.ctx.putImageData(this.bgraToImage(bytes, offset, r.width, r.height), r.x, r.y);
      offset += size;
    }
    this.shown();
    this.inStep = inStep;
  }

  /** One move of the picture, through a scratch canvas: drawing a canvas onto itself
   * copies all of it first (7 ms for a 1080p canvas in Chromium, against under 2 ms
   * this way for a scrolled page). */
  move(c) {
    this.scratchOf(c.width, c.height).drawImage(this.canvas, c.srcX, c.srcY, c.width,
      c.height, 0, 0, c.width, c.height);
    this.ctx.drawImage(this.scratch, 0, 0, c.width, c.height, c.x, c.y, c.width, c.height);
    this.moves += 1;
  }

  /** The scratch canvas's context, the canvas at least `width` x `height`. */
  scratchOf(width, height) {
    if (!this.scratch) {
      this.scratch = typeof OffscreenCanvas === "function" ? new OffscreenCanvas(1, 1)
        : document.createElement("canvas");
      this.scratchCtx = this.scratch.getContext("2d", { alpha: false });
    }
    if (this.scratch.width < width || this.scratch.height < height) {
      this.scratch.width = Math.max(this.scratch.width, width);
      this.scratch.height = Math.max(this.scratch.height, height);
    }
    return this.scratchCtx;
  }

  video(kind, chunk, done) {
    this.bytes += chunk.data.length;
    if (!("VideoDecoder" in window)) {
      done();
      return this.on.cannotDecode?.();
    }
    if (this.decoderCodec !== kind) {
      if (!chunk.keyframe) return done();
      this.decoder?.close();
      this.videoDone();
      const decoder = new VideoDecoder({
        output: (frame) => {
          // A frame that states the display's size may be coded larger (AV1's, an odd
          // size in H.264): crop; or smaller (scaled): draw it larger (put), at most
          // MOST_UPSCALE times each way, so a forged size cannot take the page's memory.
          const stated = this.codedDisplay;
          const believed = stated && stated.width <= MOST_UPSCALE * frame.displayWidth &&
            stated.height <= MOST_UPSCALE * frame.displayHeight;
          const width = believed ? stated.width : frame.displayWidth;
          const height = believed ? stated.height : frame.displayHeight;
          const timestamp = frame.timestamp;
          this.draw(async () => {
            if (decoder !== this.decoder) return; // replaced since
            await this.put(frame, width, height);
            this.pictured(kind);
            this.shown();
            if (decoder === this.decoder) this.videoDone(timestamp);
          }, () => frame.close());
        },
        error: (error) => {
          if (decoder !== this.decoder) return; // one this screen already let go
          console.warn("decoder error", error);
          this.decoderCodec = "";
          this.videoDone();
          this.on.cannotDecode?.();
        },
      });
      this.decoder = decoder;
      try {
        decoder.configure(webCodecsConfig(kind));
      } catch (error) {
        done();
        return this.on.cannotDecode?.();
      }
      this.decoderCodec = kind;
    }
    if (chunk.keyframe) { // the display's size, where the frame states it
      this.codedDisplay = chunk.width && chunk.height
        ? { width: chunk.width, height: chunk.height }
        : SIZE_SEI.has(kind) ? statedSize(chunk.data) : null;
    }
    const timestamp = toNumber(chunk.pts);
    this.decoding.push([timestamp, done]);
    try {
      this.decoder.decode(new EncodedVideoChunk({
        type: chunk.keyframe ? "key" : "delta", timestamp, data: chunk.data,
      }));
    } catch (error) {
      console.warn("undecodable frame", error);
      this.decoding.pop(); // this frame's alone: those before it are still in the decoder
      done();
    }
  }

  /** A codec plugin's frame, through its browser decoder; pieces are drawn in frame order. */
  pluginFrame(codec, frame, done) {
    this.bytes += frame.data.length;
    if (this.pluginCodec !== codec) {
      if (!frame.keyframe) return done();
      this.plugin?.close?.();
      this.plugin = this.codecs.plugins.get(codec).createDecoder();
      this.pluginCodec = codec;
    }
    const decoder = this.plugin;
    const input = {
      data: frame.data, keyframe: frame.keyframe, width: frame.width, height: frame.height,
      rects: frame.dirtyRects.map(({ x, y, width, height }) => ({ x, y, width, height })),
      pts: toNumber(frame.pts),
    };
    const decoded = Promise.resolve().then(() => decoder.decode(input)); // in arrival order
    this.pluginQueue = this.pluginQueue.then(async () => {
      let pieces;
      try {
        pieces = await decoded;
      } catch (error) {
        console.warn(`undecodable ${codec} frame`, error);
        return;
      }
      if (decoder !== this.plugin || !pieces) return;
      if (input.keyframe) {
        const first = pieces[0]?.image;
        this.resize(input.width || first?.width || this.width,
          input.height || first?.height || this.height);
      }
      for (const { x, y, image } of pieces) {
        if (image instanceof ImageData) this.ctx.putImageData(image, x, y);
        else this.ctx.drawImage(image, x, y);
        image.close?.();
      }
      if (input.keyframe) this.pictured(codec);
      this.shown();
    }).catch((error) => console.warn(`${codec} frame not drawn`, error)).finally(done);
  }
}
