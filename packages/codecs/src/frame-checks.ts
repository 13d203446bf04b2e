import { CorruptShard } from "@zarr-stream/spec";

/*
 * Structural checks of a compressed frame, done before any decoder sees it. The wasm decoders do not
 * report corrupt input (numcodecs' Blosc returns whatever it produced), so everything that can be
 * checked without decompressing is checked here; the native decoder re-checks in C as well.
 */

function corrupt(key: string, what: string): CorruptShard {
  return new CorruptShard(`corrupt chunk${key ? ` ${key}` : ""}: ${what}`, key);
}

const BLOSC_HEADER = 16;
const BLOSC_MAX_FORMAT = 2; // c-blosc 1.x writes format 2; blosc2 frames (3+) are another container
const BLOSC_SHUFFLE = 0x1;
const BLOSC_MEMCPYED = 0x2;
const BLOSC_BITSHUFFLE = 0x4;
const BLOSC_RESERVED = 0x8;
const BLOSC_MAX_COMPRESSOR = 4; // blosclz, lz4, snappy, zlib, zstd

/** Checks the c-blosc 1.x 16-byte header and block-offset table against the frame and the expected size. */
export function checkBloscFrame(data: Uint8Array, expectedLength: number, key: string): void {
  if (data.length < BLOSC_HEADER) {
    throw corrupt(key, `truncated Blosc frame: ${data.length} bytes, the header alone is ${BLOSC_HEADER}`);
  }
  const v = new DataView(data.buffer, data.byteOffset, data.byteLength);
  const version = v.getUint8(0);
  const flags = v.getUint8(2);
  const typesize = v.getUint8(3);
  const nbytes = v.getUint32(4, true);
  const blocksize = v.getUint32(8, true);
  const cbytes = v.getUint32(12, true);
  if (version < 1 || version > BLOSC_MAX_FORMAT)
    throw corrupt(key, `unsupported Blosc format version ${version}`);
  if (flags & BLOSC_RESERVED) throw corrupt(key, `Blosc flags 0x${flags.toString(16)} set reserved bit 3`);
  if (flags & BLOSC_SHUFFLE && flags & BLOSC_BITSHUFFLE) {
    throw corrupt(key, `Blosc flags 0x${flags.toString(16)} set both byte and bit shuffle`);
  }
  if (flags >> 5 > BLOSC_MAX_COMPRESSOR)
    throw corrupt(key, `Blosc flags name unknown compressor ${flags >> 5}`);
  if (typesize === 0) throw corrupt(key, "Blosc header has typesize 0");
  if (nbytes !== expectedLength)
    throw corrupt(key, `Blosc header says nbytes=${nbytes}, expected ${expectedLength}`);
  if (cbytes !== data.length) {
    throw corrupt(key, `Blosc header says cbytes=${cbytes} but the frame has ${data.length} bytes`);
  }
  if (nbytes === 0) return;
  if (blocksize === 0) throw corrupt(key, "Blosc header has blocksize 0 for a non-empty frame");
  if (flags & BLOSC_MEMCPYED) {
    if (cbytes !== nbytes + BLOSC_HEADER) {
      throw corrupt(key, `stored (memcpyed) Blosc frame of ${cbytes} bytes cannot hold ${nbytes} bytes`);
    }
    return;
  }
  const nblocks = Math.ceil(nbytes / blocksize);
  const firstBody = BLOSC_HEADER + 4 * nblocks;
  if (firstBody > cbytes) throw corrupt(key, `Blosc frame too short for its ${nblocks} block offsets`);
  for (let i = 0; i < nblocks; i++) {
    const start = v.getInt32(BLOSC_HEADER + 4 * i, true);
    if (start < firstBody || start >= cbytes)
      throw corrupt(key, `Blosc block ${i} starts at ${start}, outside the frame`);
  }
}

const BLOSC_ZSTD = 4;

