import assert from "node:assert/strict";
import { test } from "node:test";
import { type CodecSpec, decode, encode, profileCodec } from "@zarr-stream/codecs";
import { type DType, type Profile, SchemaError } from "@zarr-stream/spec";

test("Profiles: diagnostic is Blosc zstd 5 + byte shuffle with typesize = itemsize", () => {
  assert.deepEqual(profileCodec("diagnostic", "float64"), {
    kind: "blosc",
    cname: "zstd",
    clevel: 5,
    shuffle: 1,
    typesize: 8,
    blocksize: 0,
  });
  const sizes: [DType, number][] = [
    ["float32", 4],
    ["int32", 4],
    ["int64", 8],
    ["uint8", 1],
    ["uint32", 4],
    ["uint64", 8],
  ];
  for (const [dtype, size] of sizes) {
    assert.equal((profileCodec("diagnostic", dtype) as { typesize: number }).typesize, size, dtype);
  }
});

test("Profiles: checkpoint is Blosc zstd 7 + shuffle, wasm is plain zstd 5 without checksum", () => {
  assert.deepEqual(profileCodec("checkpoint", "int32"), {
    kind: "blosc",
    cname: "zstd",
    clevel: 7,
    shuffle: 1,
    typesize: 4,
    blocksize: 0,
  });
  assert.deepEqual(profileCodec("wasm", "float64"), { kind: "zstd", level: 5, checksum: false });
});

test("Profiles: an unknown profile or dtype is a SchemaError naming the field", () => {
  assert.throws(
    () => profileCodec("fast" as Profile, "float64"),
    (e: unknown) => e instanceof SchemaError && e.pointer === "/profile" && /fast/.test(e.message),
  );
  assert.throws(
    () => profileCodec("toString" as Profile, "float64"),
    (e: unknown) => e instanceof SchemaError && e.pointer === "/profile",
  );
  assert.throws(
    () => profileCodec("diagnostic", "complex128" as DType),
    (e: unknown) => e instanceof SchemaError && e.pointer === "/dtype",
  );
});

test("codec spec: out-of-range parameters are refused before any work, naming the field", async () => {
  const base = profileCodec("diagnostic", "float64");
  const bad: [Record<string, unknown>, string][] = [
    [{ ...base, clevel: 10 }, "/clevel"],
    [{ ...base, clevel: 2.5 }, "/clevel"],
    [{ ...base, shuffle: 3 }, "/shuffle"],
    [{ ...base, typesize: 0 }, "/typesize"],
    [{ ...base, typesize: 256 }, "/typesize"],
    [{ ...base, cname: "lz4" }, "/cname"],
    [{ ...base, blocksize: 4096 }, "/blocksize"],
    [{ kind: "zstd", level: 23, checksum: false }, "/level"],
    [{ kind: "zstd", level: 5, checksum: "no" }, "/checksum"],
    [{ kind: "gzip" }, "/kind"],
  ];
  for (const [spec, pointer] of bad) {
    const isSchema = (e: unknown) => e instanceof SchemaError && e.pointer === pointer;
    await assert.rejects(encode(spec as CodecSpec, new Uint8Array(8)), isSchema, pointer);
    await assert.rejects(decode(spec as CodecSpec, new Uint8Array(8), 8), isSchema, pointer);
  }
});

test("codec spec: data must be a Uint8Array and expectedLength a non-negative integer", async () => {
  const spec = profileCodec("wasm", "uint8");
  await assert.rejects(encode(spec, [1, 2, 3] as unknown as Uint8Array), SchemaError);
  for (const n of [-1, 1.5, Number.NaN, 2 ** 40]) {
    await assert.rejects(
      decode(spec, new Uint8Array(9), n, "a/c/0"),
      (e: unknown) => e instanceof SchemaError && e.pointer === "/expectedLength",
    );
  }
});
