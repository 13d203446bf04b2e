import { canonicalJson, compareCodePoints } from "./canonical-json.js";
import { RegionNotShardAligned, SchemaError } from "./errors.js";
import type { Region } from "./types.js";
import { pointerToken } from "./validate.js";

function lengthOf(dims: [string, number][], dim: string): number | undefined {
  for (const [name, length] of dims) if (name === dim) return length;
  return undefined;
}

function checkPair(dim: string, pair: unknown): [number, number] {
  const pointer = `/${pointerToken(dim)}`;
  if (
    !Array.isArray(pair) ||
    pair.length !== 2 ||
    !Number.isSafeInteger(pair[0]) ||
    !Number.isSafeInteger(pair[1])
  ) {
    throw new SchemaError(
      `region: ${pointer}: dim "${dim}" must be [start, stop) with integer ends`,
      pointer,
      "region",
    );
  }
  return [pair[0] as number, pair[1] as number];
}

/**
 * Seed §4: fills every non-time dim the region omits with its full extent [0, len), in schema dim order.
 * A region naming the time dim or a dim the schema lacks is a SchemaError naming that dim. Alignment and
 * bounds are checkRegionAligned's job.
 */
export function normalizeRegion(region: Region, dims: [string, number][], timeDim: string): Region {
  for (const dim of Object.keys(region)) {
    const pointer = `/${pointerToken(dim)}`;
    if (dim === timeDim) {
      throw new SchemaError(`region: ${pointer}: names the time dim "${dim}"`, pointer, "region");
    }
    if (lengthOf(dims, dim) === undefined) {
      throw new SchemaError(`region: ${pointer}: unknown dim "${dim}"`, pointer, "region");
    }
  }
  const full: Region = {};
  for (const [name, length] of dims) {
    if (name === timeDim) continue;
    const given = region[name];
    full[name] = given === undefined ? [0, length] : checkPair(name, given);
  }
  return full;
}

/**
 * Seed §4 alignment, for every dim the region names: 0 <= start < stop <= len, start % shard == 0 and
 * (stop % shard == 0 or stop == len). Throws RegionNotShardAligned naming the first offending dim.
 */
export function checkRegionAligned(
  region: Region,
  dims: [string, number][],
  shardShape: Record<string, number>,
): void {
  for (const dim of Object.keys(region)) {
    const length = lengthOf(dims, dim);
    const shard = shardShape[dim];
    if (length === undefined || shard === undefined) {
      throw new SchemaError(
        `region: /${pointerToken(dim)}: unknown dim "${dim}"`,
        `/${pointerToken(dim)}`,
        "region",
      );
    }
    const pair = region[dim];
    const [start, stop] = Array.isArray(pair) ? pair : [Number.NaN, Number.NaN];
    const where = `region ${dim}: [${start}, ${stop})`;
    if (!Number.isSafeInteger(start) || !Number.isSafeInteger(stop)) {
      throw new RegionNotShardAligned(`${where}: ends must be integers`, dim);
    }
    if (!(start >= 0 && start < stop && stop <= length)) {
      throw new RegionNotShardAligned(`${where}: must satisfy 0 <= start < stop <= ${length}`, dim);
    }
    if (start % shard !== 0) {
      throw new RegionNotShardAligned(`${where}: start is not a multiple of the shard size ${shard}`, dim);
    }
    if (stop % shard !== 0 && stop !== length) {
      throw new RegionNotShardAligned(
        `${where}: stop is neither a multiple of the shard size ${shard} nor the dim length ${length}`,
        dim,
      );
    }
  }
}

/** The dims a region names, sorted by name (code point order, as Python sorts). */
export function regionDims(region: Region): string[] {
  return Object.keys(region).sort(compareCodePoints);
}

/** The region with its keys in canonical (sorted) order, arrays copied. */
export function canonicalRegion(region: Region): Region {
  const out: Region = {};
  for (const dim of regionDims(region)) {
    const [start, stop] = region[dim]!;
    out[dim] = [start, stop];
  }
  return out;
}

