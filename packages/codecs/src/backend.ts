/** What each implementation provides; arguments are already validated and frames already checked. */
export interface Backend {
  readonly name: "native" | "wasm";
  bloscEncode(data: Uint8Array, clevel: number, shuffle: 0 | 1 | 2, typesize: number): Promise<Uint8Array>;
  bloscDecode(data: Uint8Array, expectedLength: number, key: string): Promise<Uint8Array>;
  zstdEncode(data: Uint8Array, level: number, checksum: boolean): Promise<Uint8Array>;
  zstdDecode(data: Uint8Array, expectedLength: number, key: string): Promise<Uint8Array>;
  crc32c(data: Uint8Array): Promise<number>;
}
