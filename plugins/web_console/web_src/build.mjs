// Builds the console and viewer into remote_web_console/static (or the directory given).
// The output is committed, so running the server needs no Node.js; a test
// rebuilds from these sources and compares byte for byte.
//
// The wire code is generated here from proto/remote_support.proto by
// protoc-gen-es (run by buf, both pinned npm packages) into gen/: plain code
// over a descriptor, so nothing in the page is ever compiled from a string
// (the console's CSP forbids it). bench/web_wire measured the alternatives.
import { build } from "esbuild";
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { copyFile, mkdir, readFile, readdir, rm, writeFile } from "node:fs/promises";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const outdir = resolve(process.argv[2] ?? join(here, "..", "remote_web_console", "static"));
await mkdir(outdir, { recursive: true });

const gen = join(here, "gen");
await rm(gen, { recursive: true, force: true });
const bin = (name) => join(here, "node_modules", ".bin", name);
// The protocol definition: the repository's proto/, or the copy an sdist carries.
const inRepository = resolve(here, "..", "..", "..", "proto");
const protoDir = existsSync(join(inRepository, "remote_support.proto")) ? inRepository
  : join(here, "proto");
execFileSync(bin("buf"), ["generate", protoDir, "--template", JSON.stringify({
  version: "v2",
  plugins: [{ local: bin("protoc-gen-es"), out: gen, opt: ["target=js"] }],
})], { stdio: "inherit" });

// The raw codec's Zstandard decoder: zstd itself built to WebAssembly (zstddec, a pinned
// npm package), about three times fzstd's speed on a 1080p keyframe (11-13 ms against
// 29-35 in Chromium).
// The package fetches its module from a data: URL, which the console's connect-src
// refuses, so the module's bytes go into gen/ and src/zstd.js instantiates them.
const zstdSource = await readFile(join(here, "node_modules", "zstddec", "dist", "zstddec.mjs"),
  "utf8");
const zstdModules = [...zstdSource.matchAll(/\bconst wasm = "([A-Za-z0-9+/=]+)";/g)];
if (zstdModules.length !== 1) {
  throw new Error(`zstddec: found ${zstdModules.length} WebAssembly modules, not 1: ` +
    "check how its new version carries the module");
}
const zstdLicense = await readFile(join(here, "node_modules", "zstddec", "LICENSE"), "utf8");
await writeFile(join(gen, "zstd_wasm.js"), `/*! zstd's decoder as WebAssembly, from zstddec:\n${
  zstdLicense.replaceAll("*/", "* /")}*/\nexport default "${zstdModules[0][1]}";\n`);

// xterm.js (the backstage terminal) writes its theme and dimension rules into <style>
// elements, and truecolor cells into style attributes: under the console's CSP
// (style-src 'self', no 'unsafe-inline') both are refused. Its <style> elements become
// <xterm-style>, whose text goes into a constructed, adopted stylesheet (src/cspstyle.js),
// and its style attributes the element's CSSOM style, which the CSP allows. Each rewrite
// must match exactly as often as below, so a new xterm.js version that changes them
// fails the build instead of the page.
const XTERM_REWRITES = [
  [/createElement\("style"\)/g, 'createElement("xterm-style")', 3],
  [/(\w+)\.setAttribute\("style",`\$\{\1\.getAttribute\("style"\)\|\|""\}\$\{(\w+)\};`\)/g,
    "$1.style.cssText+=`${$2};`", 1],
];
const cspSafeXterm = {
  name: "csp-safe-xterm",
  setup(b) {
    b.onLoad({ filter: /[\\/]@xterm[\\/]xterm[\\/]lib[\\/]xterm\.mjs$/ }, async (args) => {
      let contents = await readFile(args.path, "utf8");
      for (const [pattern, replacement, expected] of XTERM_REWRITES) {
        const found = contents.match(pattern)?.length ?? 0;
        if (found !== expected) {
          throw new Error(`xterm.js: ${pattern} matched ${found} times, not ${expected}: ` +
            "check its inline styles against the console's CSP again");
        }
        contents = contents.replace(pattern, replacement);
      }
      return { contents, loader: "js" };
    });
  },
};

await build({
  entryPoints: [join(here, "src", "console.js"), join(here, "src", "viewer.js"),
    join(here, "src", "join.js"), join(here, "src", "terminal.js"),
    join(here, "src", "files.js"), join(here, "src", "player.js")],
  bundle: true,
  minify: true,
  format: "esm",
  target: ["chrome110", "firefox115", "safari16"],
  outdir,
  legalComments: "eof",
  logLevel: "warning",
  plugins: [cspSafeXterm],
});
await copyFile(join(here, "node_modules", "@xterm", "xterm", "css", "xterm.css"),
  join(outdir, "xterm.css"));

for (const name of await readdir(join(here, "src"))) {
  if (/\.(html|css|svg)$/.test(name)) {
    await copyFile(join(here, "src", name), join(outdir, name));
  }
}
