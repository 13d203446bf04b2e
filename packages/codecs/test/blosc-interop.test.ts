import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { fileURLToPath } from "node:url";
import { type CodecSpec, decode, decodeBoxes, encode, setCodecBackend } from "@zarr-stream/codecs";
import { findPython } from "@zarr-stream/test-support/python";
import { BACKENDS, randomBytes, smoothBytes } from "./helpers.js";

/*
 * Bitwise interoperability with c-blosc 1.x, through numcodecs' build of it in the repository's venv:
 * our frames must decode there to the original bytes, and c-blosc's frames (every shuffle mode, type
 * sizes 1-16, odd lengths, stored blocks, memcpyed frames, split and unsplit blocks, forced block sizes)
 * must decode here, on every backend, whole (decode) and into a box of a larger target (decodeBoxes).
 */

const python = findPython({ modules: ["numcodecs"] });
const { skip } = python;
const PEER = fileURLToPath(new URL("../../test/python/cblosc.py", import.meta.url));
const dir = mkdtempSync(join(tmpdir(), "zs-blosc-interop-"));
after(() => rmSync(dir, { recursive: true, force: true }));

interface Job {
  op: "compress" | "decompress";
  in: string;
  out: string;
  cname?: string;
  clevel?: number;
  shuffle?: number;
  typesize?: number;
  blocksize?: number;
}

/** Runs jobs in one c-blosc process; env reaches c-blosc (BLOSC_SPLITMODE). */
function cblosc(jobs: Job[], env: Record<string, string> = {}): void {
  const file = join(dir, `jobs-${Math.random().toString(36).slice(2)}.json`);
  writeFileSync(file, JSON.stringify(jobs));
  const res = spawnSync(python.require(), [PEER, file], {
    encoding: "utf8",
    env: { ...process.env, ...env },
    maxBuffer: 1 << 24,
  });
  assert.equal(res.status, 0, `cblosc.py failed: ${res.stderr}`);
  const results = JSON.parse(res.stdout) as { ok?: true; error?: string }[];
  for (const [i, r] of results.entries())
    assert.ok(r.ok, `c-blosc job ${JSON.stringify(jobs[i])}: ${r.error}`);
}

/** Lengths around every boundary the format has: empty, below/at 128, odd, one block, blocks + leftover. */
const LENGTHS = [0, 1, 7, 127, 128, 129, 1000, 4099, 32767, 32768, 65537, 300001];

function dataFor(len: number, typesize: number, seed: number): Uint8Array {
  // Smooth bytes compress; the odd seeds add incompressible chunks (stored blocks, memcpyed frames).
  return seed % 3 === 2 ? randomBytes(len, seed + typesize) : smoothBytes(len, seed * 17 + typesize);
}

interface Case {
  name: string;
  data: Uint8Array;
  spec: CodecSpec & { kind: "blosc" };
}

function ourCases(): Case[] {
  const cases: Case[] = [];
  let seed = 0;
  for (const typesize of [1, 2, 3, 4, 5, 7, 8, 12, 16, 17, 255]) {
    for (const shuffle of [0, 1, 2] as const) {
      for (const len of LENGTHS) {
        const clevel = seed % 10;
        seed++;
        if (len > 70000 && seed % 4 !== 0) continue; // the big ones cost time; a quarter of them suffices
        cases.push({
          name: `typesize ${typesize} shuffle ${shuffle} clevel ${clevel} length ${len}`,
          data: dataFor(len, typesize, seed),
          spec: { kind: "blosc", cname: "zstd", clevel, shuffle, typesize, blocksize: 0 },
        });
      }
    }
  }
  // The profiles' levels use blocks of 512 KiB and 1 MiB: frames of several blocks plus a leftover.
  for (const [clevel, typesize, shuffle, len] of [
    [5, 8, 1, 1_300_003],
    [7, 4, 1, 2_200_001],
    [5, 2, 2, 1_100_000],
  ] as const) {
    cases.push({
      name: `typesize ${typesize} shuffle ${shuffle} clevel ${clevel} length ${len}`,
      data: dataFor(len, typesize, len),
      spec: { kind: "blosc", cname: "zstd", clevel, shuffle, typesize, blocksize: 0 },
    });
  }
  return cases;
}

