/*
 * One instance of wasm/zstream_codecs.wasm (scripts/build-wasm.mjs: our Blosc, zstd and CRC-32C for
 * wasm32 + SIMD128) with synchronous calls. An instance serves one thread; the Node backend runs one per
 * worker thread. Inputs are copied into the module's memory and results copied out, so callers' buffers
 * are never retained.
 */

interface Exports {
  memory: WebAssembly.Memory;
  _initialize(): void;
  zs_init(): void;
  zs_alloc(n: number): number;
  zs_free(p: number): void;
  zs_msg(): number;
  zs_simd(): number;
  zs_blosc_encode(
    src: number,
    n: number,
    dst: number,
    clevel: number,
    shuffle: number,
    typesize: number,
  ): number;
  zs_blosc_decode(src: number, n: number, dst: number, expected: number): number;
  zs_zstd_bound(n: number): number;
  zs_zstd_encode(src: number, n: number, dst: number, cap: number, level: number, checksum: number): number;
  zs_zstd_decode(src: number, n: number, dst: number, expected: number): number;
  zs_crc32c(p: number, n: number): number;
}

/** A failure inside the module: "corrupt" input, "unsupported" Blosc inner codec, or "internal". */
export class WasmCodecError extends Error {
  constructor(
    message: string,
    readonly kind: "corrupt" | "unsupported" | "internal",
  ) {
    super(message);
    this.name = "WasmCodecError";
  }
}

const STATUS = ["ok", "corrupt", "internal", "unsupported"] as const;

// The module links wasi-libc's stdio, which nothing calls on our paths; these imports only satisfy it.
const ENOSYS = 52;
const WASI_STUBS = {
  wasi_snapshot_preview1: { fd_close: () => ENOSYS, fd_seek: () => ENOSYS, fd_write: () => ENOSYS },
};

export interface WasmCodecs {
  readonly simd: string;
  bloscEncode(data: Uint8Array, clevel: number, shuffle: number, typesize: number): Uint8Array;
  bloscDecode(data: Uint8Array, expected: number): Uint8Array;
  zstdEncode(data: Uint8Array, level: number, checksum: boolean): Uint8Array;
  zstdDecode(data: Uint8Array, expected: number): Uint8Array;
  crc32c(data: Uint8Array): number;
}

export function instantiateCodecs(module: WebAssembly.Module): WasmCodecs {
  const x = new WebAssembly.Instance(module, WASI_STUBS).exports as unknown as Exports;
  x._initialize();
  x.zs_init();
  const bytes = () => new Uint8Array(x.memory.buffer);
  const cString = (p: number) => {
    const m = bytes();
    let end = p;
    while (m[end] !== 0) end++;
    return new TextDecoder().decode(m.subarray(p, end));
  };
  /** Runs fn with data copied in and an output area of `cap` bytes; frees both whatever happens. */
  const withBuffers = <T>(data: Uint8Array, cap: number, fn: (src: number, dst: number) => T): T => {
    const src = x.zs_alloc(data.length);
    const dst = x.zs_alloc(cap);
    try {
      if (!src || !dst) throw new WasmCodecError("out of wasm memory", "internal");
      bytes().set(data, src);
      return fn(src, dst);
    } finally {
      if (src) x.zs_free(src);
      if (dst) x.zs_free(dst);
    }
  };
  const check = (status: number) => {
    const kind = STATUS[status] ?? "internal";
    if (kind !== "ok") throw new WasmCodecError(cString(x.zs_msg()) || `status ${status}`, kind);
  };
  return {
    simd: cString(x.zs_simd()),
    bloscEncode: (data, clevel, shuffle, typesize) =>
      withBuffers(data, data.length + 16, (src, dst) => {
        const n = x.zs_blosc_encode(src, data.length, dst, clevel, shuffle, typesize) >>> 0;
        if (n === 0) throw new WasmCodecError("out of wasm memory", "internal");
        return bytes().slice(dst, dst + n);
      }),
    bloscDecode: (data, expected) =>
      withBuffers(data, expected, (src, dst) => {
        check(x.zs_blosc_decode(src, data.length, dst, expected));
        return bytes().slice(dst, dst + expected);
      }),
    zstdEncode: (data, level, checksum) => {
      const cap = x.zs_zstd_bound(data.length) >>> 0;
      return withBuffers(data, cap, (src, dst) => {
        const n = x.zs_zstd_encode(src, data.length, dst, cap, level, checksum ? 1 : 0) >>> 0;
        if (n === 0) throw new WasmCodecError(cString(x.zs_msg()) || "zstd compression failed", "internal");
        return bytes().slice(dst, dst + n);
      });
    },
    zstdDecode: (data, expected) =>
      withBuffers(data, expected, (src, dst) => {
        check(x.zs_zstd_decode(src, data.length, dst, expected));
        return bytes().slice(dst, dst + expected);
      }),
    crc32c: (data) => withBuffers(data, 0, (src) => x.zs_crc32c(src, data.length) >>> 0),
  };
}
