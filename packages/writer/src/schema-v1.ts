import type { OutputManifestV1, StreamSchema } from "@zarr-stream/spec";

/** Rebuilds the stream schema of a v1 store (Single, append, no statics) from its manifest. */
export function schemaFromManifestV1(m: OutputManifestV1): StreamSchema {
  return {
    dims: m.dims.map((d) => [d.name, d.name === m.time_dim ? 0 : d.length]),
    time_dim: m.time_dim,
    time_mode: "append",
    vars: m.vars.map((v) => ({
      name: v.name,
      dims: [...v.dims],
      dtype: v.dtype,
      ...(v.attrs ? { attrs: v.attrs } : {}),
    })),
    statics: [],
    chunk_shape: { ...m.chunk_shape },
    shard_shape: { ...m.shard_shape },
    profile: m.profile,
  };
}
