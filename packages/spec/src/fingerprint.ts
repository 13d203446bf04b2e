import { sha256 } from "@noble/hashes/sha2.js";
import { bytesToHex, utf8ToBytes } from "@noble/hashes/utils.js";
import { canonicalJson } from "./canonical-json.js";
import type { StreamSchema, VariableSpec } from "./types.js";

/** Seed §3.1 F: the part of a stream schema every writer of one store must agree on. */
export interface FingerprintDocument {
  chunk_shape: Record<string, number>;
  dims: [string, number][];
  profile: string;
  shard_shape: Record<string, number>;
  statics: [string, string[], string][];
  time_dim: string;
  time_mode: "append" | "indexed";
  vars: [string, string[], string][];
}

function triples(specs: VariableSpec[]): [string, string[], string][] {
  return specs.map((v) => [v.name, [...v.dims], v.dtype]);
}

/** Number of records on the time axis fixed at create: times.length in indexed mode, 0 in append mode. */
export function timeLength(schema: StreamSchema): number {
  return schema.time_mode === "append" ? 0 : schema.time_mode.indexed.times.length;
}

/**
 * Builds F exactly as seed §3.1 lists it. The schema is taken as already validated (validateStreamSchema);
 * coords and attrs are deliberately not part of F.
 */
export function fingerprintDocument(schema: StreamSchema): FingerprintDocument {
  const timeLen = timeLength(schema);
  return {
    chunk_shape: { ...schema.chunk_shape },
    dims: schema.dims.map(([name, length]) => [name, name === schema.time_dim ? timeLen : length]),
    profile: schema.profile,
    shard_shape: { ...schema.shard_shape },
    statics: triples(schema.statics),
    time_dim: schema.time_dim,
    time_mode: schema.time_mode === "append" ? "append" : "indexed",
    vars: triples(schema.vars),
  };
}

/** "sha256:" + lowercase hex of sha256(canonical_json(F)). */
export function schemaFingerprint(schema: StreamSchema): string {
  return `sha256:${bytesToHex(sha256(utf8ToBytes(canonicalJson(fingerprintDocument(schema)))))}`;
}
