import { SchemaError, type TypedArray } from "@zarr-stream/spec";

/** How a variable's non-time dims are shown: the last two as rows (y) and columns (x), the rest fixed. */
export interface Plane {
  /** Dims held at one index each (chosen by the user), in dim order. */
  fixedDims: string[];
  yDim: string | undefined;
  xDim: string | undefined;
}

export function planeOf(dims: readonly string[], timeAxis: number): Plane {
  const rest = dims.filter((_, i) => i !== timeAxis);
  if (rest.length === 0) return { fixedDims: [], yDim: undefined, xDim: undefined };
  if (rest.length === 1) return { fixedDims: [], yDim: undefined, xDim: rest[0] };
  return { fixedDims: rest.slice(0, -2), yDim: rest[rest.length - 2], xDim: rest[rest.length - 1] };
}

/**
 * The per-dim [start, stop) box of one 2-D slice: the record on the time axis, one index on each fixed
 * dim (0 when not chosen), the whole plane dims. A fixed index outside its dim is a SchemaError.
 */
export function sliceSelection(
  dims: readonly string[],
  shape: readonly number[],
  timeAxis: number,
  record: number | undefined,
  fixed: Readonly<Record<string, number>>,
): [number, number][] {
  if (dims.length !== shape.length)
    throw new SchemaError(`slice: ${dims.length} dims but a shape of rank ${shape.length}`);
  const plane = planeOf(dims, timeAxis);
  return dims.map((d, i) => {
    const n = shape[i]!;
    if (i === timeAxis) {
      if (record === undefined || !Number.isInteger(record) || record < 0 || record >= n)
        throw new SchemaError(`slice: record ${record} outside the time axis of length ${n}`, `/${d}`);
      return [record, record + 1];
    }
    if (plane.fixedDims.includes(d)) {
      const at = fixed[d] ?? 0;
      if (!Number.isInteger(at) || at < 0 || at >= n)
        throw new SchemaError(`slice: index ${at} outside dim ${d} of length ${n}`, `/${d}`);
      return [at, at + 1];
    }
    return [0, n];
  });
}

/** Rows and columns of the slice picked by sliceSelection (1 x n for one dim, 1 x 1 for none). */
export function sliceGrid(dims: readonly string[], shape: readonly number[], timeAxis: number) {
  const plane = planeOf(dims, timeAxis);
  const len = (d: string | undefined) => (d === undefined ? 1 : shape[dims.indexOf(d)]!);
  return { ny: len(plane.yDim), nx: len(plane.xDim), plane };
}

/** Display values: int64/uint64 become the nearest double (exact below 2^53). */
export function toNumbers(data: TypedArray): Float64Array {
  const out = new Float64Array(data.length);
  for (let i = 0; i < data.length; i++) out[i] = Number(data[i]!);
  return out;
}

/** True when a coordinate strictly increases: then the plot puts its first value at the bottom. */
export function isIncreasing(coord: ArrayLike<number> | undefined): boolean {
  if (coord === undefined || coord.length < 2) return false;
  for (let i = 1; i < coord.length; i++) if (!(coord[i]! > coord[i - 1]!)) return false;
  return true;
}

/**
 * The data cell under a point of a w x h drawing of an ny x nx grid (point relative to the drawing's
 * top-left corner), or undefined outside it. `flipY` as in paintGrid.
 */
export function cellAt(
  px: number,
  py: number,
  w: number,
  h: number,
  ny: number,
  nx: number,
  flipY: boolean,
): { row: number; col: number } | undefined {
  if (!(px >= 0 && py >= 0 && px < w && py < h) || nx < 1 || ny < 1) return undefined;
  const col = Math.min(nx - 1, Math.floor((px / w) * nx));
  const y = Math.min(ny - 1, Math.floor((py / h) * ny));
  return { row: flipY ? ny - 1 - y : y, col };
}

/** The centre of a cell in drawing coordinates: the inverse of cellAt. */
export function cellCentre(
  row: number,
  col: number,
  w: number,
  h: number,
  ny: number,
  nx: number,
  flipY: boolean,
): { px: number; py: number } {
  const y = flipY ? ny - 1 - row : row;
  return { px: ((col + 0.5) * w) / nx, py: ((y + 0.5) * h) / ny };
}
