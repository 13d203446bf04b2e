/**
 * What an inner chunk's compressed frame says its decoded size is, read from the header alone: verify
 * checks it without decompressing (a deep verify decodes everything instead).
 */
export type FrameClaim = { ok: true; size: number | undefined } | { ok: false; reason: string };

/** c-blosc1 header: version, versionlz, flags, typesize, nbytes u32, blocksize u32, cbytes u32 (LE). */
export function bloscClaim(body: Uint8Array): FrameClaim {
  if (body.byteLength < 16)
    return { ok: false, reason: `blosc frame is ${body.byteLength} bytes, shorter than its 16-byte header` };
  const view = new DataView(body.buffer, body.byteOffset, 16);
  const cbytes = view.getUint32(12, true);
  if (cbytes !== body.byteLength) {
    return {
      ok: false,
      reason: `blosc header says the frame is ${cbytes} bytes, the shard index gives ${body.byteLength}`,
    };
  }
  return { ok: true, size: view.getUint32(4, true) };
}

const ZSTD_MAGIC = 0xfd2fb528;

/** Zstandard frame header (RFC 8878 §3.1.1.1): the Frame_Content_Size field when present. */
export function zstdClaim(body: Uint8Array): FrameClaim {
  if (body.byteLength < 6)
    return { ok: false, reason: `zstd frame is ${body.byteLength} bytes, too short for a header` };
  const view = new DataView(body.buffer, body.byteOffset, body.byteLength);
  if (view.getUint32(0, true) !== ZSTD_MAGIC)
    return { ok: false, reason: "zstd frame lacks the magic number 0xFD2FB528" };
  const fhd = body[4]!;
  const fcsFlag = fhd >> 6;
  const single = (fhd >> 5) & 1;
  if ((fhd >> 3) & 1) return { ok: false, reason: "zstd frame header sets its reserved bit" };
  const dictBytes = [0, 1, 2, 4][fhd & 3]!;
  const fcsBytes = fcsFlag === 0 ? single : [0, 2, 4, 8][fcsFlag]!;
  const at = 5 + (single ? 0 : 1) + dictBytes;
  if (body.byteLength < at + fcsBytes) return { ok: false, reason: "zstd frame is shorter than its header" };
  if (fcsBytes === 0) return { ok: true, size: undefined };
  if (fcsBytes === 1) return { ok: true, size: view.getUint8(at) };
  if (fcsBytes === 2) return { ok: true, size: view.getUint16(at, true) + 256 };
  if (fcsBytes === 4) return { ok: true, size: view.getUint32(at, true) };
  return { ok: true, size: Number(view.getBigUint64(at, true)) };
}
