// The browser decoder of the "png" codec, loaded by the console's viewer from
// /codecs/png.js (the server's own origin). A frame's data is one or more parts,
// each a 4-byte big-endian length and one PNG file: a keyframe is the whole
// display, an incremental frame one PNG per rectangle, in order.

function parts(data) {
  const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
  const found = [];
  let pos = 0;
  while (pos < data.byteLength) {
    if (pos + 4 > data.byteLength) throw new Error("png frame ends inside a part's length");
    const length = view.getUint32(pos);
    pos += 4;
    if (length > data.byteLength - pos) throw new Error("png part overruns the frame");
    found.push(data.subarray(pos, pos + length));
    pos += length;
  }
  return found;
}

export default {
  codec: "png",
  label: "PNG (lossless)",
  async supported() {
    return typeof createImageBitmap === "function";
  },
  createDecoder() {
    return {
      async decode(frame) {
        const pictures = parts(frame.data);
        const places = frame.keyframe ? [{ x: 0, y: 0 }] : frame.rects;
        if (pictures.length !== places.length) {
          throw new Error(`${pictures.length} pictures for ${places.length} places`);
        }
        return Promise.all(pictures.map(async (bytes, i) => ({
          x: places[i].x,
          y: places[i].y,
          image: await createImageBitmap(new Blob([bytes], { type: "image/png" })),
        })));
      },
      close() {},
    };
  },
};
