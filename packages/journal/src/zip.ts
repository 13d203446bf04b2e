import { crc32 } from "node:zlib";
import { JournalError } from "./errors.js";

/** One entry of a STORE zip: its size and CRC-32 known before it is written, its bytes streamed. */
export interface ZipEntrySource {
  name: string;
  size: number;
  crc: number;
  chunks: () => AsyncIterable<Uint8Array>;
}

const MAX_32 = 0xffffffff;
/** 1980-01-01 00:00: entries carry no wall-clock time so an export is reproducible. */
const DOS_DATE = (1 << 5) | 1;
const UTF8_NAMES = 0x0800;

function localHeader(name: Buffer, size: number, crc: number): Buffer {
  const local = Buffer.alloc(30);
  local.writeUInt32LE(0x04034b50, 0);
  local.writeUInt16LE(20, 4);
  local.writeUInt16LE(UTF8_NAMES, 6);
  local.writeUInt16LE(0, 8);
  local.writeUInt16LE(0, 10);
  local.writeUInt16LE(DOS_DATE, 12);
  local.writeUInt32LE(crc, 14);
  local.writeUInt32LE(size, 18);
  local.writeUInt32LE(size, 22);
  local.writeUInt16LE(name.length, 26);
  local.writeUInt16LE(0, 28);
  return Buffer.concat([local, name]);
}

function centralHeader(name: Buffer, size: number, crc: number, offset: number): Buffer {
  const header = Buffer.alloc(46);
  header.writeUInt32LE(0x02014b50, 0);
  header.writeUInt16LE(20, 4);
  header.writeUInt16LE(20, 6);
  header.writeUInt16LE(UTF8_NAMES, 8);
  header.writeUInt16LE(0, 10);
  header.writeUInt16LE(0, 12);
  header.writeUInt16LE(DOS_DATE, 14);
  header.writeUInt32LE(crc, 16);
  header.writeUInt32LE(size, 20);
  header.writeUInt32LE(size, 24);
  header.writeUInt16LE(name.length, 28);
  header.writeUInt32LE(offset, 42);
  return Buffer.concat([header, name]);
}

/**
 * A minimal ZIP (STORE method, no compression, no zip64), streamed: parts are already the data and
 * readers only need to list and extract them. Sizes and CRCs are given up front, so each local header
 * carries them (no data descriptors, which some readers refuse for STORE entries) and an archive that
 * would need zip64 is refused before a byte is produced. An entry whose bytes turn out other than
 * announced (a blob replaced while it was exported) is a JournalError ("zip") once it ends.
 */
export async function* zipBlocks(entries: readonly ZipEntrySource[]): AsyncGenerator<Uint8Array> {
  if (entries.length > 0xffff) throw new JournalError(`zip: ${entries.length} entries need zip64`, "zip");
  const names = new Set<string>();
  const encoded = entries.map(({ name, size }) => {
    if (names.has(name)) throw new JournalError(`zip: duplicate entry ${JSON.stringify(name)}`, "zip");
    names.add(name);
    if (size > MAX_32) throw new JournalError(`zip: ${name} needs zip64`, "zip");
    return Buffer.from(name, "utf8");
  });
  const offsets: number[] = [];
  let offset = 0;
  for (const [i, e] of entries.entries()) {
    offsets.push(offset);
    offset += 30 + encoded[i]!.length + e.size;
  }
  const centralSize = encoded.reduce((n, name) => n + 46 + name.length, 0);
  if (offset > MAX_32 || centralSize > MAX_32) throw new JournalError("zip: archive needs zip64", "zip");
  for (const [i, e] of entries.entries()) {
    yield localHeader(encoded[i]!, e.size, e.crc);
    let size = 0;
    let crc = 0;
    for await (const chunk of e.chunks()) {
      size += chunk.length;
      crc = crc32(chunk, crc);
      if (size > e.size) break;
      yield chunk;
    }
    if (size !== e.size || crc !== e.crc) {
      throw new JournalError(`zip: ${e.name} changed while it was exported (size or CRC-32)`, "zip");
    }
  }
  yield Buffer.concat(entries.map((e, i) => centralHeader(encoded[i]!, e.size, e.crc, offsets[i]!)));
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(entries.length, 8);
  end.writeUInt16LE(entries.length, 10);
  end.writeUInt32LE(centralSize, 12);
  end.writeUInt32LE(offset, 16);
  yield end;
}
