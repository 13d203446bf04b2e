import { crc32 } from "node:zlib";
import { JournalError } from "./errors.js";

export interface ZipEntry {
  name: string;
  bytes: Uint8Array;
}

const MAX_32 = 0xffffffff;
/** 1980-01-01 00:00: entries carry no wall-clock time so an export is reproducible. */
const DOS_DATE = (1 << 5) | 1;
const UTF8_NAMES = 0x0800;

/**
 * A minimal ZIP (STORE method, no compression, no zip64): parts are already the data and readers only
 * need to list and extract them. Refuses what would need zip64 rather than writing a broken archive.
 */
export function writeZip(entries: readonly ZipEntry[]): Uint8Array {
  if (entries.length > 0xffff) throw new JournalError(`zip: ${entries.length} entries need zip64`, "zip");
  const chunks: Buffer[] = [];
  const central: Buffer[] = [];
  let offset = 0;
  const names = new Set<string>();
  for (const { name, bytes } of entries) {
    if (names.has(name)) throw new JournalError(`zip: duplicate entry ${JSON.stringify(name)}`, "zip");
    names.add(name);
    const nameBytes = Buffer.from(name, "utf8");
    if (bytes.length > MAX_32 || offset > MAX_32) throw new JournalError(`zip: ${name} needs zip64`, "zip");
    const crc = crc32(bytes);
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    local.writeUInt16LE(20, 4);
    local.writeUInt16LE(UTF8_NAMES, 6);
    local.writeUInt16LE(0, 8);
    local.writeUInt16LE(0, 10);
    local.writeUInt16LE(DOS_DATE, 12);
    local.writeUInt32LE(crc, 14);
    local.writeUInt32LE(bytes.length, 18);
    local.writeUInt32LE(bytes.length, 22);
    local.writeUInt16LE(nameBytes.length, 26);
    local.writeUInt16LE(0, 28);
    const header = Buffer.alloc(46);
    header.writeUInt32LE(0x02014b50, 0);
    header.writeUInt16LE(20, 4);
    header.writeUInt16LE(20, 6);
    header.writeUInt16LE(UTF8_NAMES, 8);
    header.writeUInt16LE(0, 10);
    header.writeUInt16LE(0, 12);
    header.writeUInt16LE(DOS_DATE, 14);
    header.writeUInt32LE(crc, 16);
    header.writeUInt32LE(bytes.length, 20);
    header.writeUInt32LE(bytes.length, 24);
    header.writeUInt16LE(nameBytes.length, 28);
    header.writeUInt32LE(offset, 42);
    central.push(header, nameBytes);
    chunks.push(local, nameBytes, Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength));
    offset += local.length + nameBytes.length + bytes.length;
  }
  const centralSize = central.reduce((n, b) => n + b.length, 0);
  if (offset > MAX_32 || centralSize > MAX_32) throw new JournalError("zip: archive needs zip64", "zip");
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(entries.length, 8);
  end.writeUInt16LE(entries.length, 10);
  end.writeUInt32LE(centralSize, 12);
  end.writeUInt32LE(offset, 16);
  return Buffer.concat([...chunks, ...central, end]);
}
