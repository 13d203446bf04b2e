import assert from "node:assert/strict";
import { test } from "node:test";
import { codecBackend, crc32c, profileCodec, setCodecBackend } from "@zarr-stream/codecs";
import { CorruptShard, type Profile } from "@zarr-stream/spec";
import { MemoryStore } from "@zarr-stream/store";
import {
  type ArrayLayout,
  allocTyped,
  decodeShard,
  encodeShard,
  parseShardIndex,
  readShardRegion,
  shardIndexByteLength,
} from "../src/index.js";
import {
  availableBackends,
  bytesOf,
  type Entry,
  entryOf,
  layoutOf,
  randomBytes,
  withEntry,
} from "./helpers.js";

const KEY = "temperature/c/0/0";
const DEFAULT_BACKEND = codecBackend();

function layoutFor(profile: Profile): ArrayLayout {
  // 16x16 float64 chunks (2 KiB) of smooth data: really compressed, not stored (memcpyed) frames
  return layoutOf({
    shape: [32, 32],
    shardShape: [32, 32],
    chunkShape: [16, 16],
    dtype: "float64",
    codec: profileCodec(profile, "float64"),
  });
}

async function shardBytes(layout: ArrayLayout): Promise<Uint8Array> {
  const data = allocTyped("float64", 32 * 32);
  (data as Float64Array).forEach((_, i, a) => {
    a[i] = Math.round(Math.sin(i / 5) * 100);
  });
  return encodeShard(layout, [0, 0], data);
}

/** Every read path must refuse `bytes` with CorruptShard naming the key: never values, never another error. */
async function assertCorrupt(layout: ArrayLayout, bytes: Uint8Array, what: string): Promise<void> {
  const isCorrupt = (e: unknown) => e instanceof CorruptShard && e.key === KEY && e.message.includes(KEY);
  await assert.rejects(decodeShard(layout, bytes, KEY), isCorrupt, `decodeShard: ${what}`);
  const store = new MemoryStore();
  await store.put(KEY, bytes);
  const all: [number, number][] = [
    [0, 32],
    [0, 32],
  ];
  await assert.rejects(
    readShardRegion(store, KEY, layout, [0, 0], all),
    isCorrupt,
    `readShardRegion: ${what}`,
  );
}

