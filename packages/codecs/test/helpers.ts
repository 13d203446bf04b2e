import type { DType, Profile } from "@zarr-stream/spec";

/** Every suite runs against both implementations; native must be built (no silent skip). */
export const BACKENDS = ["native", "wasm"] as const;
export const PROFILES: Profile[] = ["diagnostic", "checkpoint", "wasm"];
export const DTYPES: DType[] = ["float64", "float32", "int32", "int64", "uint8", "uint32", "uint64"];

/** Deterministic xorshift32 so failures reproduce. */
export function rng(seed: number): () => number {
  let s = seed >>> 0 || 1;
  return () => {
    s ^= s << 13;
    s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5;
    s >>>= 0;
    return s;
  };
}

export function randomBytes(n: number, seed: number): Uint8Array {
  const next = rng(seed);
  const out = new Uint8Array(n);
  for (let i = 0; i < n; i++) out[i] = next() & 0xff;
  return out;
}

/** A smooth float64 field (what model output looks like), as little-endian bytes, cut to n bytes. */
export function smoothBytes(n: number, phase = 0): Uint8Array {
  const values = new Float64Array(Math.ceil(n / 8));
  for (let i = 0; i < values.length; i++) values[i] = 280 + 15 * Math.sin((i + phase) / 500) + i * 1e-4;
  return new Uint8Array(values.buffer, 0, n);
}
