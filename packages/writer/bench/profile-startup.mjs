// A writer process's fixed costs, phase by phase from process start (issue #38): loading the store and
// writer packages, making the record pool, create, the first record, each flush and close, each as
// [wall ms, CPU ms of the whole process (every thread)]. The bench's own figures start at create.
//   node bench/profile-startup.mjs WORKLOAD.json STORE_DIR [CHECKOUT]
// CHECKOUT (default: this one) is a built checkout whose packages are loaded instead, so two builds can
// be run turn about with the same script (before/after on one machine). One JSON line on stdout.
import { readFileSync, rmSync } from "node:fs";
import { fileURLToPath, pathToFileURL } from "node:url";

const cpuMs = () => {
  const c = process.cpuUsage();
  return (c.user + c.system) / 1000;
};
const marks = [["start", performance.now(), cpuMs()]];
const mark = (name) => marks.push([name, performance.now(), cpuMs()]);

const [wlFile, dir, checkout = fileURLToPath(new URL("../../../", import.meta.url))] = process.argv.slice(2);
const dist = (pkg) => pathToFileURL(`${checkout}/packages/${pkg}/dist/src/index.js`).href;
const { FsStore } = await import(dist("store"));
mark("import store");
const { ZarrStreamWriter } = await import(dist("writer"));
mark("import writer");
const { makePool, streamSchema } = await import("./workload.mjs");
const wl = JSON.parse(readFileSync(wlFile, "utf8"));
const pool = makePool(wl);
mark("pool");
rmSync(dir, { recursive: true, force: true });
const w = await ZarrStreamWriter.create(new FsStore(dir), streamSchema(wl), { kind: "single" });
mark("create");
for (let r = 0; r < wl.records; r++) {
  // write-single.mjs's recordFor without its import, which would load this checkout's writer as well.
  await w.writeRecord(3600 * r, Object.fromEntries(wl.vars.map((v, k) => [v.name, pool[k][r % wl.pool]])));
  if (r === 0) mark("record 0");
  if ((r + 1) % wl.commit_every === 0) {
    await w.flush();
    mark(`flush after record ${r}`);
  }
}
await w.close();
mark("close");
const out = {};
for (let i = 1; i < marks.length; i++) {
  const [name, t, c] = marks[i];
  out[name] = [+(t - marks[i - 1][1]).toFixed(1), +(c - marks[i - 1][2]).toFixed(1)];
}
const last = marks.at(-1);
out.from_process_start = [+last[1].toFixed(1), +last[2].toFixed(1)];
console.log(JSON.stringify(out));