/** Canonical wire text of a region, e.g. {"lat":[0,48],"lon":[0,96]}. */
export function canonicalRegionJson(region: Region): string {
  return canonicalJson(canonicalRegion(region));
}

/** Seed §4: a variable or static is partitioned when its dims include at least one region dim. */
export function isPartitioned(varDims: readonly string[], regionDimNames: readonly string[]): boolean {
  return varDims.some((d) => regionDimNames.includes(d));
}

/**
 * Whether this writer PUTs the shard objects of a variable, so that every shard object has exactly one
 * writer (seed §4):
 * - partitioned variable (has ≥ 1 region dim): true iff the writer's region starts at 0 on every region
 *   dim the variable lacks (a dim missing from `region` counts as full extent, so start 0). For a fully
 *   partitioned variable (it has every region dim) that is every writer: each owns the shards of its
 *   region.
 * - replicated variable (no region dim): only the writer that supplies it, the owner (or Single), writes
 *   it; the region cannot tell who that is, so the caller passes `isOwner`.
 */
export function writesShardsOf(
  varDims: readonly string[],
  region: Region,
  regionDimNames: readonly string[],
  isOwner: boolean,
): boolean {
  if (!isPartitioned(varDims, regionDimNames)) return isOwner;
  return regionDimNames.every((d) => varDims.includes(d) || (region[d]?.[0] ?? 0) === 0);
}

/**
 * The shard index range [first, stopExclusive) per non-time dim of a variable that the given region
 * covers: region dims the variable has are cut to the region (stop rounded up, as a region may end at a
 * partial last shard), every other dim is its full shard range. The time dim is left out: which time
 * shards a flush writes depends on the records, not the region. Combine with writesShardsOf to know
 * whether these shards are this writer's to PUT.
 */
export function ownedShardRanges(
  varDims: readonly string[],
  region: Region,
  shardShape: Record<string, number>,
  dims: [string, number][],
  timeDim: string,
): Record<string, [number, number]> {
  const ranges: Record<string, [number, number]> = {};
  for (const dim of varDims) {
    if (dim === timeDim) continue;
    const length = lengthOf(dims, dim);
    const shard = shardShape[dim];
    if (length === undefined || shard === undefined) {
      throw new SchemaError(`variable dims: unknown dim "${dim}"`, "", "region");
    }
    const [start, stop] = region[dim] ?? [0, length];
    ranges[dim] = [Math.floor(start / shard), Math.ceil(stop / shard)];
  }
  return ranges;
}

/**
 * Store keys `<array>/c/<i0>/<i1>/…` of every shard in the given ranges, row-major (last dim fastest).
 * `ranges` is ownedShardRanges' result; `timeShards` gives the time dim's [first, stopExclusive) when the
 * variable has the time dim.
 */
export function shardKeysFor(
  array: string,
  varDims: readonly string[],
  ranges: Record<string, [number, number]>,
  timeDim: string,
  timeShards?: [number, number],
): string[] {
  const axes = varDims.map((dim) => {
    const range = dim === timeDim ? timeShards : ranges[dim];
    if (range === undefined) {
      throw new SchemaError(`shard keys of "${array}": no shard range for dim "${dim}"`, "", "region");
    }
    return range;
  });
  const keys: string[] = [];
  const index = axes.map(([first]) => first);
  if (axes.some(([first, stop]) => stop <= first)) return keys;
  for (;;) {
    keys.push(index.length === 0 ? `${array}/c` : `${array}/c/${index.join("/")}`);
    let k = axes.length - 1;
    for (; k >= 0; k--) {
      index[k]! += 1;
      if (index[k]! < axes[k]![1]) break;
      index[k] = axes[k]![0];
    }
    if (k < 0) return keys;
  }
}
