import assert from "node:assert/strict";
import { test } from "node:test";
import { type CodecSpec, decode, encode, profileCodec, setCodecBackend } from "@zarr-stream/codecs";
import { CorruptShard } from "@zarr-stream/spec";
import { loadAddon } from "../src/native-backend.js";
import { BACKENDS, smoothBytes } from "./helpers.js";

const KEY = "temp/c/3/0/1";
const DATA = smoothBytes(4096);
const BLOSC = profileCodec("diagnostic", "float64");
const ZSTD = profileCodec("wasm", "float64");

const namesKey = (e: unknown) => e instanceof CorruptShard && e.key === KEY && e.message.includes(KEY);

async function frameOf(spec: CodecSpec, data = DATA): Promise<Uint8Array> {
  setCodecBackend("native");
  return encode(spec, data);
}

/** Decodes and classifies: "corrupt" (CorruptShard naming the key), "same" or "garbage" (right length). */
async function outcome(
  spec: CodecSpec,
  frame: Uint8Array,
  n = DATA.length,
): Promise<"corrupt" | "same" | "garbage"> {
  try {
    const out = await decode(spec, frame, n, KEY);
    assert.equal(out.length, n, "an undetected corruption still has the expected length");
    return Buffer.compare(out, DATA) === 0 ? "same" : "garbage";
  } catch (e) {
    assert.ok(namesKey(e), `only CorruptShard naming the key may escape, got ${String(e)}`);
    return "corrupt";
  }
}

function withHeader(frame: Uint8Array, edit: (v: DataView) => void): Uint8Array {
  const copy = frame.slice();
  edit(new DataView(copy.buffer));
  return copy;
}

for (const backend of BACKENDS) {
  test(`corruption [${backend}]: a flipped bit anywhere throws CorruptShard(key) or decodes to the expected length`, async (t) => {
    for (const spec of [BLOSC, ZSTD, { kind: "zstd", level: 5, checksum: true } as CodecSpec]) {
      const frame = await frameOf(spec);
      setCodecBackend(backend);
      const counts = { corrupt: 0, same: 0, garbage: 0 };
      for (let i = 0; i < frame.length; i++) {
        const bad = frame.slice();
        bad[i]! ^= 1 << (i % 8);
        counts[await outcome(spec, bad)]++;
      }
      const label = spec.kind === "blosc" ? "blosc" : `zstd checksum=${spec.checksum}`;
      t.diagnostic(`${label}: ${frame.length} single-bit flips → ${JSON.stringify(counts)}`);
      if (spec.kind === "zstd" && spec.checksum) {
        assert.equal(
          counts.garbage,
          0,
          "the XXH64 content checksum catches every flip that changes the output",
        );
      }
      assert.ok(counts.corrupt > 0);
    }
  });

  test(`corruption [${backend}]: a flipped bit in Blosc nbytes or cbytes, or in the zstd magic/header, is always detected`, async () => {
    const blosc = await frameOf(BLOSC);
    const zstd = await frameOf(ZSTD);
    setCodecBackend(backend);
    for (const byte of [4, 5, 6, 7, 12, 13, 14, 15]) {
      for (let bit = 0; bit < 8; bit++) {
        const bad = blosc.slice();
        bad[byte]! ^= 1 << bit;
        assert.equal(await outcome(BLOSC, bad), "corrupt", `blosc byte ${byte} bit ${bit}`);
      }
    }
    for (let byte = 0; byte < 8; byte++) {
      for (let bit = 0; bit < 8; bit++) {
        if (byte === 4 && bit === 4) continue; // RFC 8878 Unused_bit: decoders must ignore it
        const bad = zstd.slice();
        bad[byte]! ^= 1 << bit;
        assert.equal(await outcome(ZSTD, bad), "corrupt", `zstd byte ${byte} bit ${bit}`);
      }
    }
  });

  test(`corruption [${backend}]: every truncation of a frame throws CorruptShard naming the key`, async () => {
    for (const spec of [BLOSC, ZSTD]) {
      const frame = await frameOf(spec);
      setCodecBackend(backend);
      for (let n = 0; n < frame.length; n++) {
        await assert.rejects(
          decode(spec, frame.subarray(0, n), DATA.length, KEY),
          namesKey,
          `${spec.kind} cut to ${n}`,
        );
      }
    }
  });

  test(`corruption [${backend}]: a wrong Blosc header (nbytes, cbytes, typesize, flags, version) → CorruptShard(key)`, async () => {
    const frame = await frameOf(BLOSC);
    setCodecBackend(backend);
    const edits: [string, (v: DataView) => void][] = [
      ["nbytes+1", (v) => v.setUint32(4, DATA.length + 1, true)],
      ["nbytes-8", (v) => v.setUint32(4, DATA.length - 8, true)],
      ["cbytes+1", (v) => v.setUint32(12, frame.length + 1, true)],
      ["typesize 0", (v) => v.setUint8(3, 0)],
      ["both shuffles", (v) => v.setUint8(2, v.getUint8(2) | 0x05)],
      ["reserved flag bit", (v) => v.setUint8(2, v.getUint8(2) | 0x08)],
      ["unknown compressor 7", (v) => v.setUint8(2, (v.getUint8(2) & 0x1f) | (7 << 5))],
      ["version 0", (v) => v.setUint8(0, 0)],
      ["version 3 (blosc2)", (v) => v.setUint8(0, 3)],
      ["blocksize 0", (v) => v.setUint32(8, 0, true)],
      ["block offset past the end", (v) => v.setInt32(16, frame.length + 100, true)],
      ["block offset inside the offset table", (v) => v.setInt32(16, 4, true)],
    ];
    for (const [what, edit] of edits) {
      await assert.rejects(decode(BLOSC, withHeader(frame, edit), DATA.length, KEY), namesKey, what);
    }
  });

  test(`corruption [${backend}]: a wrong expectedLength → CorruptShard naming the key`, async () => {
    for (const spec of [BLOSC, ZSTD]) {
      const frame = await frameOf(spec);
      setCodecBackend(backend);
      for (const n of [0, DATA.length - 1, DATA.length + 1, DATA.length * 2]) {
        await assert.rejects(decode(spec, frame, n, KEY), namesKey, `${spec.kind} expected ${n}`);
      }
    }
  });

  test(`corruption [${backend}]: a zstd object must be exactly one frame (no stray bytes, no second or skippable frame)`, async () => {
    const frame = await frameOf(ZSTD);
    setCodecBackend(backend);
    const twice = new Uint8Array(frame.length * 2);
    twice.set(frame);
    twice.set(frame, frame.length);
    const stray = new Uint8Array(frame.length + 1);
    stray.set(frame);
    const skippable = new Uint8Array([0x50, 0x2a, 0x4d, 0x18, 0, 0, 0, 0]);
    for (const [what, bytes] of [
      ["two frames", twice],
      ["one stray byte", stray],
      ["a skippable frame", skippable],
    ] as const) {
      await assert.rejects(decode(ZSTD, bytes, DATA.length, KEY), namesKey, what);
    }
  });
}

