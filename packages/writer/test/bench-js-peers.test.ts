import assert from "node:assert/strict";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";

// The bench is plain ESM outside src/ (a tool, not part of the package's API): import it by path from
// dist/test/. Its Chromium side needs the viewer built (turbo.json: writer's test depends on viewer's build).
const benchDir = new URL("../../bench/", import.meta.url);
const jsPeersUrl = new URL("js-peers.mjs", benchDir).href;
const harnessUrl = new URL("harness.mjs", benchDir).href;
const reportUrl = new URL("report.mjs", benchDir).href;
const workloadUrl = new URL("workload.mjs", benchDir).href;

const isPositive = (x: unknown) => typeof x === "number" && Number.isFinite(x) && x > 0;

describe("the JavaScript-peers bench (js-peers.mjs)", () => {
  it("reads one store by zarr-stream and by zarrita.js in Node and in Chromium, checks the record box, and reports ratios", async () => {
    const { CHROMIUM } = await import(jsPeersUrl);
    const { runBench } = await import(harnessUrl);
    const { formatReport } = await import(reportUrl);
    const { quickWorkload } = await import(workloadUrl);
    // Outside CI a machine without chromium measures Node only; under CI=true the launch must succeed.
    const browser = existsSync(CHROMIUM) || process.env.CI === "true";
    const dir = mkdtempSync(join(tmpdir(), "zs-js-peers-test-"));
    try {
      const wl = { ...quickWorkload(), records: 4, shard: [2, 24, 96], read_record: 3, warm_reps: 1 };
      // Through the bench's command-line path (--js-peers --only js-peers --no-scaling): no other contender.
      const bench = await runBench({
        quick: true,
        workload: wl,
        rounds: 1,
        workDir: dir,
        only: ["js-peers"],
        scaling: false,
        jsPeers: { browser },
        log: () => {},
      });
      assert.equal(bench.contenders["zarr-stream"].error, "not run");
      const out = bench.js_peers;
      assert.equal(out.pairs, 1);
      const places = browser ? ["node", "chromium"] : ["node"];
      for (const where of places) {
        const s = out[where];
        assert.equal(s?.error, undefined, `${where}: ${s?.error}`);
        for (const who of ["ours", "zarrita"])
          for (const key of ["first_record_ms", "read_record_ms", "read_all_MBps"])
            assert.ok(isPositive(s[who][key]), `${where}.${who}.${key} = ${s[who][key]}`);
        assert.equal(s.ours.turns, 1);
        assert.ok(
          Math.abs(s.ratios.read_all - s.ours.read_all_MBps / s.zarrita.read_all_MBps) < 1e-9,
          JSON.stringify(s.ratios),
        );
        assert.ok(isPositive(s.ratios.read_record) && isPositive(s.ratios.first_record));
      }
      assert.equal(out.node.ours.backend, "native");
      if (!browser) assert.equal(out.chromium, undefined);
      const text = formatReport(bench);
      assert.match(text, /node +zarr-stream/);
      assert.match(text, /node +zarrita\.js/);
      assert.match(text, /node: read-all zarr-stream\/zarrita\.js \d+\.\d\dx \(>= 3x\)/);
      if (browser) {
        assert.match(text, /chromium: read-all zarr-stream\/zarrita\.js \d+\.\d\dx \(>= 2x\)/);
        assert.ok(isPositive(out.chromium.fetch_only.stored_MBps), JSON.stringify(out.chromium.fetch_only));
        assert.match(text, /chromium fetch only/);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
