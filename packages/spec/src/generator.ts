import { SchemaError } from "./errors.js";
import type { StreamDType } from "./types.js";

/** Seed §10 generator weights, one per non-time dim in the variable's dim order. */
const P = [3, 5, 11, 17, 23] as const;

const LITTLE_ENDIAN = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1;

export type GeneratedArray = Float64Array | Float32Array | Int32Array | BigInt64Array | Uint8Array;

function checkRank(rank: number): void {
  if (rank > P.length) {
    throw new SchemaError(
      `generator: ${rank} non-time dims, the seed §10 generator defines at most ${P.length}`,
    );
  }
}

/** Python's `%` (result has the divisor's sign), so negative seeds give the same uint8 as the Python driver. */
function mod251(x: number): number {
  return ((x % 251) + 251) % 251;
}

/**
 * Seed §10: the value of a variable with integer `seed` at record r (0 for a static) and global non-time
 * indices (in the variable's dim order): base = seed + 13 r + Σ (i_j + 1) P[j]; floats add 0.25, uint8
 * takes base mod 251, int64 is returned as a bigint.
 */
export function generatorValue(
  seed: number,
  r: number,
  indices: readonly number[],
  dtype: StreamDType,
): number | bigint {
  checkRank(indices.length);
  let base = seed + 13 * r;
  indices.forEach((i, j) => {
    base += (i + 1) * P[j]!;
  });
  switch (dtype) {
    case "float64":
    case "float32":
      return base + 0.25;
    case "int32":
      return base;
    case "int64":
      return BigInt(base);
    case "uint8":
      return mod251(base);
  }
}

function allocate(dtype: StreamDType, n: number): GeneratedArray {
  switch (dtype) {
    case "float64":
      return new Float64Array(n);
    case "float32":
      return new Float32Array(n);
    case "int32":
      return new Int32Array(n);
    case "int64":
      return new BigInt64Array(n);
    case "uint8":
      return new Uint8Array(n);
  }
}

/**
 * The generator's values over a region, row-major in the region's shape (dims in `varDimsNoTime` order,
 * each [start, stop) in GLOBAL indices). Sums are carried incrementally: one add per element along the
 * last dim, one per step of an outer dim. Writes into `out` when given (same dtype and length).
 */
export function fillGenerated(
  dtype: StreamDType,
  seed: number,
  r: number,
  varDimsNoTime: readonly string[],
  region: Readonly<Record<string, readonly [number, number]>>,
  out?: GeneratedArray,
): GeneratedArray {
  const rank = varDimsNoTime.length;
  checkRank(rank);
  const ranges = varDimsNoTime.map((d) => {
    const range = region[d];
    if (range === undefined || !(range[0] >= 0 && range[1] >= range[0])) {
      throw new SchemaError(`generator: no valid [start, stop) for dim "${d}"`);
    }
    return range;
  });
  const total = ranges.reduce((n, [s, t]) => n * (t - s), 1);
  const target = out ?? allocate(dtype, total);
  if (target.length !== total || target.constructor !== allocate(dtype, 0).constructor) {
    throw new SchemaError(`generator: out must be a ${dtype} array of length ${total}`);
  }
  if (total === 0) return target;
  const offset = dtype === "float64" || dtype === "float32" ? 0.25 : 0;
  const last = rank - 1;
  const innerLength = rank === 0 ? 1 : ranges[last]![1] - ranges[last]![0];
  const innerStep = rank === 0 ? 0 : P[last]!;
  // Outer-dim counters and the base they contribute, advanced like an odometer.
  const index = ranges.slice(0, Math.max(last, 0)).map(([s]) => s);
  let outer = seed + 13 * r;
  index.forEach((i, j) => {
    outer += (i + 1) * P[j]!;
  });
  const words =
    target instanceof BigInt64Array && LITTLE_ENDIAN
      ? new Uint32Array(target.buffer, target.byteOffset, target.length * 2)
      : undefined;
  const innerStart = rank === 0 ? 0 : (ranges[last]![0] + 1) * innerStep;
  for (let pos = 0; pos < total; pos += innerLength) {
    let v = outer + innerStart;
    if (words !== undefined) {
      // int64 as two 32-bit words: a BigInt per element costs ~10x more than the whole fill.
      for (let k = 0; k < innerLength; k++, v += innerStep) {
        const hi = Math.floor(v / 4294967296);
        words[2 * (pos + k)] = v - hi * 4294967296;
        words[2 * (pos + k) + 1] = hi;
      }
    } else if (target instanceof BigInt64Array) {
      for (let k = 0; k < innerLength; k++, v += innerStep) target[pos + k] = BigInt(v);
    } else if (dtype === "uint8") {
      for (let k = 0; k < innerLength; k++, v += innerStep) target[pos + k] = mod251(v);
    } else {
      for (let k = 0; k < innerLength; k++, v += innerStep) target[pos + k] = v + offset;
    }
    for (let j = last - 1; j >= 0; j--) {
      const [s, t] = ranges[j]!;
      index[j]! += 1;
      outer += P[j]!;
      if (index[j]! < t) break;
      outer -= (t - s) * P[j]!;
      index[j] = s;
    }
  }
  return target;
}
