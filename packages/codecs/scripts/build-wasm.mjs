#!/usr/bin/env node
// Builds wasm/zstream_codecs.wasm: the addon's C tree (our Blosc, zstd, CRC-32C) for wasm32 with SIMD128,
// with Debian's clang, lld and wasi-libc (scripts/setup-test-env.sh installs them). It runs as part of the
// repository's build and before packing, so the module ships inside the package and an install that
// runs no scripts still has it. Without clang it prints one line and exits 0: the package then falls back
// to numcodecs' wasm. It rebuilds only when a source is newer than the module (or ZSTREAM_FORCE_BUILD=1).
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, renameSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { fetchZstdSources } from "./zstd-sources.mjs";

const pkgDir = join(dirname(fileURLToPath(import.meta.url)), "..");
const out = join(pkgDir, "wasm", "zstream_codecs.wasm");
const OURS = ["blosc1.c", "shuffle.c", "crc32c.c", "wasm-exports.c"].map((f) => join(pkgDir, "native", f));

function notice(why) {
  console.error(`@zarr-stream/codecs: SIMD wasm module not built (${why}).`);
  process.exit(0);
}

const newest = Math.max(
  statSync(fileURLToPath(import.meta.url)).mtimeMs,
  ...readdirSync(join(pkgDir, "native"), { recursive: true }).map(
    (f) => statSync(join(pkgDir, "native", f)).mtimeMs,
  ),
);
if (!process.env.ZSTREAM_FORCE_BUILD && existsSync(out) && statSync(out).mtimeMs >= newest) process.exit(0);

const clang = process.env.ZSTREAM_CLANG ?? "clang";
const probe = spawnSync(clang, ["--version"], { stdio: "ignore" });
if (probe.error || probe.status !== 0) notice(`no ${clang}; \`apt-get install clang lld wasi-libc\``);
const rel = fetchZstdSources(pkgDir);
if (!rel) notice("the zstd sources could not be fetched");
const zstd = join(pkgDir, rel, "lib");
const zstdFiles = ["common", "compress", "decompress"].flatMap((d) =>
  readdirSync(join(zstd, d))
    .filter((f) => f.endsWith(".c"))
    .map((f) => join(zstd, d, f)),
);

const flags = [
  "--target=wasm32-wasi",
  "-O3",
  "-msimd128",
  "-mbulk-memory",
  "-DNDEBUG",
  "-DZSTD_DISABLE_ASM",
  "-DZSTD_NO_TRACE",
  "-DXXH_NAMESPACE=ZSTD_",
  "-DZSTD_HEAPMODE=1",
  // zstd's SSE2 paths (the row match finder's tag compare, 16-byte copies) on SIMD128: native/wasm/
  // holds an emmintrin.h that maps the few intrinsics they use, and comes first on the include path.
  "-DZSTD_ARCH_X86_SSE2",
  `-I${join(pkgDir, "native", "wasm")}`,
  `-I${zstd}`,
];
const work = mkdtempSync(join(tmpdir(), "zs-wasm-"));
try {
  // Two compilers at a time: the machines this builds on have few cores.
  const sources = [...OURS, ...zstdFiles];
  const objects = sources.map((_, i) => join(work, `${i}.o`));
  const compile = (i) =>
    new Promise((resolve, reject) => {
      const p = spawn(clang, [...flags, "-c", sources[i], "-o", objects[i]], {
        stdio: ["ignore", "ignore", "pipe"],
      });
      let err = "";
      p.stderr.on("data", (d) => {
        err += d;
      });
      p.on("close", (code) =>
        code === 0 ? resolve() : reject(new Error(err.split("\n")[0] || `clang exited ${code}`)),
      );
      p.on("error", reject);
    });
  let next = 0;
  const lane = async () => {
    while (next < sources.length) await compile(next++);
  };
  await Promise.all([lane(), lane()]).catch((e) => notice(e.message));
  const tmpOut = join(work, "out.wasm");
  const link = spawnSync(
    clang,
    [
      ...flags,
      "-mexec-model=reactor",
      "-Wl,--strip-all",
      "-Wl,--initial-memory=4194304",
      ...objects,
      "-o",
      tmpOut,
    ],
    { encoding: "utf8" },
  );
  if (link.status !== 0) notice(`link failed: ${(link.stderr ?? "").split("\n")[0]}`);
  mkdirSync(dirname(out), { recursive: true });
  renameSync(tmpOut, out);
  console.error(`@zarr-stream/codecs: SIMD wasm module built (${statSync(out).size} bytes).`);
} finally {
  rmSync(work, { recursive: true, force: true });
}
