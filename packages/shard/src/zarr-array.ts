import {
  type DType,
  SchemaError,
  validateZarrArrayMetadata,
  type ZarrArrayMetadata,
} from "@zarr-stream/spec";
import type { ChunkPipeline } from "./codec-model.js";
import { buildPipeline } from "./codec-pipeline.js";
import { isRecord } from "./codecs/config.js";
import { isDType } from "./dtype.js";
import { parseFillValue } from "./fill-value.js";
import { type ArrayLayout, parseArrayZarrJson } from "./metadata.js";

/** How chunk indices become store keys (Zarr v3 "default": "c/0/1"; "v2": "0.1"). */
export interface ChunkKeyEncoding {
  name: "default" | "v2";
  separator: "/" | ".";
}

/** Any Zarr v3 array whose codecs we have, ready to read. */
export interface ZarrArray {
  metadata: ZarrArrayMetadata;
  shape: number[];
  dtype: DType;
  /** The regular chunk grid's chunk shape: one store object per chunk. */
  chunkShape: number[];
  fill: number | bigint;
  keyEncoding: ChunkKeyEncoding;
  /** The codecs every chunk object goes through. */
  pipeline: ChunkPipeline;
  /**
   * Set when the array uses zarr-stream's own pipeline (sharding_indexed over bytes and Blosc-zstd or
   * zstd, CRC-32C index, fill 0): reads then take the fused ranged-read path of ranged-read.ts.
   */
  layout?: ArrayLayout;
}

function fail(document: string, pointer: string, reason: string): never {
  throw new SchemaError(`${document}: ${pointer}: ${reason}`, pointer, document);
}

function parseKeyEncoding(meta: ZarrArrayMetadata, document: string): ChunkKeyEncoding {
  const { name, configuration } = meta.chunk_key_encoding;
  if (name !== "default" && name !== "v2")
    fail(document, "/chunk_key_encoding/name", `unknown encoding ${JSON.stringify(name)}`);
  const separator = configuration?.separator ?? (name === "default" ? "/" : ".");
  if (separator !== "/" && separator !== ".")
    fail(
      document,
      "/chunk_key_encoding/configuration/separator",
      `must be "/" or ".", got ${JSON.stringify(separator)}`,
    );
  return { name, separator };
}

function parseChunkShape(meta: ZarrArrayMetadata, document: string): number[] {
  const grid = meta.chunk_grid;
  if (grid.name !== "regular")
    fail(document, "/chunk_grid/name", `only the "regular" grid, got ${JSON.stringify(grid.name)}`);
  const shape = grid.configuration?.chunk_shape;
  const at = "/chunk_grid/configuration/chunk_shape";
  if (!Array.isArray(shape) || shape.length !== meta.shape.length)
    fail(document, at, `must list ${meta.shape.length} chunk sizes`);
  shape.forEach((c, d) => {
    if (!Number.isSafeInteger(c) || c < 1)
      fail(document, `${at}/${d}`, `must be an integer >= 1, got ${JSON.stringify(c)}`);
  });
  return [...(shape as number[])];
}

/**
 * Opens an array's zarr.json: the Zarr v3 core schema (ajv, @zarr-stream/spec), then the chunk grid, key
 * encoding, data type, fill value and every codec, so a codec we lack is UnsupportedCodec naming it before
 * any chunk is read. Our own pipeline is recognised and gets `layout` (the fast path).
 */
export function openZarrArray(doc: unknown, key = "zarr.json"): ZarrArray {
  if (!isRecord(doc)) fail(key, "", "must be a JSON object");
  const metadata = validateZarrArrayMetadata(doc, key);
  if (metadata.node_type !== "array") fail(key, "/node_type", 'must be "array"');
  const dtype = metadata.data_type;
  if (!isDType(dtype)) fail(key, "/data_type", `unsupported data_type ${JSON.stringify(dtype)}`);
  if ((metadata.storage_transformers ?? []).length > 0) fail(key, "/storage_transformers", "must be empty");
  const chunkShape = parseChunkShape(metadata, key);
  const keyEncoding = parseKeyEncoding(metadata, key);
  const fill = parseFillValue(metadata.fill_value, dtype, key);
  const pipeline = buildPipeline(metadata.codecs, { shape: chunkShape, dtype, fill }, "/codecs", key);
  const array: ZarrArray = {
    metadata,
    shape: [...metadata.shape],
    dtype,
    chunkShape,
    fill,
    keyEncoding,
    pipeline,
  };
  const layout = ownLayout(doc, key);
  if (layout !== undefined) array.layout = layout;
  return array;
}

/** The fast path's layout when parseArrayZarrJson, which accepts exactly our own pipeline, takes the array. */
function ownLayout(doc: unknown, key: string): ArrayLayout | undefined {
  try {
    return parseArrayZarrJson(doc, key);
  } catch (e) {
    if (e instanceof SchemaError) return undefined;
    throw e;
  }
}

/** The store key of chunk `index` of the array at `arrayPath` ("" for the root array). */
export function chunkKey(
  arrayPath: string,
  array: Pick<ZarrArray, "keyEncoding">,
  index: readonly number[],
): string {
  const { name, separator } = array.keyEncoding;
  const tail =
    name === "default" ? ["c", ...index].join(separator) : index.length === 0 ? "0" : index.join(separator);
  return arrayPath === "" ? tail : `${arrayPath}/${tail}`;
}