for (const backend of BACKENDS) {
  test(`blosc interop [${backend}]: our frames decode in c-blosc to the same bytes`, { skip }, async () => {
    setCodecBackend(backend);
    const cases = ourCases();
    const jobs: Job[] = [];
    for (const [i, c] of cases.entries()) {
      const frame = await encode(c.spec, c.data);
      if (c.data.length === 0) {
        // numcodecs refuses every empty frame, its own too ("error during blosc decompression: 0"), so
        // the empty frame is compared with the header c-blosc writes instead.
        const flags = [0x10, 0x11, 0x14][c.spec.shuffle]! | 0x82;
        const want = [2, 1, flags, c.spec.typesize, 0, 0, 0, 0, 1, 0, 0, 0, 16, 0, 0, 0];
        assert.deepEqual([...frame], want, `${c.name}: empty frame`);
        continue;
      }
      writeFileSync(join(dir, `ours-${backend}-${i}.blosc`), frame);
      jobs.push({
        op: "decompress",
        in: join(dir, `ours-${backend}-${i}.blosc`),
        out: join(dir, `ours-${backend}-${i}.raw`),
      });
    }
    cblosc(jobs);
    for (const [i, c] of cases.entries()) {
      if (c.data.length === 0) continue;
      const back = readFileSync(join(dir, `ours-${backend}-${i}.raw`));
      assert.ok(Buffer.compare(back, c.data) === 0, `${c.name}: c-blosc decoded other bytes`);
    }
  });
}

interface PeerCase {
  name: string;
  data: Uint8Array;
  job: Job;
  split: boolean;
}

function peerCases(): PeerCase[] {
  const cases: PeerCase[] = [];
  let seed = 0;
  for (const split of [false, true]) {
    for (let typesize = 1; typesize <= 16; typesize++) {
      for (const shuffle of [0, 1, 2]) {
        for (const len of LENGTHS) {
          seed++;
          if (len > 70000 && seed % 3 !== 0) continue;
          if (len === 0) continue; // c-blosc cannot read its own empty frames (see above)
          const clevel = seed % 10;
          // Forced block sizes put leftover blocks, split streams of odd lengths and tiny blocks in play.
          const blocksize = [0, 0, 256, 4096, 1000, 65536][seed % 6]!;
          const name = `split ${split} typesize ${typesize} shuffle ${shuffle} clevel ${clevel} blocksize ${blocksize} length ${len}`;
          const i = cases.length;
          cases.push({
            name,
            split,
            data: dataFor(len, typesize, seed),
            job: {
              op: "compress",
              in: join(dir, `peer-${i}.raw`),
              out: join(dir, `peer-${i}.blosc`),
              cname: "zstd",
              clevel,
              shuffle,
              typesize,
              blocksize,
            },
          });
        }
      }
    }
  }
  return cases;
}

/**
 * decodeBoxes of one frame into a box inside a larger target (rows, then the middle of each row: the
 * native decoder unfilters such a frame's blocks row by row into place) equals decode and a copy. The
 * chunk is [rows, cols] of the frame's type size when the length allows it (a byte-shuffled frame then
 * unshuffles straight into the target), else of single bytes (the block is unfiltered aside first).
 */
async function assertBoxDecodes(
  spec: CodecSpec,
  frame: Uint8Array,
  data: Uint8Array,
  typesize: number,
  name: string,
): Promise<void> {
  const item = data.length % typesize === 0 ? typesize : 1;
  const n = data.length / item;
  const rows = n % 4 === 0 && n >= 8 ? 4 : 1;
  const cols = n / rows;
  if (cols < 3) return;
  const [r0, c0] = [rows > 1 ? 1 : 0, 1];
  const [nr, nc] = [rows - r0, cols - 2];
  const [tr, tc] = [rows + 1, cols + 3];
  const target = new Uint8Array(tr * tc * item).fill(0xa5);
  const want = target.slice();
  for (let r = 0; r < nr; r++) {
    const from = ((r0 + r) * cols + c0) * item;
    want.set(data.subarray(from, from + nc * item), ((1 + r) * tc + 2) * item);
  }
  await decodeBoxes(
    spec,
    [frame],
    Int32Array.of(rows, cols),
    item,
    target,
    Int32Array.of(tr, tc),
    Int32Array.of(r0, c0, 1, 2, nr, nc),
  );
  assert.ok(Buffer.compare(target, want) === 0, `${name}: decodeBoxes wrote other bytes`);
}

