import type { DType } from "./types.js";

const ITEM_SIZE: Readonly<Record<DType, number>> = {
  float64: 8,
  float32: 4,
  int32: 4,
  int64: 8,
  uint8: 1,
  uint32: 4,
  uint64: 8,
};

/** Bytes per element of a dtype, or undefined for a name that is not one (input not yet validated). */
export function itemSize(dtype: DType): number;
export function itemSize(dtype: string): number | undefined;
export function itemSize(dtype: string): number | undefined {
  return Object.hasOwn(ITEM_SIZE, dtype) ? ITEM_SIZE[dtype as DType] : undefined;
}
