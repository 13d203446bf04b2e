// One reader of the JavaScript-peers bench in headless Chromium, under the page's CPU profiler:
//   node bench/profile-js-peers.mjs WORKLOAD.json STORE_DIR [ours|zarrita] [record|all] [N] [OUT.cpuprofile]
// (STORE_DIR from profile-write.mjs.) Prints the read times and the functions with the most self time;
// the .cpuprofile opens in Chrome's DevTools (Performance) or speedscope.
import { readFileSync, writeFileSync } from "node:fs";
import { openBenchPage } from "./js-peers.mjs";

const [wlFile, dir, who = "ours", what = "record", n = "20", outFile] = process.argv.slice(2);
const wl = JSON.parse(readFileSync(wlFile, "utf8"));
const { page, close } = await openBenchPage(wl, dir);
try {
  // One untimed pass first: the codecs' wasm compiled, the page's caches filled.
  await page.evaluate(([w, k]) => globalThis.jsPeers.repeat(w, k, 1), [who, what]);
  const cdp = await page.context().newCDPSession(page);
  await cdp.send("Profiler.enable");
  await cdp.send("Profiler.setSamplingInterval", { interval: 200 });
  await cdp.send("Profiler.start");
  const times = await page.evaluate(
    ([w, k, m]) => globalThis.jsPeers.repeat(w, k, m),
    [who, what, Number(n)],
  );
  const { profile } = await cdp.send("Profiler.stop");
  if (outFile) writeFileSync(outFile, JSON.stringify(profile));
  const sorted = [...times].sort((a, b) => a - b);
  console.log(
    `${who} ${what} x${n}: min ${sorted[0].toFixed(2)} ms, median ${sorted[sorted.length >> 1].toFixed(2)} ms`,
  );
  // Self time per function: each sample is charged to the node it landed on.
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const self = new Map();
  const dt = profile.timeDeltas;
  profile.samples.forEach((id, i) => {
    const f = byId.get(id).callFrame;
    const key = `${f.functionName || "(anonymous)"} ${f.url.split("/").pop()}:${f.lineNumber + 1}`;
    self.set(key, (self.get(key) ?? 0) + (dt[i] ?? 0) / 1000);
  });
  const total = [...self.values()].reduce((a, b) => a + b, 0);
  for (const [k, ms] of [...self].sort((a, b) => b[1] - a[1]).slice(0, 25))
    console.log(`${((100 * ms) / total).toFixed(1).padStart(5)}%  ${ms.toFixed(1).padStart(8)} ms  ${k}`);
} finally {
  await close();
}