test(
  "blosc interop: c-blosc frames decode here on every backend, split and unsplit, every shuffle",
  { skip },
  async () => {
    const cases = peerCases();
    for (const c of cases) writeFileSync(c.job.in, c.data);
    cblosc(cases.filter((c) => !c.split).map((c) => c.job));
    cblosc(
      cases.filter((c) => c.split).map((c) => c.job),
      { BLOSC_SPLITMODE: "ALWAYS" },
    );
    const flagsSeen = new Set<number>();
    for (const backend of BACKENDS) {
      setCodecBackend(backend);
      for (const c of cases) {
        const frame = new Uint8Array(readFileSync(c.job.out));
        flagsSeen.add(frame[2]! & 0x13);
        const spec: CodecSpec = {
          kind: "blosc",
          cname: "zstd",
          clevel: c.job.clevel!,
          shuffle: c.job.shuffle as 0 | 1 | 2,
          typesize: c.job.typesize!,
          blocksize: 0,
        };
        const back = await decode(spec, frame, c.data.length, c.name);
        assert.ok(Buffer.compare(back, c.data) === 0, `[${backend}] ${c.name}: decoded other bytes`);
        await assertBoxDecodes(spec, frame, c.data, c.job.typesize!, `[${backend}] ${c.name}`);
      }
    }
    // The corpus really holds split (no 0x10), unsplit (0x10) and memcpyed (0x02) frames.
    assert.ok(
      [...flagsSeen].some((f) => !(f & 0x10) && !(f & 0x02)),
      "a split frame was decoded",
    );
    assert.ok(
      [...flagsSeen].some((f) => f & 0x10 && !(f & 0x02)),
      "an unsplit frame was decoded",
    );
    assert.ok(
      [...flagsSeen].some((f) => f & 0x02),
      "a memcpyed frame was decoded",
    );
  },
);

test(
  "blosc interop: frames of inner codecs we do not implement still decode (numcodecs' wasm, per frame)",
  { skip },
  async () => {
    const data = smoothBytes(100_000);
    const jobs: Job[] = ["lz4", "blosclz", "zlib", "lz4hc"].map((cname, i) => ({
      op: "compress",
      in: join(dir, "other.raw"),
      out: join(dir, `other-${i}.blosc`),
      cname,
      clevel: 5,
      shuffle: 1,
      typesize: 8,
    }));
    writeFileSync(join(dir, "other.raw"), data);
    cblosc(jobs);
    const spec: CodecSpec = {
      kind: "blosc",
      cname: "zstd",
      clevel: 5,
      shuffle: 1,
      typesize: 8,
      blocksize: 0,
    };
    for (const backend of BACKENDS) {
      setCodecBackend(backend);
      for (const j of jobs) {
        const back = await decode(spec, new Uint8Array(readFileSync(j.out)), data.length, j.cname);
        assert.ok(Buffer.compare(back, data) === 0, `[${backend}] ${j.cname}: decoded other bytes`);
      }
    }
  },
);

test(
  "blosc interop [native]: our zstd frames match c-blosc's byte for byte at the levels where we make its choices and both zstd versions agree",
  { skip },
  async () => {
    setCodecBackend("native");
    const data = smoothBytes(1 << 20);
    writeFileSync(join(dir, "same.raw"), data);
    const params = [1, 3].flatMap((clevel) => [0, 1, 2].map((shuffle) => ({ clevel, shuffle })));
    cblosc(
      params.map((p, i) => ({
        op: "compress",
        in: join(dir, "same.raw"),
        out: join(dir, `same-${i}.blosc`),
        cname: "zstd",
        typesize: 8,
        ...p,
      })),
    );
    for (const [i, p] of params.entries()) {
      const ours = await encode(
        { kind: "blosc", cname: "zstd", typesize: 8, blocksize: 0, ...p } as CodecSpec,
        data,
      );
      const theirs = readFileSync(join(dir, `same-${i}.blosc`));
      assert.ok(Buffer.compare(ours, theirs) === 0, `clevel ${p.clevel} shuffle ${p.shuffle}: frames differ`);
    }
  },
);

test(
  "blosc interop [native]: at the profiles' levels our frames are at most 1% larger than c-blosc's",
  { skip },
  async () => {
    setCodecBackend("native");
    const data = smoothBytes(2 << 20);
    writeFileSync(join(dir, "ratio.raw"), data);
    const clevels = [5, 7];
    cblosc(
      clevels.map((clevel, i) => ({
        op: "compress",
        in: join(dir, "ratio.raw"),
        out: join(dir, `ratio-${i}.blosc`),
        cname: "zstd",
        clevel,
        shuffle: 1,
        typesize: 8,
      })),
    );
    for (const [i, clevel] of clevels.entries()) {
      const ours = await encode(
        { kind: "blosc", cname: "zstd", clevel, shuffle: 1, typesize: 8, blocksize: 0 },
        data,
      );
      const theirs = readFileSync(join(dir, `ratio-${i}.blosc`)).length;
      assert.ok(ours.length <= theirs * 1.01, `clevel ${clevel}: ${ours.length} bytes, c-blosc ${theirs}`);
    }
  },
);
