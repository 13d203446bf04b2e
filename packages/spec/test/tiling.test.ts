import assert from "node:assert/strict";
import { test } from "node:test";
import fc from "fast-check";
import {
  CommitError,
  checkRegionAligned,
  checkTiling,
  type Region,
  RegionNotShardAligned,
  type WriterRegion,
} from "../src/index.js";

interface Case {
  dims: [string, number][];
  shard: Record<string, number>;
  names: string[];
  regions: WriterRegion[];
}

const DIM_NAMES = ["x", "y", "z"];

/** A shard-aligned guillotine tiling: cut a random box along a random dim at a shard edge, n-1 times. */
const tilingArb: fc.Arbitrary<Case> = fc
  .record({
    axes: fc.array(
      fc.record({
        shard: fc.integer({ min: 1, max: 4 }),
        shards: fc.integer({ min: 1, max: 8 }),
        short: fc.nat(3),
      }),
      { minLength: 1, maxLength: 3 },
    ),
    cuts: fc.array(fc.record({ box: fc.nat(), dim: fc.nat(), at: fc.nat() }), { maxLength: 15 }),
  })
  .map(({ axes, cuts }) => {
    const names = DIM_NAMES.slice(0, axes.length);
    const lengths = axes.map((a) => a.shard * a.shards - (a.short % a.shard));
    const shard: Record<string, number> = { t: 1 };
    names.forEach((d, k) => {
      shard[d] = axes[k]!.shard;
    });
    let boxes: [number, number][][] = [axes.map((a) => [0, a.shards])]; // in shard units
    for (const cut of cuts) {
      const i = cut.box % boxes.length;
      const box = boxes[i]!;
      const d = cut.dim % box.length;
      const [s, t] = box[d]!;
      if (t - s < 2) continue;
      const at = s + 1 + (cut.at % (t - s - 1));
      const left = box.map((r, k) => (k === d ? ([s, at] as [number, number]) : r));
      const right = box.map((r, k) => (k === d ? ([at, t] as [number, number]) : r));
      boxes = [...boxes.slice(0, i), left, right, ...boxes.slice(i + 1)];
    }
    const regions = boxes.map((box, writer) => {
      const region: Region = {};
      names.forEach((d, k) => {
        const [s, t] = box[k]!;
        region[d] = [s * axes[k]!.shard, t === axes[k]!.shards ? lengths[k]! : t * axes[k]!.shard];
      });
      return { writer, region };
    });
    const dims: [string, number][] = [["t", 0], ...names.map((d, k): [string, number] => [d, lengths[k]!])];
    return { dims, shard, names, regions };
  });

function boxesOverlap(a: Region, b: Region, names: string[]): boolean {
  return names.every((d) => a[d]![0] < b[d]![1] && b[d]![0] < a[d]![1]);
}

test("§5.3 random shard-aligned tilings (1–3 dims, 1–16 writers) are accepted", () => {
  fc.assert(
    fc.property(tilingArb, (c) => {
      for (const { region } of c.regions) checkRegionAligned(region, c.dims, c.shard);
      checkTiling(c.regions, c.dims, c.names);
    }),
    { numRuns: 300 },
  );
});

test("§5.3 commit refuses a gap: removing one region names a cell inside it", () => {
  fc.assert(
    fc.property(tilingArb, fc.nat(), (c, pick) => {
      const gone = c.regions[pick % c.regions.length]!;
      const rest = c.regions.filter((r) => r !== gone);
      let caught: unknown;
      try {
        checkTiling(rest, c.dims, c.names);
      } catch (e) {
        caught = e;
      }
      assert.ok(caught instanceof CommitError && caught.reason === "gap", String(caught));
      const cell = JSON.parse(
        caught.message.slice(caught.message.indexOf("{"), caught.message.indexOf("}") + 1),
      );
      for (const d of c.names) {
        assert.ok(cell[d][0] >= gone.region[d]![0] && cell[d][1] <= gone.region[d]![1], caught.message);
      }
      for (const w of caught.writers) assert.notEqual(w, gone.writer);
    }),
    { numRuns: 300 },
  );
});

