import { type CodecSpec, MAX_CHUNK_BYTES } from "@zarr-stream/codecs";
import {
  type Attrs,
  type DType,
  SchemaError,
  type ZarrArrayMetadata,
  type ZarrCodecMetadata,
  type ZarrGroupMetadata,
} from "@zarr-stream/spec";
import { isDType, itemSize } from "./dtype.js";

const INT32_MAX = 2 ** 31 - 1;

/** Everything needed to encode, decode and describe one sharded Zarr v3 array. */
export interface ArrayLayout {
  shape: number[];
  /** The chunk_grid chunk shape: one store object per shard. */
  shardShape: number[];
  /** The sharding codec's inner chunk shape; divides shardShape in every dim. */
  chunkShape: number[];
  dtype: DType;
  codec: CodecSpec;
  dimensionNames: string[];
  /** Caller attributes, without `_ARRAY_DIMENSIONS` (arrayZarrJson adds it from dimensionNames). */
  attributes: Attrs;
  /** Where the shard index sits; absent means "end", the only layout zarr-stream writes. */
  indexLocation?: "start" | "end";
}

const SHUFFLE_NAMES = ["noshuffle", "shuffle", "bitshuffle"] as const;
const LAYOUT = "ArrayLayout";

/** Throws SchemaError naming the document, the JSON pointer and the reason. */
function fail(document: string, pointer: string, reason: string): never {
  throw new SchemaError(`${document}: ${pointer || "/"}: ${reason}`, pointer, document);
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function intList(document: string, pointer: string, v: unknown, min: number, rank?: number): number[] {
  if (!Array.isArray(v)) fail(document, pointer, "must be an array of integers");
  if (rank !== undefined && v.length !== rank)
    fail(document, pointer, `has rank ${v.length}, shape has ${rank}`);
  v.forEach((x, i) => {
    if (!Number.isSafeInteger(x) || (x as number) < min) {
      fail(document, `${pointer}/${i}`, `must be an integer >= ${min}, got ${JSON.stringify(x)}`);
    }
  });
  return [...(v as number[])];
}

/**
 * Shard and inner chunk dims reach the codecs as int32, and an inner chunk is decoded whole: past either
 * bound a size would wrap there, so a stored zarr.json asking for more is refused here.
 */
function checkCodecBounds(
  document: string,
  pointers: { shard: string; chunk: string },
  shard: number[],
  chunk: number[],
  dtype: unknown,
): void {
  shard.forEach((n, d) => {
    if (n > INT32_MAX) fail(document, `${pointers.shard}/${d}`, `${n} is more than ${INT32_MAX}`);
  });
  if (!isDType(dtype)) return;
  const bytes = chunk.reduce((p, n) => p * n, itemSize(dtype));
  if (bytes > MAX_CHUNK_BYTES)
    fail(document, pointers.chunk, `an inner chunk of ${bytes} bytes; at most ${MAX_CHUNK_BYTES}`);
}

function checkDivides(document: string, pointer: string, chunk: number[], shard: number[]): void {
  chunk.forEach((c, d) => {
    if (shard[d]! % c !== 0)
      fail(document, `${pointer}/${d}`, `inner chunk ${c} does not divide shard ${shard[d]}`);
  });
}

function checkCodec(document: string, pointer: string, codec: unknown): void {
  if (!isRecord(codec)) fail(document, pointer, "must be a codec spec object");
  if (codec.kind === "blosc") {
    if (codec.cname !== "zstd") fail(document, `${pointer}/cname`, 'blosc cname must be "zstd"');
    if (!Number.isInteger(codec.clevel) || (codec.clevel as number) < 0 || (codec.clevel as number) > 9) {
      fail(document, `${pointer}/clevel`, "blosc clevel must be an integer 0..9");
    }
    if (codec.shuffle !== 0 && codec.shuffle !== 1 && codec.shuffle !== 2) {
      fail(document, `${pointer}/shuffle`, "blosc shuffle must be 0, 1 or 2");
    }
    if (
      !Number.isInteger(codec.typesize) ||
      (codec.typesize as number) < 1 ||
      (codec.typesize as number) > 255
    ) {
      fail(document, `${pointer}/typesize`, "blosc typesize must be an integer 1..255");
    }
    if (codec.blocksize !== 0) fail(document, `${pointer}/blocksize`, "blosc blocksize must be 0");
  } else if (codec.kind === "zstd") {
    const level = codec.level as number;
    if (!Number.isInteger(level) || level < -131072 || level > 22) {
      fail(document, `${pointer}/level`, "zstd level must be an integer -131072..22");
    }
    if (typeof codec.checksum !== "boolean")
      fail(document, `${pointer}/checksum`, "zstd checksum must be a boolean");
  } else {
    fail(document, `${pointer}/kind`, `unknown codec kind ${JSON.stringify(codec.kind)}`);
  }
}

/** Refuses a malformed layout (SchemaError naming the field) before anything is encoded or written. */
export function validateLayout(layout: ArrayLayout): void {
  if (!isRecord(layout)) fail(LAYOUT, "", "must be an object");
  const shape = intList(LAYOUT, "/shape", layout.shape, 0);
  const shard = intList(LAYOUT, "/shardShape", layout.shardShape, 1, shape.length);
  const chunk = intList(LAYOUT, "/chunkShape", layout.chunkShape, 1, shape.length);
  checkDivides(LAYOUT, "/chunkShape", chunk, shard);
  checkCodecBounds(LAYOUT, { shard: "/shardShape", chunk: "/chunkShape" }, shard, chunk, layout.dtype);
  if (!isDType(layout.dtype)) fail(LAYOUT, "/dtype", `unsupported dtype ${JSON.stringify(layout.dtype)}`);
  checkCodec(LAYOUT, "/codec", layout.codec);
  const names = layout.dimensionNames;
  if (!Array.isArray(names) || names.length !== shape.length || !names.every((n) => typeof n === "string")) {
    fail(LAYOUT, "/dimensionNames", `must be ${shape.length} strings`);
  }
  if (!isRecord(layout.attributes)) fail(LAYOUT, "/attributes", "must be an object");
  if (
    layout.indexLocation !== undefined &&
    layout.indexLocation !== "start" &&
    layout.indexLocation !== "end"
  ) {
    fail(LAYOUT, "/indexLocation", 'must be "start" or "end"');
  }
}

function innerCodecJson(codec: CodecSpec): ZarrCodecMetadata {
  if (codec.kind === "blosc") {
    return {
      name: "blosc",
      configuration: {
        cname: codec.cname,
        clevel: codec.clevel,
        shuffle: SHUFFLE_NAMES[codec.shuffle],
        typesize: codec.typesize,
        blocksize: codec.blocksize,
      },
    };
  }
  return { name: "zstd", configuration: { level: codec.level, checksum: codec.checksum } };
}

/** The array's zarr.json document, in the key order and spelling of the Julia and Rust writers. */
export function arrayZarrJson(layout: ArrayLayout): ZarrArrayMetadata {
  validateLayout(layout);
  const little = { name: "bytes", configuration: { endian: "little" } };
  return {
    zarr_format: 3,
    node_type: "array",
    shape: [...layout.shape],
    data_type: layout.dtype,
    chunk_grid: { name: "regular", configuration: { chunk_shape: [...layout.shardShape] } },
    chunk_key_encoding: { name: "default", configuration: { separator: "/" } },
    fill_value: 0,
    codecs: [
      {
        name: "sharding_indexed",
        configuration: {
          chunk_shape: [...layout.chunkShape],
          codecs: [little, innerCodecJson(layout.codec)],
          index_codecs: [little, { name: "crc32c" }],
          index_location: layout.indexLocation ?? "end",
        },
      },
    ],
    attributes: { ...layout.attributes, _ARRAY_DIMENSIONS: [...layout.dimensionNames] },
    dimension_names: [...layout.dimensionNames],
  };
}

/** A group's zarr.json document. */
export function groupZarrJson(attributes: Attrs): ZarrGroupMetadata {
  if (!isRecord(attributes)) fail("group zarr.json", "/attributes", "must be an object");
  return { zarr_format: 3, node_type: "group", attributes: { ...attributes } };
}

/**
 * UTF-8 of JSON.stringify(doc, null, 2) with no trailing newline (the Rust writer's form). A float
 * array's zero fill is spelled 0.0, as Julia and Rust write it, so the documents compare equal as text.
 */
export function encodeZarrJson(doc: object): Uint8Array {
  let text = JSON.stringify(doc, null, 2);
  const d = doc as Record<string, unknown>;
  if (d.node_type === "array" && typeof d.data_type === "string" && d.data_type.startsWith("float")) {
    // Two-space indent matches only the top-level key, never one nested in attributes.
    text = text.replace(/\n {2}"fill_value": 0(,?)\n/, '\n  "fill_value": 0.0$1\n');
  }
  return new TextEncoder().encode(text);
}

function parseBytesCodec(document: string, pointer: string, c: Record<string, unknown>): void {
  const cfg = c.configuration;
  if (cfg === undefined) return; // single-byte dtypes may omit the endian
  if (!isRecord(cfg)) fail(document, `${pointer}/configuration`, "must be an object");
  if (cfg.endian !== undefined && cfg.endian !== "little") {
    fail(
      document,
      `${pointer}/configuration/endian`,
      `only "little" is supported, got ${JSON.stringify(cfg.endian)}`,
    );
  }
}

function parseCompressor(
  document: string,
  pointer: string,
  c: Record<string, unknown>,
  dtype: DType,
): CodecSpec {
  const cfg = c.configuration ?? {};
  const at = `${pointer}/configuration`;
  if (!isRecord(cfg)) fail(document, at, "must be an object");
  if (c.name === "blosc") {
    if (cfg.cname !== "zstd") fail(document, `${at}/cname`, `only blosc cname "zstd" is supported`);
    const shuffle = SHUFFLE_NAMES.indexOf(cfg.shuffle as (typeof SHUFFLE_NAMES)[number]);
    if (shuffle < 0) fail(document, `${at}/shuffle`, `must be one of ${JSON.stringify(SHUFFLE_NAMES)}`);
    const typesize = cfg.typesize ?? itemSize(dtype);
    const blocksize = cfg.blocksize ?? 0;
    if (blocksize !== 0) fail(document, `${at}/blocksize`, "only blocksize 0 (automatic) is supported");
    const spec = { kind: "blosc", cname: "zstd", clevel: cfg.clevel, shuffle, typesize, blocksize: 0 };
    checkCodec(document, at, spec);
    return spec as CodecSpec;
  }
  if (c.name === "zstd") {
    const spec = { kind: "zstd", level: cfg.level ?? 0, checksum: cfg.checksum ?? false };
    checkCodec(document, at, spec);
    return spec as CodecSpec;
  }
  return fail(
    document,
    `${pointer}/name`,
    `unsupported inner codec ${JSON.stringify(c.name)} (blosc or zstd)`,
  );
}

function codecList(document: string, pointer: string, v: unknown): Record<string, unknown>[] {
  if (!Array.isArray(v)) fail(document, pointer, "must be an array of codecs");
  v.forEach((c, i) => {
    if (!isRecord(c) || typeof c.name !== "string")
      fail(document, `${pointer}/${i}`, "must be {name, configuration?}");
  });
  return v as Record<string, unknown>[];
}

function parseSharding(document: string, codecs: unknown, shard: number[], dtype: DType) {
  const list = codecList(document, "/codecs", codecs);
  const sharding = list[0];
  if (list.length !== 1 || sharding?.name !== "sharding_indexed") {
    fail(document, "/codecs", "array is not sharded: codecs must be exactly [sharding_indexed]");
  }
  const at = "/codecs/0/configuration";
  const cfg = sharding.configuration;
  if (!isRecord(cfg)) fail(document, at, "must be an object");
  const chunk = intList(document, `${at}/chunk_shape`, cfg.chunk_shape, 1, shard.length);
  checkDivides(document, `${at}/chunk_shape`, chunk, shard);
  const shardAt = "/chunk_grid/configuration/chunk_shape";
  checkCodecBounds(document, { shard: shardAt, chunk: `${at}/chunk_shape` }, shard, chunk, dtype);

  const inner = codecList(document, `${at}/codecs`, cfg.codecs);
  if (inner.length !== 2 || inner[0]?.name !== "bytes") {
    fail(document, `${at}/codecs`, "inner codecs must be [bytes, blosc|zstd]");
  }
  parseBytesCodec(document, `${at}/codecs/0`, inner[0]);
  const codec = parseCompressor(document, `${at}/codecs/1`, inner[1]!, dtype);

  const index = codecList(document, `${at}/index_codecs`, cfg.index_codecs);
  if (index.length !== 2 || index[0]?.name !== "bytes" || index[1]?.name !== "crc32c") {
    fail(document, `${at}/index_codecs`, "index codecs must be [bytes, crc32c]");
  }
  parseBytesCodec(document, `${at}/index_codecs/0`, index[0]);
  const loc = cfg.index_location ?? "end";
  if (loc !== "end" && loc !== "start") fail(document, `${at}/index_location`, 'must be "start" or "end"');
  return { chunk, codec, indexLocation: loc as "start" | "end" };
}

function parseNames(document: string, doc: Record<string, unknown>, attrs: Attrs, rank: number): string[] {
  const names = doc.dimension_names;
  const legacy = attrs._ARRAY_DIMENSIONS;
  const check = (pointer: string, v: unknown): string[] => {
    if (!Array.isArray(v) || v.length !== rank) fail(document, pointer, `must list ${rank} dimension names`);
    v.forEach((n, i) => {
      if (typeof n !== "string") fail(document, `${pointer}/${i}`, "dimension name must be a string");
    });
    return [...(v as string[])];
  };
  if (names === undefined) {
    if (legacy === undefined)
      fail(document, "/dimension_names", "absent, and no attributes/_ARRAY_DIMENSIONS");
    return check("/attributes/_ARRAY_DIMENSIONS", legacy);
  }
  const out = check("/dimension_names", names);
  if (
    legacy !== undefined &&
    JSON.stringify(check("/attributes/_ARRAY_DIMENSIONS", legacy)) !== JSON.stringify(out)
  ) {
    fail(document, "/attributes/_ARRAY_DIMENSIONS", "differs from dimension_names");
  }
  return out;
}

/**
 * Reads an array's zarr.json as written by zarr-stream, the Julia/Rust writers, zarr-python 3 or
 * TensorStore. Anything zarr-stream cannot decode bitwise (another fill value, big-endian bytes, an
 * unsharded or differently sharded array) is a SchemaError with the JSON pointer of the offending field.
 */
export function parseArrayZarrJson(doc: unknown, key = "zarr.json"): ArrayLayout {
  if (!isRecord(doc)) fail(key, "", "must be a JSON object");
  if (doc.zarr_format !== 3) fail(key, "/zarr_format", "must be 3");
  if (doc.node_type !== "array")
    fail(key, "/node_type", `must be "array", got ${JSON.stringify(doc.node_type)}`);
  const shape = intList(key, "/shape", doc.shape, 0);
  const dtype = doc.data_type;
  if (!isDType(dtype)) fail(key, "/data_type", `unsupported data_type ${JSON.stringify(dtype)}`);

  const grid = doc.chunk_grid;
  if (!isRecord(grid) || grid.name !== "regular" || !isRecord(grid.configuration)) {
    fail(key, "/chunk_grid", 'must be {"name": "regular", "configuration": {...}}');
  }
  const shard = intList(
    key,
    "/chunk_grid/configuration/chunk_shape",
    grid.configuration.chunk_shape,
    1,
    shape.length,
  );

  const enc = doc.chunk_key_encoding ?? { name: "default" };
  if (!isRecord(enc) || enc.name !== "default")
    fail(key, "/chunk_key_encoding", 'only the "default" encoding');
  const sep = isRecord(enc.configuration) ? (enc.configuration.separator ?? "/") : "/";
  if (sep !== "/") fail(key, "/chunk_key_encoding/configuration/separator", 'only the "/" separator');

  if (doc.fill_value !== 0 || Object.is(doc.fill_value, -0)) {
    fail(
      key,
      "/fill_value",
      `must be 0 (missing chunks decode as zero), got ${JSON.stringify(doc.fill_value)}`,
    );
  }
  const st = doc.storage_transformers;
  if (st !== undefined && !(Array.isArray(st) && st.length === 0))
    fail(key, "/storage_transformers", "must be empty");

  const { chunk, codec, indexLocation } = parseSharding(key, doc.codecs, shard, dtype);
  const rawAttrs = doc.attributes ?? {};
  if (!isRecord(rawAttrs)) fail(key, "/attributes", "must be an object");
  const dimensionNames = parseNames(key, doc, rawAttrs, shape.length);
  const { _ARRAY_DIMENSIONS: _, ...attributes } = rawAttrs;
  const layout: ArrayLayout = {
    shape,
    shardShape: shard,
    chunkShape: chunk,
    dtype,
    codec,
    dimensionNames,
    attributes,
  };
  if (indexLocation === "start") layout.indexLocation = "start";
  return layout;
}

/** Shards per dim: ceil(shape / shardShape). */
export function shardGrid(layout: ArrayLayout): number[] {
  return layout.shape.map((n, d) => Math.ceil(n / layout.shardShape[d]!));
}

/** Inner chunks per shard along each dim. */
export function chunksPerShard(layout: ArrayLayout): number[] {
  return layout.shardShape.map((s, d) => s / layout.chunkShape[d]!);
}

/** The store key of a shard object: "<array>/c/<i0>/<i1>/..." ("c/<i0>/..." for the root array). */
export function shardKey(arrayPath: string, shardIndex: number[]): string {
  if (typeof arrayPath !== "string" || arrayPath.startsWith("/") || arrayPath.endsWith("/")) {
    fail("shardKey", "/arrayPath", `must be a relative path without a leading or trailing "/"`);
  }
  shardIndex.forEach((i, d) => {
    if (!Number.isSafeInteger(i) || i < 0)
      fail("shardKey", `/shardIndex/${d}`, `must be an integer >= 0, got ${i}`);
  });
  const tail = ["c", ...shardIndex.map(String)].join("/");
  return arrayPath === "" ? tail : `${arrayPath}/${tail}`;
}