test("corruption [wasm]: decoders stay correct after 2,500 failed zstd decodes (numcodecs exception leak)", async () => {
  setCodecBackend("native");
  const good = await encode(ZSTD, DATA);
  // A body flip numcodecs reports as an error; its C++ exception state leaks on each one.
  let failing: Uint8Array | undefined;
  setCodecBackend("wasm");
  for (let i = 12; i < good.length && !failing; i++) {
    const bad = good.slice();
    bad[i]! ^= 0x10;
    if ((await outcome(ZSTD, bad)) === "corrupt") failing = bad;
  }
  assert.ok(failing, "found a body flip the wasm zstd decoder rejects");
  for (let i = 0; i < 2500; i++) await assert.rejects(decode(ZSTD, failing, DATA.length, KEY), namesKey);
  assert.deepEqual(await decode(ZSTD, good, DATA.length, KEY), DATA);
  const reEncoded = await encode(ZSTD, DATA);
  assert.deepEqual(await decode(ZSTD, reEncoded, DATA.length, KEY), DATA);
});

test("corruption [native]: the C glue re-checks frames itself (called directly, bypassing the TS checks)", async () => {
  const loaded = loadAddon();
  assert.ok("addon" in loaded, "native addon is built");
  const { addon } = loaded;
  const blosc = await frameOf(BLOSC);
  const zstd = await frameOf(ZSTD);
  const isCorrupt = (e: unknown) => e instanceof Error && (e as { code?: string }).code === "ZS_CORRUPT";
  await assert.rejects(addon.bloscDecode(blosc, DATA.length + 1), isCorrupt);
  await assert.rejects(addon.bloscDecode(blosc.subarray(0, 15), DATA.length), isCorrupt);
  await assert.rejects(addon.bloscDecode(blosc.subarray(0, blosc.length - 1), DATA.length), isCorrupt);
  await assert.rejects(
    addon.bloscDecode(
      withHeader(blosc, (v) => v.setUint8(3, 0)),
      DATA.length,
    ),
    isCorrupt,
  );
  await assert.rejects(addon.zstdDecode(zstd, DATA.length - 1), isCorrupt);
  await assert.rejects(addon.zstdDecode(zstd.subarray(0, zstd.length - 1), DATA.length), isCorrupt);
  await assert.rejects(addon.zstdDecode(new Uint8Array(16), DATA.length), isCorrupt);
  assert.deepEqual(await addon.bloscDecode(blosc, DATA.length), DATA);
});
