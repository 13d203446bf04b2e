import { canonicalJson } from "./canonical-json.js";
import { CommitError } from "./errors.js";
import type { Region } from "./types.js";

export interface WriterRegion {
  writer: number;
  region: Region;
}

/** Boxes over the region dims only, as flat start/stop arrays (box i, dim k at i * nDims + k). */
interface Boxes {
  writers: number[];
  lengths: number[];
  start: number[];
  stop: number[];
}

function toBoxes(
  regions: readonly WriterRegion[],
  dims: [string, number][],
  regionDimNames: string[],
): Boxes {
  const lengths = regionDimNames.map((d) => {
    const entry = dims.find(([name]) => name === d);
    if (entry === undefined)
      throw new CommitError(`region dim "${d}" is not a dim of the schema`, "region-dims");
    return entry[1];
  });
  const boxes: Boxes = { writers: [], lengths, start: [], stop: [] };
  for (const { writer, region } of regions) {
    boxes.writers.push(writer);
    regionDimNames.forEach((d, k) => {
      const [start, stop] = region[d] ?? [0, lengths[k]!];
      if (
        !(
          Number.isSafeInteger(start) &&
          Number.isSafeInteger(stop) &&
          start >= 0 &&
          start < stop &&
          stop <= lengths[k]!
        )
      ) {
        throw new CommitError(
          `writer ${writer}: region ${d} [${start}, ${stop}) lies outside [0, ${lengths[k]})`,
          "alignment",
          [writer],
        );
      }
      boxes.start.push(start);
      boxes.stop.push(stop);
    });
  }
  return boxes;
}

/**
 * Sweep along the dim with the most distinct starts (for grid-like tilings the active set then stays
 * near n^(1-1/k)), checking each new box only against boxes still open on that dim.
 */
function findOverlap(b: Boxes): [number, number] | undefined {
  const n = b.writers.length;
  const k = b.lengths.length;
  if (k === 0) return n > 1 ? [0, 1] : undefined; // every box is the whole (0-dim) domain
  let sweep = 0;
  let most = -1;
  for (let d = 0; d < k; d++) {
    const distinct = new Set<number>();
    for (let i = 0; i < n; i++) distinct.add(b.start[i * k + d]!);
    if (distinct.size > most) {
      most = distinct.size;
      sweep = d;
    }
  }
  const order = Array.from({ length: n }, (_, i) => i).sort(
    (x, y) => b.start[x * k + sweep]! - b.start[y * k + sweep]!,
  );
  let active: number[] = [];
  for (const i of order) {
    const s = b.start[i * k + sweep]!;
    active = active.filter((a) => b.stop[a * k + sweep]! > s);
    for (const a of active) {
      let meets = true;
      for (let d = 0; d < k && meets; d++) {
        if (d === sweep) continue;
        meets = b.start[a * k + d]! < b.stop[i * k + d]! && b.start[i * k + d]! < b.stop[a * k + d]!;
      }
      if (meets) return [a, i];
    }
    active.push(i);
  }
  return undefined;
}

function volume(b: Boxes, i: number, fromDim: number): bigint {
  const k = b.lengths.length;
  let v = 1n;
  for (let d = fromDim; d < k; d++) v *= BigInt(b.stop[i * k + d]! - b.start[i * k + d]!);
  return v;
}

/**
 * With no overlaps, finds one uncovered cell: along dim d, walk the elementary slabs between box edges
 * keeping the covered cross-section volume; the first slab short of the full cross-section holds a gap,
 * so recurse into it with the boxes spanning it. Only runs when the total volume is short.
 */
function findGap(
  b: Boxes,
  ids: number[],
  d: number,
  cell: [number, number][],
): [number, number][] | undefined {
  const k = b.lengths.length;
  if (d === k) return ids.length === 0 ? cell : undefined;
  let crossFull = 1n;
  for (let e = d + 1; e < k; e++) crossFull *= BigInt(b.lengths[e]!);
  const edges = new Set<number>([0, b.lengths[d]!]);
  for (const i of ids) {
    edges.add(b.start[i * k + d]!);
    edges.add(b.stop[i * k + d]!);
  }
  const points = [...edges].sort((x, y) => x - y);
  const byStart = [...ids].sort((x, y) => b.start[x * k + d]! - b.start[y * k + d]!);
  const byStop = [...ids].sort((x, y) => b.stop[x * k + d]! - b.stop[y * k + d]!);
  let covered = 0n;
  let s = 0;
  let e = 0;
  for (let p = 0; p + 1 < points.length; p++) {
    const at = points[p]!;
    while (s < byStart.length && b.start[byStart[s]! * k + d]! <= at)
      covered += volume(b, byStart[s++]!, d + 1);
    while (e < byStop.length && b.stop[byStop[e]! * k + d]! <= at) covered -= volume(b, byStop[e++]!, d + 1);
    if (covered < crossFull) {
      const spanning = ids.filter((i) => b.start[i * k + d]! <= at && b.stop[i * k + d]! > at);
      const found = findGap(b, spanning, d + 1, [...cell, [at, points[p + 1]!]]);
      if (found) return found;
    }
  }
  return undefined;
}

/** Writers whose box shares a face with the cell. */
function adjacentWriters(b: Boxes, cell: [number, number][]): number[] {
  const k = b.lengths.length;
  const out: number[] = [];
  for (let i = 0; i < b.writers.length; i++) {
    let touching = 0;
    let overlapping = 0;
    for (let d = 0; d < k; d++) {
      const [c0, c1] = cell[d]!;
      const s = b.start[i * k + d]!;
      const t = b.stop[i * k + d]!;
      if (t === c0 || s === c1) touching++;
      else if (s < c1 && c0 < t) overlapping++;
    }
    if (touching === 1 && overlapping === k - 1) out.push(b.writers[i]!);
  }
  return out.sort((x, y) => x - y);
}

/**
 * Seed §5.3 check 3: the writers' regions over the region dims must be pairwise disjoint (else CommitError
 * "overlap" naming writers a and b) and cover the full extent (else CommitError "gap" naming an uncovered
 * cell and the writers next to it). No overlap plus volumes summing to the full extent is an exact cover.
 * Dims missing from a region are full extent. Regions are expected aligned (checkRegionAligned); ends
 * outside the dim are CommitError "alignment".
 */
export function checkTiling(
  regions: readonly WriterRegion[],
  dims: [string, number][],
  regionDimNames: readonly string[],
): void {
  const names = [...regionDimNames];
  const boxes = toBoxes(regions, dims, names);
  const overlap = findOverlap(boxes);
  if (overlap) {
    const [a, b] = overlap.map((i) => boxes.writers[i]!).sort((x, y) => x - y) as [number, number];
    throw new CommitError(`overlap between writers ${a} and ${b}`, "overlap", [a, b]);
  }
  let total = 1n;
  for (const length of boxes.lengths) total *= BigInt(length);
  let sum = 0n;
  for (let i = 0; i < boxes.writers.length; i++) sum += volume(boxes, i, 0);
  if (sum === total) return;
  const all = Array.from({ length: boxes.writers.length }, (_, i) => i);
  const cell = findGap(boxes, all, 0, []) ?? [];
  const where: Region = {};
  names.forEach((d, k) => {
    where[d] = cell[k] ?? [0, boxes.lengths[k]!];
  });
  const near = adjacentWriters(boxes, cell);
  const nearText = near.length > 0 ? ` (next to writers ${near.join(", ")})` : "";
  throw new CommitError(`gap: no writer covers ${canonicalJson(where)}${nearText}`, "gap", near);
}
