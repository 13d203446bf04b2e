import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { fileURLToPath } from "node:url";

/*
 * What a downstream user gets: the eight library packages, packed once, installed into a scratch project
 * that writes a store with the writer and reads it back with the reader. Without install scripts (npm 11
 * runs none it has not been told to allow; --ignore-scripts stands in for that) the shipped SIMD wasm
 * module is used; once the codecs and fileio scripts are approved and run, the addons, built from what npm fetched
 * plus a C compiler, with no Blosc header or library involved. One install per mode keeps this to a few
 * minutes: the approved mode rebuilds them in place instead of installing again.
 */

const PACKAGES = ["spec", "codecs", "fileio", "store", "shard", "reader", "controlplane", "writer"];

// The writer README's example, cut down: two writers, a commit, one record read back.
const USE_ALL = `
import { codecBackend } from "@zarr-stream/codecs";
import "@zarr-stream/controlplane";
import { fileIoBackend } from "@zarr-stream/fileio";
import { readRecord } from "@zarr-stream/reader";
import { MemoryStore } from "@zarr-stream/store";
import { ZarrStreamWriter } from "@zarr-stream/writer";
const schema = {
  dims: [["time", 0], ["lat", 4], ["lon", 6]], time_dim: "time", time_mode: "append",
  vars: [{ name: "temperature", dims: ["time", "lat", "lon"], dtype: "float64", attrs: {} }], statics: [],
  chunk_shape: { time: 1, lat: 2, lon: 3 }, shard_shape: { time: 4, lat: 2, lon: 6 }, profile: "diagnostic",
};
const store = new MemoryStore();
const owner = await ZarrStreamWriter.create(store, schema, { kind: "owner", nWriters: 2 }, { lat: [0, 2] });
const other = await ZarrStreamWriter.join(store, { kind: "contributor", id: 1 }, { lat: [2, 4] });
for (let r = 0; r < 3; r++) {
  await owner.writeRecord(3600 * r, { temperature: new Float64Array(12).fill(280 + r) });
  await other.writeRecord(3600 * r, { temperature: new Float64Array(12).fill(290 + r) });
}
const token = await other.flush();
await owner.commit([await owner.flush(), token]);
const rec = await readRecord(store, "temperature", 2, { lat: [1, 3] });
console.log(JSON.stringify({ backend: codecBackend(), fileio: fileIoBackend().backend, shape: rec.shape, data: [rec.data[0], rec.data[6]] }));
`;

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

/** Runs USE_ALL in the project: the backend codecs picked, and what the write and read-back gave. */
function runIn(project: string): { backend: string; fileio: string; stderr: string } {
  const r = spawnSync(process.execPath, ["use-all.mjs"], {
    cwd: project,
    encoding: "utf8",
    env: { ...process.env, ZSTREAM_CODECS: "", ZSTREAM_ADDON_PATH: "" },
  });
  assert.equal(r.status, 0, r.stderr);
  const out = JSON.parse(r.stdout) as { backend: string; fileio: string; shape: number[]; data: number[] };
  assert.deepEqual({ shape: out.shape, data: out.data }, { shape: [2, 6], data: [282, 292] });
  return { backend: out.backend, fileio: out.fileio, stderr: r.stderr.trim() };
}

test(
  "packed (all eight libraries): no install scripts → SIMD wasm (one notice naming the fix); approved → native without libblosc",
  { timeout: 1_800_000 },
  () => {
    const tarballs = join(work, "tarballs");
    mkdirSync(tarballs);
    for (const p of PACKAGES) npm(["pack", "--pack-destination", tarballs], join(packages, p));
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
        dependencies: Object.fromEntries(PACKAGES.map((p) => [`@zarr-stream/${p}`, `file:${tgz(p)}`])),
      }),
    );
    writeFileSync(join(project, "use-all.mjs"), USE_ALL);
    npm(["install", "--prefer-offline", "--ignore-scripts"], project);
    const before = runIn(project);
    assert.equal(before.backend, "wasm");
    assert.equal(before.fileio, "node:fs");
    assert.equal(before.stderr.split("\n").length, 1, before.stderr);
    assert.match(
      before.stderr,
      /using the SIMD wasm backend.*npm install-scripts approve @zarr-stream\/codecs/,
    );

    npm(["install-scripts", "approve", "@zarr-stream/codecs", "@zarr-stream/fileio"], project);
    npm(["rebuild", "@zarr-stream/codecs", "@zarr-stream/fileio"], project);
    assert.deepEqual(runIn(project), { backend: "native", fileio: "native", stderr: "" });

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
