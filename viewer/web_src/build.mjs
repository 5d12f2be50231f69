// Builds the console and viewer into remote_viewer/static (or the directory given).
// The output is committed, so running the server needs no Node.js; a test
// rebuilds from these sources and compares byte for byte.
import { build } from "esbuild";
import { copyFile, mkdir, readdir } from "node:fs/promises";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const outdir = resolve(process.argv[2] ?? join(here, "..", "remote_viewer", "static"));
await mkdir(outdir, { recursive: true });

await build({
  entryPoints: [join(here, "src", "console.js"), join(here, "src", "viewer.js")],
  bundle: true,
  minify: true,
  format: "esm",
  target: ["chrome110", "firefox115", "safari16"],
  loader: { ".proto": "text" },
  outdir,
  legalComments: "eof",
  logLevel: "warning",
});

for (const name of await readdir(join(here, "src"))) {
  if (name.endsWith(".html") || name.endsWith(".css")) {
    await copyFile(join(here, "src", name), join(outdir, name));
  }
}