test("§5.3 commit refuses an overlap: growing a region by one shard names it and a neighbour it now covers", () => {
  fc.assert(
    fc.property(tilingArb, fc.nat(), fc.nat(), (c, pick, dimPick) => {
      const i = pick % c.regions.length;
      const grown = c.regions[i]!;
      const len = (d: string) => c.dims.find(([n]) => n === d)![1];
      const growable = c.names.filter((d) => grown.region[d]![1] < len(d));
      fc.pre(growable.length > 0);
      const d = growable[dimPick % growable.length]!;
      const [s, t] = grown.region[d]!;
      const region = { ...grown.region, [d]: [s, Math.min(t + c.shard[d]!, len(d))] as [number, number] };
      const changed = c.regions.map((r, k) => (k === i ? { writer: r.writer, region } : r));
      const victims = c.regions.filter((r, k) => k !== i && boxesOverlap(r.region, region, c.names));
      let caught: unknown;
      try {
        checkTiling(changed, c.dims, c.names);
      } catch (e) {
        caught = e;
      }
      assert.ok(caught instanceof CommitError && caught.reason === "overlap", String(caught));
      assert.equal(caught.writers.length, 2);
      assert.ok(caught.writers.includes(grown.writer), caught.message);
      const other = caught.writers.find((w) => w !== grown.writer);
      assert.ok(
        victims.some((v) => v.writer === other),
        caught.message,
      );
    }),
    { numRuns: 300 },
  );
});

test("§4 any misaligned edge raises RegionNotShardAligned naming the dim", () => {
  fc.assert(
    fc.property(tilingArb, fc.nat(), fc.nat(), fc.integer({ min: 1, max: 3 }), (c, pick, dimPick, delta) => {
      const { region } = c.regions[pick % c.regions.length]!;
      const d = c.names[dimPick % c.names.length]!;
      const size = c.shard[d]!;
      fc.pre(size > 1);
      const [s, t] = region[d]!;
      const shift = 1 + (delta % (size - 1));
      const bad = { ...region, [d]: s + shift < t ? [s + shift, t] : [s, t - shift] } as Region;
      fc.pre(bad[d]![0] < bad[d]![1] && bad[d]![1] % size !== 0);
      assert.throws(
        () => checkRegionAligned(bad, c.dims, c.shard),
        (e: RegionNotShardAligned) => e instanceof RegionNotShardAligned && e.dim === d,
      );
    }),
    { numRuns: 300 },
  );
});

test("§5.3 tiling over no region dims: one writer covers, two overlap", () => {
  const dims: [string, number][] = [
    ["t", 0],
    ["x", 4],
  ];
  checkTiling([{ writer: 0, region: {} }], dims, []);
  assert.throws(
    () =>
      checkTiling(
        [
          { writer: 0, region: {} },
          { writer: 1, region: {} },
        ],
        dims,
        [],
      ),
    (e: CommitError) => e.reason === "overlap" && e.writers.join() === "0,1",
  );
});

function grid(perDim: number[], shardSize: number): Case {
  const names = DIM_NAMES.slice(0, perDim.length);
  const dims: [string, number][] = [
    ["t", 0],
    ...names.map((d, k): [string, number] => [d, perDim[k]! * shardSize]),
  ];
  const shard: Record<string, number> = { t: 1 };
  for (const d of names) shard[d] = shardSize;
  const regions: WriterRegion[] = [];
  const total = perDim.reduce((a, b) => a * b, 1);
  for (let w = 0; w < total; w++) {
    const region: Region = {};
    let rest = w;
    names.forEach((d, k) => {
      const i = rest % perDim[k]!;
      rest = Math.floor(rest / perDim[k]!);
      region[d] = [i * shardSize, (i + 1) * shardSize];
    });
    regions.push({ writer: w, region });
  }
  return { dims, shard, names, regions };
}

test("§5.3 4096-writer tilings are checked in well under a second (1, 2 and 3 region dims)", () => {
  for (const shape of [[4096], [64, 64], [16, 16, 16]]) {
    const c = grid(shape, 2);
    const started = performance.now();
    checkTiling(c.regions, c.dims, c.names);
    const ms = performance.now() - started;
    assert.ok(ms < 1000, `${shape.join("x")}: ${ms} ms`);
    // a single-cell gap in the middle is found and located
    const without = c.regions.filter((r) => r.writer !== 2049);
    const started2 = performance.now();
    assert.throws(
      () => checkTiling(without, c.dims, c.names),
      (e: CommitError) => e.reason === "gap",
    );
    assert.ok(performance.now() - started2 < 1000);
  }
});
