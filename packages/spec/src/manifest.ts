import { checkStreamSchemaSemantics } from "./stream-schema.js";
import type { OutputManifestV2, StreamSchema, VariableSpec } from "./types.js";

function copySpec(v: VariableSpec): VariableSpec {
  return v.attrs === undefined
    ? { name: v.name, dims: [...v.dims], dtype: v.dtype }
    : { ...v, dims: [...v.dims] };
}

/**
 * Seed §8.2: the stream schema join/resume rebuild from a v2 manifest (dims, time_dim, vars, statics,
 * chunk/shard shape, profile, time_mode and, indexed, records.entries[*].t). Coords and group attrs are
 * not in the manifest and not needed for the fingerprint. The result is checked like any schema.
 */
export function schemaFromManifest(m: OutputManifestV2): StreamSchema {
  const times = m.records?.entries.map((e) => e.t) ?? [];
  const schema: StreamSchema = {
    dims: m.dims.map((d): [string, number] => [
      d.name,
      d.name === m.time_dim ? (m.time_mode === "append" ? 0 : times.length) : d.length,
    ]),
    time_dim: m.time_dim,
    time_mode: m.time_mode === "append" ? "append" : { indexed: { times } },
    vars: m.vars.map(copySpec),
    statics: m.statics.map(copySpec),
    chunk_shape: { ...m.chunk_shape },
    shard_shape: { ...m.shard_shape },
    profile: m.profile,
  };
  return checkStreamSchemaSemantics(schema, "stream schema (rebuilt from output manifest v2)");
}