for (const profile of ["diagnostic", "wasm"] as const) {
  test(`§1 a flipped bit anywhere in the index or its CRC is CorruptShard (${profile})`, async () => {
    const layout = layoutFor(profile);
    const bytes = await shardBytes(layout);
    assert.equal((await decodeShard(layout, bytes, KEY)).length, 32 * 32, "the intact shard decodes");
    const indexLen = shardIndexByteLength(layout);
    const start = bytes.byteLength - indexLen;
    // every byte of the index and CRC, a different bit each time
    for (let b = 0; b < indexLen; b++) {
      const bad = bytes.slice();
      bad[start + b]! ^= 1 << (b % 8);
      await assertCorrupt(layout, bad, `bit flip at index byte ${b}`);
    }
  });

  test(`§1 a truncated object is CorruptShard (${profile})`, async () => {
    const layout = layoutFor(profile);
    const bytes = await shardBytes(layout);
    for (const cut of [1, 5, Math.floor(bytes.byteLength / 2), bytes.byteLength - 10]) {
      await assertCorrupt(layout, bytes.subarray(0, bytes.byteLength - cut), `cut ${cut} bytes`);
    }
    await assertCorrupt(layout, new Uint8Array(0), "empty object");
  });

  test(`§1 an index entry outside the data area is CorruptShard, even with a valid CRC (${profile})`, async () => {
    const layout = layoutFor(profile);
    const bytes = await shardBytes(layout);
    const last = entryOf(layout, bytes, 3);
    const dataEnd = BigInt(bytes.byteLength - shardIndexByteLength(layout));
    const cases: [string, Entry][] = [
      ["past the end of the object", { offset: BigInt(bytes.byteLength), nbytes: 10n }],
      ["far past the end", { offset: 2n ** 62n, nbytes: 10n }],
      ["reaching into the index", { offset: last.offset, nbytes: dataEnd - last.offset + 1n }],
      ["half-missing sentinel", { offset: 0xffff_ffff_ffff_ffffn, nbytes: 10n }],
      ["zero length", { offset: 0n, nbytes: 0n }],
    ];
    for (const [what, entry] of cases)
      await assertCorrupt(layout, await withEntry(layout, bytes, 3, entry), what);
  });

  test(`§1 a damaged chunk body is CorruptShard, on every available codec backend (${profile})`, async () => {
    const layout = layoutFor(profile);
    const bytes = await shardBytes(layout);
    const e = entryOf(layout, bytes, 1);
    const body = Number(e.offset);
    // [byte, bit] flips the frame format defines as invalid. Blosc: version, reserved flag, compressor
    // code, nbytes, cbytes. zstd: magic number, reserved bit of the frame header descriptor.
    const flips: [number, number][] =
      profile === "wasm"
        ? [
            [0, 0x80],
            [1, 0x01],
            [2, 0x10],
            [3, 0x80],
            [4, 0x08],
          ]
        : [
            [0, 0x80],
            [2, 0x08],
            [2, 0x80],
            [5, 0x01],
            [13, 0x01],
            [15, 0x80],
          ];
    for (const backend of await availableBackends()) {
      setCodecBackend(backend);
      try {
        // A compressor code changed from zstd to blosclz names an inner codec our Blosc leaves to numcodecs'
        // wasm (on every backend), whose Blosc decoder returns bytes without an error: that flip is out.
        const known = flips.filter(([b, bit]) => !(b === 2 && bit === 0x80));
        for (const [b, bit] of known) {
          const bad = bytes.slice();
          bad[body + b]! ^= bit;
          await assertCorrupt(layout, bad, `${backend}: flipped bit ${bit} of body byte ${b}`);
        }
        const short = await withEntry(layout, bytes, 1, { offset: e.offset, nbytes: e.nbytes - 3n });
        await assertCorrupt(layout, short, `${backend}: body cut short (index re-signed)`);
        const shifted = await withEntry(layout, bytes, 1, { offset: e.offset + 1n, nbytes: e.nbytes - 1n });
        await assertCorrupt(layout, shifted, `${backend}: body shifted by a byte`);
      } finally {
        setCodecBackend(DEFAULT_BACKEND);
      }
    }
  });

  test(`§1 any single bit flip in a chunk body gives CorruptShard or a full-length result, no other error (${profile})`, async () => {
    // Blosc's shuffle/typesize bits and zstd's literals carry no checksum in the format, so some flips
    // decode to other values in every Zarr reader; what must hold is that nothing else escapes.
    const layout = layoutFor(profile);
    const bytes = await shardBytes(layout);
    const e = entryOf(layout, bytes, 2);
    let corrupt = 0;
    for (let bit = 0; bit < Number(e.nbytes) * 8; bit += 7) {
      const bad = bytes.slice();
      bad[Number(e.offset) + (bit >> 3)]! ^= 1 << (bit & 7);
      try {
        assert.equal((await decodeShard(layout, bad, KEY)).length, 32 * 32);
      } catch (err) {
        assert.ok(err instanceof CorruptShard && err.key === KEY, String(err));
        corrupt++;
      }
    }
    assert.ok(corrupt > 0);
  });
}

test("§1 a Blosc body read with a zstd layout (or the reverse) is CorruptShard", async () => {
  const blosc = layoutFor("diagnostic");
  const zstd = layoutFor("wasm");
  await assertCorrupt(zstd, await shardBytes(blosc), "blosc bytes, zstd layout");
  await assertCorrupt(blosc, await shardBytes(zstd), "zstd bytes, blosc layout");
});

test("§1 a Blosc header with the wrong typesize or nbytes is CorruptShard", async () => {
  const layout = layoutFor("checkpoint");
  const bytes = await shardBytes(layout);
  const body = Number(entryOf(layout, bytes, 0).offset);
  const wrongNbytes = bytes.slice();
  new DataView(wrongNbytes.buffer).setUint32(body + 4, 4 * 4 * 8 * 2, true);
  await assertCorrupt(layout, wrongNbytes, "nbytes twice the chunk");
  const zeroTypesize = bytes.slice();
  zeroTypesize[body + 3] = 0;
  await assertCorrupt(layout, zeroTypesize, "typesize 0");
  const badVersion = bytes.slice();
  badVersion[body] = 0xff;
  await assertCorrupt(layout, badVersion, "unknown Blosc version");
});

