/*
 * One instance of wasm/zstream_codecs.wasm (scripts/build-wasm.mjs: our Blosc, zstd and CRC-32C for
 * wasm32 + SIMD128) with synchronous calls. An instance serves one thread; the Node backend runs one per
 * worker thread. Inputs are copied into the module's memory and results copied out (or handed to a sink
 * that copies them where they are needed), so callers' buffers are never retained.
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

/** What a call computes; the result is handed to a sink as a view into the module's memory. */
export type WasmOp =
  | { op: "bloscEncode"; clevel: number; shuffle: number; typesize: number }
  | { op: "bloscDecode"; expected: number }
  | { op: "zstdEncode"; level: number; checksum: boolean }
  | { op: "zstdDecode"; expected: number };

export interface WasmCodecs {
  readonly simd: string;
  bloscEncode(data: Uint8Array, clevel: number, shuffle: number, typesize: number): Uint8Array;
  bloscDecode(data: Uint8Array, expected: number): Uint8Array;
  zstdEncode(data: Uint8Array, level: number, checksum: boolean): Uint8Array;
  zstdDecode(data: Uint8Array, expected: number): Uint8Array;
  crc32c(data: Uint8Array): number;
  /**
   * Runs op on data and passes its result to `sink` as a view into the module's memory, valid only
   * during the call: a worker copies it straight to where the caller reads it, with no buffer in between.
   */
  run<T>(op: WasmOp, data: Uint8Array, sink: (result: Uint8Array) => T): T;
}

/**
 * The module's input and output areas, kept between calls and grown on demand: a worker calls with chunks
 * of one size again and again, and the allocator then never runs on the hot path.
 */
class Arena {
  private readonly at = { src: 0, dst: 0 };
  private readonly cap = { src: 0, dst: 0 };
  constructor(private readonly x: Exports) {}

  private grow(area: "src" | "dst", want: number): number {
    if (this.at[area] && this.cap[area] >= want) return this.at[area];
    if (this.at[area]) this.x.zs_free(this.at[area]);
    this.cap[area] = 0;
    this.at[area] = this.x.zs_alloc(Math.max(want, 1));
    if (!this.at[area]) throw new WasmCodecError("out of wasm memory", "internal");
    this.cap[area] = Math.max(want, 1);
    return this.at[area];
  }

  /** Both areas large enough, the input copied in. */
  take(data: Uint8Array, outCap: number): [src: number, dst: number] {
    const src = this.grow("src", data.length);
    const dst = this.grow("dst", outCap);
    new Uint8Array(this.x.memory.buffer).set(data, src);
    return [src, dst];
  }

  /** Gives back areas too large to keep, so one huge chunk does not pin its memory for good. */
  trim(): void {
    if (this.cap.src + this.cap.dst <= KEEP_BYTES) return;
    for (const area of ["src", "dst"] as const) {
      if (this.at[area]) this.x.zs_free(this.at[area]);
      this.at[area] = this.cap[area] = 0;
    }
  }
}

const KEEP_BYTES = 64 << 20;

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
  const check = (status: number) => {
    const kind = STATUS[status] ?? "internal";
    if (kind !== "ok") throw new WasmCodecError(cString(x.zs_msg()) || `status ${status}`, kind);
  };
  const arena = new Arena(x);
  const run = <T>(op: WasmOp, data: Uint8Array, sink: (result: Uint8Array) => T): T => {
    const n = data.length;
    const outCap =
      op.op === "bloscEncode" ? n + 16 : op.op === "zstdEncode" ? x.zs_zstd_bound(n) >>> 0 : op.expected;
    const [src, dst] = arena.take(data, outCap);
    try {
      let len = op.op === "bloscDecode" || op.op === "zstdDecode" ? op.expected : 0;
      switch (op.op) {
        case "bloscEncode":
          len = x.zs_blosc_encode(src, n, dst, op.clevel, op.shuffle, op.typesize) >>> 0;
          if (len === 0) throw new WasmCodecError("out of wasm memory", "internal");
          break;
        case "zstdEncode":
          len = x.zs_zstd_encode(src, n, dst, outCap, op.level, op.checksum ? 1 : 0) >>> 0;
          if (len === 0)
            throw new WasmCodecError(cString(x.zs_msg()) || "zstd compression failed", "internal");
          break;
        case "bloscDecode":
          check(x.zs_blosc_decode(src, n, dst, op.expected));
          break;
        case "zstdDecode":
          check(x.zs_zstd_decode(src, n, dst, op.expected));
          break;
      }
      return sink(bytes().subarray(dst, dst + len));
    } finally {
      arena.trim();
    }
  };
  const copy = (v: Uint8Array) => v.slice();
  return {
    simd: cString(x.zs_simd()),
    bloscEncode: (data, clevel, shuffle, typesize) =>
      run({ op: "bloscEncode", clevel, shuffle, typesize }, data, copy),
    bloscDecode: (data, expected) => run({ op: "bloscDecode", expected }, data, copy),
    zstdEncode: (data, level, checksum) => run({ op: "zstdEncode", level, checksum }, data, copy),
    zstdDecode: (data, expected) => run({ op: "zstdDecode", expected }, data, copy),
    crc32c: (data) => {
      const [src] = arena.take(data, 0);
      try {
        return x.zs_crc32c(src, data.length) >>> 0;
      } finally {
        arena.trim();
      }
    },
    run,
  };
}