/**
 * Whether a (checked) Blosc frame needs an inner codec other than zstd: only then does it go to
 * numcodecs' decoder. Empty and memcpyed frames need none.
 */
export function bloscNeedsOtherCodec(data: Uint8Array): boolean {
  const flags = data[2] ?? 0;
  const nbytes = (data[4] ?? 0) | ((data[5] ?? 0) << 8) | ((data[6] ?? 0) << 16) | ((data[7] ?? 0) << 24);
  return nbytes !== 0 && !(flags & BLOSC_MEMCPYED) && flags >> 5 !== BLOSC_ZSTD;
}

const ZSTD_MAGIC = 0xfd2fb528;
const ZSTD_BLOCK_RLE = 1;
const ZSTD_BLOCK_RESERVED = 3;
const ZSTD_DICT_ID_BYTES = [0, 1, 2, 4] as const;

/**
 * Checks that `data` is exactly one complete zstd frame (RFC 8878 §3.1.1) — walking the block headers
 * catches truncation and trailing bytes — and that its content size, where the frame records one, is
 * `expectedLength`.
 */
export function checkZstdFrame(data: Uint8Array, expectedLength: number, key: string): void {
  const v = new DataView(data.buffer, data.byteOffset, data.byteLength);
  if (data.length < 6 || v.getUint32(0, true) !== ZSTD_MAGIC)
    throw corrupt(key, "not a zstd frame (bad magic)");
  const fhd = v.getUint8(4);
  const fcsFlag = fhd >> 6;
  const singleSegment = (fhd >> 5) & 1;
  if (fhd & 0x08) throw corrupt(key, "zstd frame header sets the reserved bit");
  const hasChecksum = (fhd >> 2) & 1;
  const dictBytes = ZSTD_DICT_ID_BYTES[fhd & 3] ?? 0;
  const fcsBytes = [singleSegment ? 1 : 0, 2, 4, 8][fcsFlag] ?? 0;
  let pos = 5 + (singleSegment ? 0 : 1);
  if (pos + dictBytes + fcsBytes > data.length) throw corrupt(key, "truncated zstd frame header");
  for (let i = 0; i < dictBytes; i++) {
    if (v.getUint8(pos + i) !== 0) throw corrupt(key, "zstd frame needs a dictionary; none is configured");
  }
  pos += dictBytes;
  if (fcsBytes > 0) {
    let size: number;
    if (fcsBytes === 1) size = v.getUint8(pos);
    else if (fcsBytes === 2) size = v.getUint16(pos, true) + 256;
    else if (fcsBytes === 4) size = v.getUint32(pos, true);
    else size = Number(v.getBigUint64(pos, true));
    if (size !== expectedLength)
      throw corrupt(key, `zstd frame content size ${size}, expected ${expectedLength}`);
    pos += fcsBytes;
  }
  for (let last = 0; !last; ) {
    if (pos + 3 > data.length) throw corrupt(key, "truncated zstd frame (block header cut off)");
    const h = v.getUint8(pos) | (v.getUint8(pos + 1) << 8) | (v.getUint8(pos + 2) << 16);
    last = h & 1;
    const type = (h >> 1) & 3;
    if (type === ZSTD_BLOCK_RESERVED) throw corrupt(key, `zstd block at byte ${pos} has the reserved type`);
    pos += 3 + (type === ZSTD_BLOCK_RLE ? 1 : h >>> 3);
  }
  pos += hasChecksum ? 4 : 0;
  if (pos > data.length)
    throw corrupt(key, `truncated zstd frame: ${data.length} bytes, the frame needs ${pos}`);
  if (pos < data.length)
    throw corrupt(key, `zstd frame is ${pos} bytes followed by ${data.length - pos} stray bytes`);
}

export function checkDecodedLength(out: Uint8Array, expectedLength: number, key: string): Uint8Array {
  if (out.length !== expectedLength)
    throw corrupt(key, `decoded to ${out.length} bytes, expected ${expectedLength}`);
  return out;
}

export { corrupt as corruptChunk };
