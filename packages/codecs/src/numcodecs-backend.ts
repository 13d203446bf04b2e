import type { Codec } from "numcodecs";
import type { Backend } from "./backend.js";
import { checkDecodedLength, corruptChunk } from "./frame-checks.js";

const CASTAGNOLI = 0x82f63b78;
const ZSTD_CHECKSUM_FLAG = 0x04;

let hashes: Promise<typeof import("hash-wasm")> | undefined;

/**
 * hash-wasm, loaded on the first checksum this backend computes: the module instantiates its wasm as it
 * loads (10-20 ms of CPU), and a process on the native backend never asks it for one.
 */
function hashWasm(): Promise<typeof import("hash-wasm")> {
  hashes ??= import("hash-wasm");
  return hashes;
}

/*
 * numcodecs' zstd decoder leaks its C++ exception state on every failed decode; after ~1,500-2,000
 * failures the instance throws on valid frames too (measured; test "corruption [wasm]: decoders stay correct after 2,500 failed zstd decodes").
 * So decoders get their own module instances (own wasm heaps — a corrupt frame can never disturb an
 * encoder), and a zstd decoder is replaced well before that limit. A `?instance=` query makes Node
 * evaluate the module file again; the retired instance stays in the module cache, a small, bounded cost
 * paid only per RECYCLE_AFTER corrupt frames.
 */
const RECYCLE_AFTER = 100;
let instances = 0;

async function freshDecoder(specifier: "numcodecs/zstd" | "numcodecs/blosc"): Promise<Codec> {
  const url = `${import.meta.resolve(specifier)}?instance=${++instances}`;
  const mod = (await import(url)) as { default: { fromConfig(c: { id: string }): Codec } };
  return mod.default.fromConfig({ id: specifier.slice("numcodecs/".length) });
}

let bloscDecoder: Promise<Codec> | undefined;
let zstdDecoder: { codec: Promise<Codec>; failures: number } | undefined;

/**
 * numcodecs' zstd build writes no checksum, so one is added the way RFC 8878 §3.1.1 defines it: set the
 * Content_Checksum_flag and append the low 32 bits of XXH64(content, seed 0), little-endian.
 */
async function addZstdChecksum(frame: Uint8Array, content: Uint8Array): Promise<Uint8Array> {
  const out = new Uint8Array(frame.length + 4);
  out.set(frame);
  out[4] = (out[4] ?? 0) | ZSTD_CHECKSUM_FLAG;
  const low32 = Number.parseInt((await (await hashWasm()).xxhash64(content)).slice(8), 16);
  new DataView(out.buffer).setUint32(frame.length, low32, true);
  return out;
}

/**
 * numcodecs' modules are imported on first use, so a page whose frames our own wasm decodes never
 * fetches them.
 *
 * numcodecs.js (Emscripten builds of c-blosc and zstd): decodes Blosc frames whose inner codec (blosclz,
 * lz4, lz4hc, zlib) our Blosc does not implement, one frame at a time. Its Blosc encoder takes no typesize (it hard-codes 4), so frames
 * it writes carry typesize 4 and shuffle over 4-byte lanes: valid Blosc that every reader decodes, but
 * float64 data compresses less well than with the native backend.
 */
export const numcodecsBackend: Backend = {
  name: "numcodecs",
  async bloscEncode(data, clevel, shuffle) {
    const { default: Blosc } = await import("numcodecs/blosc");
    return Blosc.fromConfig({ id: "blosc", cname: "zstd", clevel, shuffle, blocksize: 0 }).encode(data);
  },
  async bloscDecode(data, expectedLength, key) {
    bloscDecoder ??= freshDecoder("numcodecs/blosc");
    return checkDecodedLength(await (await bloscDecoder).decode(data), expectedLength, key);
  },
  async zstdEncode(data, level, checksum) {
    const { default: Zstd } = await import("numcodecs/zstd");
    const frame = await Zstd.fromConfig({ id: "zstd", level }).encode(data);
    return checksum ? addZstdChecksum(frame, data) : frame;
  },
  async zstdDecode(data, expectedLength, key) {
    zstdDecoder ??= { codec: freshDecoder("numcodecs/zstd"), failures: 0 };
    const decoder = zstdDecoder;
    let out: Uint8Array;
    try {
      out = await (await decoder.codec).decode(data);
    } catch (e) {
      if (++decoder.failures >= RECYCLE_AFTER && zstdDecoder === decoder) zstdDecoder = undefined;
      throw corruptChunk(key, `zstd decompression failed: ${e instanceof Error ? e.message : String(e)}`);
    }
    return checkDecodedLength(out, expectedLength, key);
  },
  crc32c: async (data) => Number.parseInt(await (await hashWasm()).crc32(data, CASTAGNOLI), 16) >>> 0,
};
