import { mkdir, readdir, readFile, rename, rm, stat, writeFile } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { ZarrStreamError } from "@zarr-stream/spec";

/** dist/src/bundle.js → the package root. */
const PACKAGE_ROOT = fileURLToPath(new URL("../../", import.meta.url));
export const BUNDLE_DIR = join(PACKAGE_ROOT, "dist", "web");
const ENTRY = join(PACKAGE_ROOT, "dist", "src", "page", "main.js");
const BUNDLE = join(BUNDLE_DIR, "viewer.js");
const META = join(BUNDLE_DIR, "meta.json");

/**
 * esbuild's metafile of the last build (dist/web/meta.json): every input, relative to the package root,
 * with the imports that brought others in.
 */
export interface BundleMeta {
  inputs: Record<
    string,
    { imports: { path: string; kind: string; original?: string; external?: boolean }[] }
  >;
  /** Each output file (relative to the package root) with the inputs it holds. */
  outputs?: Record<string, { inputs: Record<string, unknown> }>;
}

/**
 * A chunk the bundle splits off (a module the page imports only dynamically, e.g. hash-wasm behind the
 * numcodecs backend's checksums): `chunk-<hash>.js` beside viewer.js, loaded by the page only if it runs
 * that import. The server serves only names of this shape from the bundle's folder.
 */
export function isBundleChunk(name: string): boolean {
  return /^chunk-[A-Z0-9]{8}\.js(\.map)?$/.test(name);
}

interface EsbuildLike {
  build(options: Record<string, unknown>): Promise<{
    outputFiles?: { path: string; contents: Uint8Array }[];
    metafile?: BundleMeta;
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
    const meta = JSON.parse(await readFile(META, "utf8")) as BundleMeta;
    inputs = Object.keys(meta.inputs).filter((p) => !p.includes(":"));
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

/**
 * Bundles dist/src/page/main.js (and the packages it imports) into dist/web/viewer.js for the browser,
 * with what the page imports only dynamically in chunks beside it (isBundleChunk).
 * Packages resolve through their exports with the "browser" condition, so @zarr-stream/codecs brings its
 * browser entry (our SIMD wasm, no addon loader). numcodecs stays external: the page's import map serves
 * it, because the codecs import it again by URL for Blosc inner codecs we do not implement. Rebuilds only
 * when an input changed, unless `force`.
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
    entryPoints: { viewer: ENTRY },
    absWorkingDir: PACKAGE_ROOT,
    bundle: true,
    format: "esm",
    platform: "browser",
    target: "es2022",
    // The spec package's validators are Ajv's standalone code, one statement a line once printed: without
    // the whitespace they take about a third of the bytes (names are kept, so stacks still read).
    minifyWhitespace: true,
    sourcemap: "linked",
    // Dynamic imports become chunks of their own, fetched only when the page runs them: hash-wasm (a
    // quarter of a megabyte), which only the numcodecs backend's checksums load, stays out of viewer.js.
    splitting: true,
    outdir: BUNDLE_DIR,
    chunkNames: "chunk-[hash]",
    write: false,
    metafile: true,
    logLevel: "silent",
    external: ["numcodecs", "numcodecs/*"],
  });
  await mkdir(BUNDLE_DIR, { recursive: true });
  // Stage then rename, so a concurrent server never serves half a bundle; the chunks first, so the
  // viewer.js that names them never lands before them.
  const entryLast = (f: { path: string }) => Number(f.path === BUNDLE || f.path === `${BUNDLE}.map`);
  const files = [...(result.outputFiles ?? [])].sort((a, b) => entryLast(a) - entryLast(b));
  for (const f of files) {
    const tmp = `${f.path}.${process.pid}.tmp`;
    await writeFile(tmp, f.contents);
    await rename(tmp, f.path);
  }
  // Chunks of earlier builds, which no viewer.js names any more.
  const current = new Set(files.map((f) => basename(f.path)));
  for (const name of await readdir(BUNDLE_DIR))
    if (isBundleChunk(name) && !current.has(name)) await rm(join(BUNDLE_DIR, name), { force: true });
  const tmp = `${META}.${process.pid}.tmp`;
  await writeFile(tmp, JSON.stringify(result.metafile ?? { inputs: {} }));
  await rename(tmp, META);
  return BUNDLE_DIR;
}

/** Our SIMD wasm codecs module (the codecs package's "./zstream_codecs.wasm" export), served to the page. */
export function codecWasmFile(): string {
  return fileURLToPath(import.meta.resolve("@zarr-stream/codecs/zstream_codecs.wasm"));
}

/** The directory holding numcodecs' ES modules, which the page loads through its import map. */
export function numcodecsDir(): string {
  return dirname(fileURLToPath(import.meta.resolve("numcodecs/zstd")));
}
