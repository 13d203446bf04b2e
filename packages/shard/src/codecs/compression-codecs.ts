import { type CodecSpec, crc32c, decode, encode } from "@zarr-stream/codecs";
import { CorruptShard, UnsupportedCodec } from "@zarr-stream/spec";
import type { BytesToBytesCodec, CodecFactory } from "../codec-model.js";
import { itemSize } from "../dtype.js";
import { badConfig, intIn, oneOf, onlyKeys } from "./config.js";

const SHUFFLES = ["noshuffle", "shuffle", "bitshuffle"] as const;
const BLOSC_CNAMES = ["blosclz", "lz4", "lz4hc", "snappy", "zlib", "zstd"] as const;
/** Blosc 1.x frames: a 16-byte header whose bytes 4..7 hold the decoded length. */
const BLOSC_HEADER = 16;

function corrupt(key: string, reason: string): CorruptShard {
  return new CorruptShard(`chunk ${JSON.stringify(key)}: ${reason}`, key);
}

/**
 * Zarr v3 `blosc`. Decoding follows the frame's own header, so frames of any compressor Blosc has decode
 * (those not built in go through numcodecs, see @zarr-stream/codecs); encoding writes zstd frames only.
 */
export const bloscCodec: CodecFactory = (cfg, ctx): BytesToBytesCodec => {
  onlyKeys(cfg, ["cname", "clevel", "shuffle", "typesize", "blocksize"], ctx);
  const cname = oneOf(cfg, "cname", BLOSC_CNAMES, ctx);
  const clevel = intIn(cfg, "clevel", 0, 9, ctx);
  const shuffle = SHUFFLES.indexOf(oneOf(cfg, "shuffle", SHUFFLES, ctx)) as 0 | 1 | 2;
  const typesize = intIn(cfg, "typesize", 1, 255, ctx, itemSize(ctx.spec.dtype));
  const blocksize = intIn(cfg, "blocksize", 0, 2 ** 31 - 1, ctx, 0);
  const spec: CodecSpec = { kind: "blosc", cname: "zstd", clevel, shuffle, typesize, blocksize: 0 };
  const { pointer, document } = ctx;
  return {
    kind: "bytes_to_bytes",
    name: "blosc",
    needsDecodedLength: false,
    encodedLength: () => undefined,
    encode: async (bytes) => {
      if (cname !== "zstd" || blocksize !== 0) {
        throw new UnsupportedCodec(
          `${document}: ${pointer}: blosc encodes with cname "zstd" and blocksize 0 only (got ${cname}, ${blocksize})`,
          "blosc",
          pointer,
          document,
        );
      }
      return encode(spec, bytes);
    },
    decode: async (bytes, decodedLength, key) => {
      if (bytes.byteLength < BLOSC_HEADER) throw corrupt(key, `a ${bytes.byteLength}-byte Blosc frame`);
      const stated = new DataView(bytes.buffer, bytes.byteOffset, BLOSC_HEADER).getUint32(4, true);
      return decode(spec, bytes, decodedLength ?? stated, key);
    },
  };
};

/** Zarr v3 `zstd` (plain frames). */
export const zstdCodec: CodecFactory = (cfg, ctx): BytesToBytesCodec => {
  onlyKeys(cfg, ["level", "checksum"], ctx);
  const level = intIn(cfg, "level", -131072, 22, ctx, 0);
  const checksum = cfg.checksum ?? false;
  if (typeof checksum !== "boolean")
    badConfig(ctx, "checksum", `must be a boolean, got ${JSON.stringify(checksum)}`);
  const spec: CodecSpec = { kind: "zstd", level, checksum };
  return {
    kind: "bytes_to_bytes",
    name: "zstd",
    needsDecodedLength: true,
    encodedLength: () => undefined,
    encode: (bytes) => encode(spec, bytes),
    decode: (bytes, decodedLength, key) => {
      if (decodedLength === undefined) throw corrupt(key, "zstd needs the decoded length");
      return decode(spec, bytes, decodedLength, key);
    },
  };
};

/** Bytes through a web-standard (de)compression stream: the viewer's browsers have them, as Node does. */
async function throughStream(bytes: Uint8Array, stream: CompressionStream | DecompressionStream) {
  const piped = new Blob([bytes as Uint8Array<ArrayBuffer>]).stream().pipeThrough(stream);
  return new Uint8Array(await new Response(piped).arrayBuffer());
}

/** Zarr v3 `gzip`. Encoding uses the platform's level: any level decodes the same. */
export const gzipCodec: CodecFactory = (cfg, ctx): BytesToBytesCodec => {
  onlyKeys(cfg, ["level"], ctx);
  intIn(cfg, "level", 0, 9, ctx, 6);
  return {
    kind: "bytes_to_bytes",
    name: "gzip",
    needsDecodedLength: false,
    encodedLength: () => undefined,
    encode: (bytes) => throughStream(bytes, new CompressionStream("gzip")),
    decode: async (bytes, decodedLength, key) => {
      let out: Uint8Array;
      try {
        out = await throughStream(bytes, new DecompressionStream("gzip"));
      } catch (e) {
        throw corrupt(key, `gzip: ${(e as Error).message}`);
      }
      if (decodedLength !== undefined && out.byteLength !== decodedLength)
        throw corrupt(key, `gzip decoded to ${out.byteLength} bytes, expected ${decodedLength}`);
      return out;
    },
  };
};

/** Zarr v3 `crc32c`: a 4-byte little-endian CRC-32C of the bytes, appended. */
export const crc32cCodec: CodecFactory = (cfg, ctx): BytesToBytesCodec => {
  onlyKeys(cfg, [], ctx);
  return {
    kind: "bytes_to_bytes",
    name: "crc32c",
    needsDecodedLength: false,
    encodedLength: (n) => (n === undefined ? undefined : n + 4),
    encode: async (bytes) => {
      const out = new Uint8Array(bytes.byteLength + 4);
      out.set(bytes);
      new DataView(out.buffer).setUint32(bytes.byteLength, await crc32c(bytes), true);
      return out;
    },
    decode: async (bytes, decodedLength, key) => {
      const n = bytes.byteLength - 4;
      if (n < 0 || (decodedLength !== undefined && n !== decodedLength))
        throw corrupt(key, `crc32c: ${bytes.byteLength} bytes, expected ${(decodedLength ?? 0) + 4}`);
      const body = bytes.subarray(0, n);
      const stored = new DataView(bytes.buffer, bytes.byteOffset + n, 4).getUint32(0, true);
      const actual = await crc32c(body);
      if (stored !== actual) throw corrupt(key, `CRC-32C is ${stored}, computed ${actual}`);
      return body;
    },
  };
};
