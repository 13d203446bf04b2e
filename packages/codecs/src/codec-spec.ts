import { type DType, itemSize, type Profile, SchemaError } from "@zarr-stream/spec";

/** Parameters of one bytes→bytes codec in the inner chunk pipeline (reference facts: blosc or plain zstd). */
export type CodecSpec =
  | { kind: "blosc"; cname: "zstd"; clevel: number; shuffle: 0 | 1 | 2; typesize: number; blocksize: 0 }
  | { kind: "zstd"; level: number; checksum: boolean };

/** c-blosc 1.x keeps sizes in signed 32-bit header fields (BLOSC_MAX_BUFFERSIZE = INT_MAX - 16). */
export const MAX_CHUNK_BYTES = 2 ** 31 - 1 - 16;

const BLOSC_LEVEL: Partial<Record<Profile, number>> = { diagnostic: 5, checkpoint: 7 };

/** Seed "Profiles": diagnostic = Blosc zstd 5 + byte shuffle, checkpoint = clevel 7, wasm = plain zstd 5. */
export function profileCodec(profile: Profile, dtype: DType): CodecSpec {
  const typesize = itemSize(dtype as string);
  if (typesize === undefined) throw new SchemaError(`unknown dtype ${JSON.stringify(dtype)}`, "/dtype");
  if (profile === "wasm") return { kind: "zstd", level: 5, checksum: false };
  const clevel = Object.hasOwn(BLOSC_LEVEL, profile) ? BLOSC_LEVEL[profile] : undefined;
  if (clevel === undefined) {
    throw new SchemaError(
      `unknown profile ${JSON.stringify(profile)} (expected diagnostic, checkpoint or wasm)`,
      "/profile",
    );
  }
  return { kind: "blosc", cname: "zstd", clevel, shuffle: 1, typesize, blocksize: 0 };
}

function isInt(v: unknown, lo: number, hi: number): boolean {
  return typeof v === "number" && Number.isInteger(v) && v >= lo && v <= hi;
}

/** Refuses a spec the C libraries would misread (they clamp or ignore out-of-range values silently). */
export function checkCodecSpec(spec: CodecSpec): void {
  const s = spec as Record<string, unknown> | null;
  if (typeof s !== "object" || s === null) throw new SchemaError("codec spec must be an object", "", "codec");
  const bad = (field: string, want: string) =>
    new SchemaError(`codec ${field} must be ${want}, got ${JSON.stringify(s[field])}`, `/${field}`, "codec");
  if (s.kind === "blosc") {
    if (s.cname !== "zstd") throw bad("cname", '"zstd"');
    if (!isInt(s.clevel, 0, 9)) throw bad("clevel", "an integer 0..9");
    if (s.shuffle !== 0 && s.shuffle !== 1 && s.shuffle !== 2) throw bad("shuffle", "0, 1 or 2");
    if (!isInt(s.typesize, 1, 255)) throw bad("typesize", "an integer 1..255");
    if (s.blocksize !== 0) throw bad("blocksize", "0 (automatic)");
  } else if (s.kind === "zstd") {
    if (!isInt(s.level, -131072, 22)) throw bad("level", "an integer -131072..22");
    if (typeof s.checksum !== "boolean") throw bad("checksum", "a boolean");
  } else {
    throw bad("kind", '"blosc" or "zstd"');
  }
}
