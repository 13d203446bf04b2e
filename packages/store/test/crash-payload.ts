/**
 * The two payloads the crash test alternates between: a 16-byte header ("zs-crash" + u64 sequence number)
 * then 4 MiB of 0xAA (even sequence numbers) or 0xBB (odd). The sequence number lets the test check that
 * an object is never older than the last put the child saw complete.
 */
export const CRASH_BODY_BYTES = 4 << 20;
const MAGIC = new TextEncoder().encode("zs-crash");
const HEADER_BYTES = 16;

export function crashPayload(seq: number): Uint8Array {
  const out = new Uint8Array(HEADER_BYTES + CRASH_BODY_BYTES);
  out.set(MAGIC, 0);
  new DataView(out.buffer).setBigUint64(8, BigInt(seq), true);
  out.fill(seq % 2 === 0 ? 0xaa : 0xbb, HEADER_BYTES);
  return out;
}

/** The sequence number when `bytes` is exactly crashPayload(seq), else undefined (torn, truncated, mixed). */
export function crashPayloadSeq(bytes: Uint8Array): number | undefined {
  if (bytes.length !== HEADER_BYTES + CRASH_BODY_BYTES) return undefined;
  const seq = Number(new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength).getBigUint64(8, true));
  return Buffer.from(bytes).equals(crashPayload(seq)) ? seq : undefined;
}
