import assert from "node:assert/strict";
import { test } from "node:test";
import { crc32c, decode, encode, profileCodec, setCodecBackend } from "@zarr-stream/codecs";
import { PROFILES, randomBytes, smoothBytes } from "./helpers.js";

const CHUNK = 1 << 20;
const inputs = Array.from({ length: 8 }, (_, i) =>
  i % 2 ? randomBytes(CHUNK - i, i) : smoothBytes(CHUNK + i, i * 1000),
);

test("concurrency [native]: 8 encodes in flight give the same bytes as 8 sequential encodes, every profile", async () => {
  setCodecBackend("native");
  for (const profile of PROFILES) {
    const spec = profileCodec(profile, "float64");
    const sequential: Uint8Array[] = [];
    for (const data of inputs) sequential.push(await encode(spec, data));
    const parallel = await Promise.all(inputs.map((data) => encode(spec, data)));
    assert.deepEqual(parallel, sequential, profile);
    const decoded = await Promise.all(parallel.map((f, i) => decode(spec, f, inputs[i]!.length, `v/c/${i}`)));
    for (const [i, d] of decoded.entries()) assert.deepEqual(d, inputs[i], `${profile} chunk ${i}`);
  }
});

test("concurrency [native]: mixed encodes, decodes and CRCs in flight do not interfere", async () => {
  setCodecBackend("native");
  const blosc = profileCodec("diagnostic", "float64");
  const zstd = profileCodec("wasm", "float64");
  const frames = await Promise.all(inputs.map((d, i) => encode(i % 2 ? zstd : blosc, d)));
  const crcs: number[] = [];
  for (const d of inputs) crcs.push(await crc32c(d));
  const work = inputs.flatMap((d, i) => [
    decode(i % 2 ? zstd : blosc, frames[i]!, d.length).then((out) => assert.deepEqual(out, d)),
    crc32c(d).then((c) => assert.equal(c, crcs[i])),
    encode(i % 2 ? zstd : blosc, d).then((f) => assert.deepEqual(f, frames[i])),
  ]);
  await Promise.all(work);
});

test("concurrency [wasm]: many jobs in flight, mixed sizes, give the sequential bytes", async () => {
  // Sizes from 5 bytes to 3 MiB make the workers' staging buffers grow and get reused.
  setCodecBackend("wasm");
  const sizes = [1 << 14, 3 << 20, 70_001, CHUNK, 1 << 14, 2 << 20, 5, CHUNK + 3, 300_000, 3 << 20];
  const data = sizes.map((n, i) => (i % 3 ? smoothBytes(n, i * 77) : randomBytes(n, i)));
  for (const profile of PROFILES) {
    const spec = profileCodec(profile, "float64");
    const sequential: Uint8Array[] = [];
    for (const d of data) sequential.push(await encode(spec, d));
    const parallel = await Promise.all(data.map((d) => encode(spec, d)));
    assert.deepEqual(parallel, sequential, profile);
    const decoded = await Promise.all(parallel.map((f, i) => decode(spec, f, data[i]!.length, `v/c/${i}`)));
    for (const [i, d] of decoded.entries()) assert.deepEqual(d, data[i], `${profile} chunk ${i}`);
  }
});

test("concurrency [wasm]: a caller may overwrite its input as soon as encode returns", async () => {
  setCodecBackend("wasm");
  const spec = profileCodec("diagnostic", "float64");
  const originals = Array.from({ length: 12 }, (_, i) => smoothBytes(CHUNK, i * 500));
  const want = await Promise.all(originals.map((d) => encode(spec, d)));
  const reused = new Uint8Array(CHUNK);
  const pending = originals.map((d) => {
    reused.set(d);
    const frame = encode(spec, reused);
    reused.fill(0xa5);
    return frame;
  });
  assert.deepEqual(await Promise.all(pending), want);
});
