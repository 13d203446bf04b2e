import {
  type CorpusSchema,
  type CorpusVariable,
  fillGenerated,
  type GeneratedArray,
  type RecordArrays,
  type Region,
} from "@zarr-stream/spec";

/** The variable's dims without the time dim, in its own order (the generator's index order). */
export function dimsNoTime(schema: CorpusSchema, v: CorpusVariable): string[] {
  return v.dims.filter((d) => d !== schema.time_dim);
}

export function dimLength(schema: CorpusSchema, dim: string): number {
  const entry = schema.dims.find(([d]) => d === dim);
  return entry ? entry[1] : 0;
}

/** Global [start, stop) per dim: the region's range where it names the dim, the full extent elsewhere. */
export function boxOf(
  schema: CorpusSchema,
  dims: string[],
  region: Region,
): Record<string, [number, number]> {
  const box: Record<string, [number, number]> = {};
  for (const d of dims) box[d] = region[d] ?? [0, dimLength(schema, d)];
  return box;
}

/** Seed §10 values of generator record r for `v` over `region` (a static uses r = 0). */
export function generated(
  schema: CorpusSchema,
  v: CorpusVariable,
  r: number,
  region: Region,
): GeneratedArray {
  const dims = dimsNoTime(schema, v);
  return fillGenerated(v.dtype, v.seed, r, dims, boxOf(schema, dims, region));
}

/**
 * The arrays a writer passes to write_record for generator record r. By default an owner or Single writer
 * supplies every variable and a contributor only the partitioned ones (seed §4); `only` overrides that,
 * so a case can make a contributor supply a replicated variable and check that it is refused.
 */
export function recordArraysFor(
  schema: CorpusSchema,
  r: number,
  region: Region,
  isOwner: boolean,
  only?: string[],
): RecordArrays {
  const regionDims = Object.keys(region);
  const out: RecordArrays = {};
  for (const v of schema.vars) {
    const partitioned = v.dims.some((d) => regionDims.includes(d));
    const supplied = only ? only.includes(v.name) : isOwner || partitioned;
    if (supplied) out[v.name] = generated(schema, v, r, region);
  }
  return out;
}
