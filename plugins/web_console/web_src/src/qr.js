// A QR code as SVG elements (never markup strings: the console's CSP takes no
// innerHTML), drawn by the pinned qrcode-generator package bundled here.
import qrcode from "qrcode-generator";

const SVG = "http://www.w3.org/2000/svg";

export function qrSvg(text, label) {
  const qr = qrcode(0, "M");
  qr.addData(text);
  qr.make();
  const count = qr.getModuleCount();
  const size = count + 8; // four modules of quiet zone on each side
  const svg = document.createElementNS(SVG, "svg");
  svg.setAttribute("viewBox", `0 0 ${size} ${size}`);
  svg.setAttribute("width", "176");
  svg.setAttribute("height", "176");
  svg.setAttribute("role", "img");
  svg.setAttribute("aria-label", label);
  svg.setAttribute("class", "qr");
  const back = document.createElementNS(SVG, "rect");
  for (const [k, v] of [["width", size], ["height", size], ["fill", "#fff"]]) back.setAttribute(k, v);
  svg.append(back);
  let d = "";
  for (let r = 0; r < count; r += 1) {
    for (let c = 0; c < count; c += 1) if (qr.isDark(r, c)) d += `M${c + 4} ${r + 4}h1v1h-1z`;
  }
  const path = document.createElementNS(SVG, "path");
  path.setAttribute("d", d);
  path.setAttribute("fill", "#000");
  svg.append(path);
  return svg;
}
