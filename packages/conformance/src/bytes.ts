import { type DType, itemSize, type TypedArray } from "@zarr-stream/spec";

const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

/** The array's elements as little-endian bytes, whatever the host's byte order (dumps are compared bitwise). */
export function littleEndianBytes(data: TypedArray): Uint8Array {
  const bytes = new Uint8Array(data.buffer, data.byteOffset, data.byteLength).slice();
  if (!LITTLE_ENDIAN && data.BYTES_PER_ELEMENT > 1) {
    const w = data.BYTES_PER_ELEMENT;
    for (let i = 0; i < bytes.length; i += w) bytes.subarray(i, i + w).reverse();
  }
  return bytes;
}

/** One element of little-endian `bytes` as text, for naming a mismatch (bigints keep every digit). */
export function elementText(bytes: Uint8Array, dtype: DType, index: number): string {
  const size = itemSize(dtype);
  if ((index + 1) * size > bytes.length) return "<absent>";
  const view = new DataView(bytes.buffer, bytes.byteOffset + index * size, size);
  switch (dtype) {
    case "float64":
      return String(view.getFloat64(0, true));
    case "float32":
      return String(view.getFloat32(0, true));
    case "int32":
      return String(view.getInt32(0, true));
    case "int64":
      return String(view.getBigInt64(0, true));
    case "uint8":
      return String(view.getUint8(0));
    case "uint32":
      return String(view.getUint32(0, true));
    case "uint64":
      return String(view.getBigUint64(0, true));
  }
}

export function toBase64(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("base64");
}

export function fromBase64(text: string): Uint8Array {
  return new Uint8Array(Buffer.from(text, "base64"));
}

export function toHex(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("hex");
}

export function fromHex(text: string): Uint8Array {
  return new Uint8Array(Buffer.from(text, "hex"));
}
