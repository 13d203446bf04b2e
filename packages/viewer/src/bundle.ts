import { mkdir, readFile, rename, stat, writeFile } from "node:fs/promises";
import { dirname, join, relative, sep } from "node:path";
import { fileURLToPath } from "node:url";
import { ZarrStreamError } from "@zarr-stream/spec";

/** dist/src/bundle.js → the package root. */
const PACKAGE_ROOT = fileURLToPath(new URL("../../", import.meta.url));
export const BUNDLE_DIR = join(PACKAGE_ROOT, "dist", "web");
const ENTRY = join(PACKAGE_ROOT, "dist", "src", "page", "main.js");
const BUNDLE = join(BUNDLE_DIR, "viewer.js");
const META = join(BUNDLE_DIR, "meta.json");

/**
 * The codecs package picks a backend with process.env, a node:module addon loader and a worker-thread
 * pool for its SIMD wasm. In the browser there is neither: native-backend.js and simd-wasm-backend.js
 * become these stubs and ZSTREAM_CODECS is defined as "numcodecs", so numcodecs' wasm is chosen without
 * touching `process`.
 */
const NATIVE_STUB = `
export function loadAddon() { return { error: "no native addon in a browser" }; }
export function nativeBackend() { throw new Error("the native codecs backend does not exist in a browser"); }
`;
const SIMD_WASM_STUB = `
export function loadSimdWasm() { return { error: "the SIMD wasm backend runs on Node worker threads" }; }
export function simdWasmBackend() { throw new Error("the SIMD wasm backend does not exist in a browser"); }
`;

interface EsbuildLike {
  build(options: Record<string, unknown>): Promise<{
    outputFiles?: { path: string; contents: Uint8Array }[];
    metafile?: { inputs: Record<string, unknown> };
  }>;
}

async function loadEsbuild(): Promise<EsbuildLike | undefined> {
  try {
    return (await import("esbuild")) as unknown as EsbuildLike;
  } catch {
    return undefined;
  }
}

/** True when the bundle exists and no input recorded in its metafile is newer than it. */
async function isFresh(): Promise<boolean> {
  let builtAt: number;
  let inputs: string[];
  try {
    builtAt = (await stat(BUNDLE)).mtimeMs;
    inputs = JSON.parse(await readFile(META, "utf8")) as string[];
  } catch {
    return false;
  }
  for (const input of inputs) {
    try {
      if ((await stat(join(PACKAGE_ROOT, input))).mtimeMs > builtAt) return false;
    } catch {
      return false;
    }
  }
  return true;
}

const browserCodecs = {
  name: "zarr-stream-browser-codecs",
  setup(build: {
    onResolve(o: { filter: RegExp }, f: (a: { path: string; resolveDir: string }) => unknown): void;
    onLoad(o: { filter: RegExp; namespace: string }, f: (a: { path: string }) => unknown): void;
  }) {
    build.onResolve({ filter: /^\.\/(native|simd-wasm)-backend\.js$/ }, (args) =>
      args.resolveDir.endsWith(`${sep}codecs${sep}dist${sep}src`)
        ? { path: args.path.slice(2, -3), namespace: "zs-browser-stub" }
        : undefined,
    );
    build.onLoad({ filter: /.*/, namespace: "zs-browser-stub" }, (args: { path: string }) => ({
      contents: args.path === "native-backend" ? NATIVE_STUB : SIMD_WASM_STUB,
      loader: "js",
    }));
  },
};

/**
 * Bundles dist/src/page/main.js (and the packages it imports) into dist/web/viewer.js for the browser.
 * numcodecs stays external: the page's import map serves it, because the codecs' wasm backend imports
 * it again by URL for its decoders. Rebuilds only when an input changed, unless `force`.
 */
export async function buildViewerBundle(force = false): Promise<string> {
  if (!force && (await isFresh())) return BUNDLE_DIR;
  const esbuild = await loadEsbuild();
  if (esbuild === undefined) {
    if (await stat(BUNDLE).catch(() => undefined)) return BUNDLE_DIR;
    throw new ZarrStreamError(
      `the viewer page is not bundled (${BUNDLE} is missing) and esbuild is not installed to bundle it; ` +
        "run `npm run build -w packages/viewer` in a checkout with dev dependencies",
    );
  }
  const result = await esbuild.build({
    entryPoints: [ENTRY],
    absWorkingDir: PACKAGE_ROOT,
    bundle: true,
    format: "esm",
    platform: "browser",
    target: "es2022",
    sourcemap: "linked",
    outfile: BUNDLE,
    write: false,
    metafile: true,
    logLevel: "silent",
    external: ["numcodecs", "numcodecs/*"],
    define: { "process.env.ZSTREAM_CODECS": '"numcodecs"' },
    plugins: [browserCodecs],
  });
  await mkdir(BUNDLE_DIR, { recursive: true });
  // Stage then rename, so a concurrent server never serves half a bundle.
  for (const f of result.outputFiles ?? []) {
    const tmp = `${f.path}.${process.pid}.tmp`;
    await writeFile(tmp, f.contents);
    await rename(tmp, f.path);
  }
  const inputs = Object.keys(result.metafile?.inputs ?? {}).filter((p) => !p.includes(":"));
  const tmp = `${META}.${process.pid}.tmp`;
  await writeFile(tmp, JSON.stringify(inputs.map((p) => relative(PACKAGE_ROOT, join(PACKAGE_ROOT, p)))));
  await rename(tmp, META);
  return BUNDLE_DIR;
}

/** The directory holding numcodecs' ES modules, which the page loads through its import map. */
export function numcodecsDir(): string {
  return dirname(fileURLToPath(import.meta.resolve("numcodecs/zstd")));
}
