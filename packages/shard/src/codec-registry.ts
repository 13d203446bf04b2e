import { UnsupportedCodec } from "@zarr-stream/spec";
import type { CodecFactory } from "./codec-model.js";
import { bytesCodec } from "./codecs/bytes-codec.js";
import { bloscCodec, crc32cCodec, gzipCodec, zstdCodec } from "./codecs/compression-codecs.js";
import { shardingCodec } from "./codecs/sharding-codec.js";
import { transposeCodec } from "./codecs/transpose-codec.js";

/** Codec name (as zarr.json spells it) → the factory that builds it. */
const registry = new Map<string, CodecFactory>([
  ["transpose", transposeCodec],
  ["bytes", bytesCodec],
  ["sharding_indexed", shardingCodec],
  ["blosc", bloscCodec],
  ["zstd", zstdCodec],
  ["gzip", gzipCodec],
  ["crc32c", crc32cCodec],
]);

/** Adds (or replaces) the codec `name`, so arrays using it open. */
export function registerCodec(name: string, factory: CodecFactory): void {
  registry.set(name, factory);
}

/** The names of the codecs arrays may use. */
export function registeredCodecs(): string[] {
  return [...registry.keys()];
}

/** The factory of codec `name`, or UnsupportedCodec naming it and where it sits. */
export function codecFactory(name: string, pointer: string, document: string): CodecFactory {
  const factory = registry.get(name);
  if (factory === undefined) {
    throw new UnsupportedCodec(
      `${document}: ${pointer}: no codec named ${JSON.stringify(name)} (have: ${registeredCodecs().join(", ")})`,
      name,
      pointer,
      document,
    );
  }
  return factory;
}
