import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { fileURLToPath } from "node:url";

/*
 * What a downstream user gets: the packed spec and codecs packages installed into a scratch project.
 * Without install scripts (npm 11 runs none it has not been told to allow; --ignore-scripts stands in for
 * that) the shipped SIMD wasm module is used; once the codecs script is approved and run, the addon,
 * built from what npm fetched plus a C compiler, with no Blosc header or library involved.
 */

const packages = fileURLToPath(new URL("../../../", import.meta.url)); // packages/
const work = mkdtempSync(join(tmpdir(), "zs-pack-"));
after(() => rmSync(work, { recursive: true, force: true }));

function npm(args: string[], cwd: string) {
  const r = spawnSync("npm", [...args, "--no-audit", "--no-fund"], {
    cwd,
    encoding: "utf8",
    // No workspace context, no inherited npm_* settings of the runner that started this test.
    env: Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("npm_"))),
  });
  assert.equal(r.status, 0, `npm ${args.join(" ")}: ${r.stderr}`);
  return r;
}

function backendIn(project: string): { backend: string; stderr: string } {
  const r = spawnSync(
    process.execPath,
    [
      "--input-type=module",
      "-e",
      'const c = await import("@zarr-stream/codecs"); console.log(c.codecBackend());',
    ],
    { cwd: project, encoding: "utf8", env: { ...process.env, ZSTREAM_CODECS: "", ZSTREAM_ADDON_PATH: "" } },
  );
  assert.equal(r.status, 0, r.stderr);
  return { backend: r.stdout.trim(), stderr: r.stderr.trim() };
}

test(
  "packed: no install scripts → SIMD wasm (one notice naming the fix); approved → native without libblosc",
  { timeout: 1_800_000 },
  () => {
    const tarballs = join(work, "tarballs");
    mkdirSync(tarballs);
    for (const p of ["spec", "codecs"]) npm(["pack", "--pack-destination", tarballs], join(packages, p));
    const files = readdirSync(tarballs);
    const tgz = (name: string) => join(tarballs, files.find((f) => f.startsWith(`zarr-stream-${name}-`))!);
    const listing = spawnSync("tar", ["tzf", tgz("codecs")], { encoding: "utf8" }).stdout;
    assert.match(listing, /package\/wasm\/zstream_codecs\.wasm/, "the SIMD wasm module ships in the package");

    const project = join(work, "project");
    mkdirSync(project);
    writeFileSync(
      join(project, "package.json"),
      JSON.stringify({
        name: "scratch",
        private: true,
        type: "module",
        dependencies: {
          "@zarr-stream/spec": `file:${tgz("spec")}`,
          "@zarr-stream/codecs": `file:${tgz("codecs")}`,
        },
      }),
    );
    npm(["install", "--prefer-offline", "--ignore-scripts"], project);
    const before = backendIn(project);
    assert.equal(before.backend, "wasm");
    assert.equal(before.stderr.split("\n").length, 1, before.stderr);
    assert.match(
      before.stderr,
      /using the SIMD wasm backend.*npm install-scripts approve @zarr-stream\/codecs/,
    );

    npm(["install-scripts", "approve", "@zarr-stream/codecs"], project);
    npm(["rebuild", "@zarr-stream/codecs"], project);
    assert.deepEqual(backendIn(project), { backend: "native", stderr: "" });

    const installed = join(project, "node_modules", "@zarr-stream", "codecs", "build", "Release");
    const ldd = spawnSync("ldd", [join(installed, "zstream_codecs.node")], { encoding: "utf8" }).stdout;
    assert.doesNotMatch(ldd, /blosc|zstd/, `the addon links no Blosc or zstd library:\n${ldd}`);
    // The compiler's dependency lists name every header each object was built from.
    const deps = spawnSync("find", [join(installed, ".deps"), "-name", "*.d"], { encoding: "utf8" })
      .stdout.trim()
      .split("\n");
    assert.ok(deps.length > 3, "the build left dependency files");
    for (const d of deps) assert.doesNotMatch(readFileSync(d, "utf8"), /blosc\.h/, `${d} uses blosc.h`);
  },
);
