import { SchemaError } from "@zarr-stream/spec";
import type { ArrayLayout } from "./metadata.js";

export function product(xs: readonly number[]): number {
  let p = 1;
  for (const x of xs) p *= x;
  return p;
}

/** Calls `visit` for every index of the box `lo <= idx < hi` in C order (last dim fastest); rank 0 visits once. */
export function forEachIndex(
  lo: readonly number[],
  hi: readonly number[],
  visit: (idx: number[]) => void,
): void {
  const rank = lo.length;
  for (let d = 0; d < rank; d++) if (lo[d]! >= hi[d]!) return;
  const idx = [...lo];
  for (;;) {
    visit(idx);
    let d = rank - 1;
    while (d >= 0) {
      idx[d]!++;
      if (idx[d]! < hi[d]!) break;
      idx[d] = lo[d]!;
      d--;
    }
    if (d < 0) return;
  }
}

/** Row-major linear position of `idx` in a grid of `shape`. */
export function linearIndex(idx: readonly number[], shape: readonly number[]): number {
  let k = 0;
  for (let d = 0; d < shape.length; d++) k = k * shape[d]! + idx[d]!;
  return k;
}

export function checkShardIndex(layout: ArrayLayout, shardIndex: readonly number[], where: string): void {
  if (!Array.isArray(shardIndex) || shardIndex.length !== layout.shape.length) {
    throw new SchemaError(`${where}: shardIndex must have rank ${layout.shape.length}`, "/shardIndex", where);
  }
  shardIndex.forEach((i, d) => {
    if (!Number.isSafeInteger(i) || i < 0) {
      throw new SchemaError(
        `${where}: shardIndex[${d}] = ${i} is not an integer >= 0`,
        `/shardIndex/${d}`,
        where,
      );
    }
  });
}
