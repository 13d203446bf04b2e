import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { encode, profileCodec } from "@zarr-stream/codecs";
import { checkTiling } from "@zarr-stream/spec";
import fc from "fast-check";
import { splitGrid } from "../src/demo/plan.js";
import { bloscClaim, zstdClaim } from "../src/frame-header.js";
import { Progress } from "../src/progress.js";

describe("demo region split", () => {
  it("§4 every split tiles the grid with shard-aligned, disjoint regions (fast-check)", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 40 }),
        fc.integer({ min: 1, max: 80 }),
        fc.integer({ min: 1, max: 12 }),
        (nLat, nLon, writers) => {
          let split: ReturnType<typeof splitGrid>;
          try {
            split = splitGrid({ nLat, nLon }, writers);
          } catch {
            // a refusal is only right when not even an exact 1 x N or N x 1 split exists
            assert.ok(
              nLat % writers !== 0 && nLon % writers !== 0,
              `refused ${writers} writers on ${nLat}x${nLon}`,
            );
            return true;
          }
          assert.equal(split.regions.length, writers);
          const cover = new Uint8Array(nLat * nLon);
          for (const r of split.regions) {
            const [a0, a1] = r.lat!;
            const [o0, o1] = r.lon!;
            assert.ok(a0 < a1 && o0 < o1, `empty region ${JSON.stringify(r)}`);
            for (const [[s, e], shard, len] of [
              [r.lat!, split.shardLat, nLat],
              [r.lon!, split.shardLon, nLon],
            ] as const) {
              assert.equal(s % shard, 0);
              assert.ok(e % shard === 0 || e === len);
            }
            for (let i = a0; i < a1; i++) for (let j = o0; j < o1; j++) cover[i * nLon + j]! += 1;
          }
          assert.ok(cover.every((c) => c === 1));
          return true;
        },
      ),
      { numRuns: 300 },
    );
  });

  it("§4 the default 4 writers on 180x360 are a 2x2 split of 90x180 shards, and the spec's tiling check agrees", () => {
    const s = splitGrid({ nLat: 180, nLon: 360 }, 4);
    assert.deepEqual([s.nLat, s.nLon, s.shardLat, s.shardLon], [2, 2, 90, 180]);
    const dims: [string, number][] = [
      ["time", 0],
      ["lat", 180],
      ["lon", 360],
    ];
    assert.doesNotThrow(() =>
      checkTiling(
        s.regions.map((region, writer) => ({ writer, region })),
        dims,
        ["lat", "lon"],
      ),
    );
    assert.throws(() => splitGrid({ nLat: 4, nLon: 4 }, 7), /cannot split/);
  });
});

describe("frame headers", () => {
  it("§1 blosc and zstd frames state the decoded length verify checks", async () => {
    const raw = new Uint8Array(4096).map((_, i) => (i * 7) % 13);
    const blosc = await encode(profileCodec("diagnostic", "float32"), raw);
    assert.deepEqual(bloscClaim(blosc), { ok: true, size: 4096 });
    const truncated = bloscClaim(blosc.subarray(0, blosc.length - 1));
    assert.equal(truncated.ok, false);
    const zstd = await encode(profileCodec("wasm", "float32"), raw);
    assert.deepEqual(zstdClaim(zstd), { ok: true, size: 4096 });
    const bad = zstd.slice();
    bad[0] = 0;
    assert.equal(zstdClaim(bad).ok, false);
  });
});

describe("progress", () => {
  function sink(isTTY: boolean) {
    let text = "";
    return {
      stream: {
        isTTY,
        columns: 80,
        write: (s: string) => {
          text += s;
          return true;
        },
      } as unknown as NodeJS.WritableStream,
      text: () => text,
    };
  }

  it("draws a bar on a TTY and only plain lines otherwise", () => {
    const tty = sink(true);
    const p = new Progress(tty.stream, "writing", 4);
    for (let i = 0; i < 4; i++) p.tick();
    p.note("commit 1");
    p.finish();
    assert.ok(tty.text().includes("\r\u001b[Kwriting [####"), JSON.stringify(tty.text()));
    assert.match(tty.text(), /\] 4\/4/);
    const plain = sink(false);
    const q = new Progress(plain.stream, "writing", 4, true);
    for (let i = 0; i < 4; i++) q.tick();
    q.note("commit 1");
    assert.ok(!plain.text().includes("\r"));
    assert.equal(plain.text(), "writing: 1/4\nwriting: 2/4\nwriting: 3/4\nwriting: 4/4\ncommit 1\n");
  });
});