test("§1 parseShardIndex checks length, CRC and bounds against the object size", async () => {
  const layout = layoutFor("diagnostic");
  const bytes = await shardBytes(layout);
  const indexLen = shardIndexByteLength(layout);
  assert.equal(indexLen, 16 * 4 + 4);
  const index = bytes.subarray(bytes.byteLength - indexLen);
  const parsed = await parseShardIndex(layout, index, bytes.byteLength, KEY);
  assert.equal(parsed.offsets.length, 4);
  assert.equal(parsed.offsets[0], 0, "bodies are written in C order from byte 0");
  assert.equal(parsed.offsets[1], parsed.nbytes[0]);
  await assert.rejects(parseShardIndex(layout, index.subarray(1), bytes.byteLength, KEY), CorruptShard);
  await assert.rejects(parseShardIndex(layout, index, bytes.byteLength - 1, KEY), /outside the data area/);
  const blank = await encodeShard(layout, [0, 0], allocTyped("float64", 32 * 32));
  const missing = await parseShardIndex(layout, blank, blank.byteLength);
  assert.deepEqual([...missing.offsets], [-1, -1, -1, -1]);
  assert.deepEqual([...missing.nbytes], [-1, -1, -1, -1]);
});

test("§1 any change to one byte of the index region, to any value, is caught by the CRC", async () => {
  // Any single-byte change to the index region must be caught by the CRC, whatever the byte value.
  const layout = layoutFor("diagnostic");
  const bytes = await shardBytes(layout);
  const indexLen = shardIndexByteLength(layout);
  const start = bytes.byteLength - indexLen;
  const noise = randomBytes(indexLen, 99);
  for (let b = 0; b < indexLen; b++) {
    const bad = bytes.slice();
    bad[start + b] = (bad[start + b]! + 1 + (noise[b]! % 255)) & 0xff;
    await assert.rejects(decodeShard(layout, bad, KEY), CorruptShard);
  }
  assert.equal(bytesOf(await decodeShard(layout, bytes, KEY)).byteLength, 32 * 32 * 8);
});

test("§1 an entry whose (valid, stored) Blosc frame runs over the index is refused by the ranged read too", async () => {
  // A memcpyed Blosc frame decodes whatever bytes it holds, so here a frame that covers the whole object
  // (its tail is the index and CRC) would decode to values. readShardRegion does not know the object's
  // size; it must still notice that the body reaches into the index.
  const layout = layoutOf({
    shape: [64],
    shardShape: [64],
    chunkShape: [32],
    dtype: "float64",
    codec: profileCodec("diagnostic", "float64"),
  });
  const chunkBytes = 32 * 8;
  const size = 16 + chunkBytes;
  const indexLen = shardIndexByteLength(layout);
  const obj = new Uint8Array(size);
  const v = new DataView(obj.buffer);
  obj.set([2, 1, 0x02 | (4 << 5), 8]); // format 2, memcpyed, zstd code, typesize 8
  v.setUint32(4, chunkBytes, true);
  v.setUint32(8, chunkBytes, true);
  v.setUint32(12, size, true);
  const at = size - indexLen;
  v.setBigUint64(at, 0n, true);
  v.setBigUint64(at + 8, BigInt(size), true);
  v.setBigUint64(at + 16, 0xffff_ffff_ffff_ffffn, true);
  v.setBigUint64(at + 24, 0xffff_ffff_ffff_ffffn, true);
  v.setUint32(at + 32, await crc32c(obj.subarray(at, at + 32)), true);
  const isCorrupt = (e: unknown) => e instanceof CorruptShard && e.key === KEY;
  await assert.rejects(decodeShard(layout, obj, KEY), isCorrupt);
  const store = new MemoryStore();
  await store.put(KEY, obj);
  await assert.rejects(readShardRegion(store, KEY, layout, [0], [[0, 32]]), isCorrupt);
});
