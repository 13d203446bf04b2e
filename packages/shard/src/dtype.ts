import { type DType, SchemaError, type TypedArray } from "@zarr-stream/spec";

type TypedArrayCtor = {
  new (length: number): TypedArray;
  new (buffer: ArrayBufferLike, byteOffset: number, length: number): TypedArray;
  readonly BYTES_PER_ELEMENT: number;
};

const CTORS: Record<DType, TypedArrayCtor> = {
  float64: Float64Array,
  float32: Float32Array,
  int32: Int32Array,
  int64: BigInt64Array,
  uint8: Uint8Array,
  uint32: Uint32Array,
  uint64: BigUint64Array,
};

export function isDType(value: unknown): value is DType {
  return typeof value === "string" && Object.hasOwn(CTORS, value);
}

function ctor(dtype: DType): TypedArrayCtor {
  const c = isDType(dtype) ? CTORS[dtype] : undefined;
  if (c === undefined)
    throw new SchemaError(`unknown dtype ${JSON.stringify(dtype)}`, "/dtype", "ArrayLayout");
  return c;
}

/** Bytes per element of a dtype. */
export function itemSize(dtype: DType): number {
  return ctor(dtype).BYTES_PER_ELEMENT;
}

/** A zero-filled typed array of the dtype's element type. */
export function allocTyped(dtype: DType, length: number): TypedArray {
  checkLength(length, "allocTyped");
  return new (ctor(dtype))(length);
}

/**
 * A typed array whose contents are whatever the memory held: the caller writes every element before
 * anyone else sees it. For read results that decoding overwrites anyway, where zero-filling first is the
 * main thread's largest single cost of a whole-store read and puts every page fault there.
 */
export function allocTypedUnfilled(dtype: DType, length: number): TypedArray {
  checkLength(length, "allocTypedUnfilled");
  const C = ctor(dtype);
  // Browsers (the viewer) have no Buffer: there the memory is a plain, zeroed ArrayBuffer.
  const bytes = length * C.BYTES_PER_ELEMENT;
  const memory = typeof Buffer === "function" ? Buffer.allocUnsafeSlow(bytes).buffer : new ArrayBuffer(bytes);
  return new C(memory, 0, length);
}

function checkLength(length: number, where: string): void {
  if (!Number.isSafeInteger(length) || length < 0)
    throw new SchemaError(`${where}: length ${length} is not a non-negative integer`, "/length", where);
}

/**
 * The elements held by `bytes` (little-endian, as the host): a view when `bytes` is aligned for the
 * element type, else an aligned copy. The length must be a whole number of elements.
 */
export function typedFromBytes(dtype: DType, bytes: Uint8Array): TypedArray {
  const C = ctor(dtype);
  const n = bytes.byteLength / C.BYTES_PER_ELEMENT;
  if (bytes.byteOffset % C.BYTES_PER_ELEMENT === 0) return new C(bytes.buffer, bytes.byteOffset, n);
  return new C(bytes.slice().buffer, 0, n);
}

/** A typed array of `length` elements, each `fill` (a bigint for the 64-bit integer types). */
export function filledTyped(dtype: DType, length: number, fill: number | bigint): TypedArray {
  const out = allocTyped(dtype, length);
  if (fill !== 0 && fill !== 0n) (out as { fill(v: number | bigint): unknown }).fill(fill);
  return out;
}

/** True when `data` is the typed array class that holds `dtype` (Uint8Array for uint8, and so on). */
export function matchesDType(data: TypedArray, dtype: DType): boolean {
  return data?.constructor === ctor(dtype);
}

/** The bytes behind a typed array (no copy). Zarr's `bytes` codec is little-endian, as is every host we run on. */
export function bytesOf(data: TypedArray): Uint8Array {
  return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
}

/** True when every byte of `bytes` is zero; compares four bytes at a time where alignment allows. */
export function allZeroBytes(bytes: Uint8Array): boolean {
  const n = bytes.byteLength;
  const head = Math.min(n, (4 - (bytes.byteOffset % 4)) % 4);
  let i = 0;
  for (; i < head; i++) if (bytes[i] !== 0) return false;
  const words = Math.floor((n - i) / 4);
  if (words > 0) {
    const w = new Uint32Array(bytes.buffer, bytes.byteOffset + i, words);
    for (let k = 0; k < words; k++) if (w[k] !== 0) return false;
    i += words * 4;
  }
  for (; i < n; i++) if (bytes[i] !== 0) return false;
  return true;
}

const littleEndianHost = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;
if (!littleEndianHost) {
  // Typed arrays use host byte order and the format is little-endian; no supported host is big-endian.
  throw new Error("@zarr-stream/shard requires a little-endian host");
}
