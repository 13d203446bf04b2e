// zstd's lib/ sources for both builds of our codecs (the addon and the wasm module).
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync } from "node:fs";
import { join } from "node:path";

// Why zstd is compiled in: Debian 12's libzstd is 1.5.4, which compresses our Blosc-zstd chunks at about
// half the speed of 1.5.7 (figures in packages/spec/docs/history.md), and every peer (numcodecs, zarrs, TensorStore)
// bundles a recent zstd. The sources come from the zstd-napi npm package (its deps/zstd is zstd's own
// lib/ tree), fetched through npm's cache and checked against a pinned sha512, so no new host is needed.
// The zstd symbols stay private to the addon (hidden visibility), so they never meet another zstd.
export const ZSTD_SOURCE = {
  spec: "zstd-napi@0.0.13",
  sha512: "ErGF+Ko1PsbooU6oC/sc/diiWKwVa0kd/5AkFSs7kg5kwcEuOtSzOy3xUOadXQlAVNab9TxsxaUk3hOq3cj/lA==",
  version: "1.5.7",
};
/** Returns the sources' directory relative to pkgDir, or null (with one line on stderr) when they cannot be had. */
export function fetchZstdSources(pkgDir) {
  // Relative to binding.gyp: gyp's make generator mangles absolute source paths into object paths.
  const rel = join(".zstd-src", ZSTD_SOURCE.version);
  const root = join(pkgDir, rel);
  if (existsSync(join(root, "lib", "zstd.h"))) return rel;
  const scratch = join(pkgDir, ".zstd-src", `tmp-${process.pid}`);
  try {
    mkdirSync(scratch, { recursive: true });
    const npm = process.env.npm_execpath;
    const [cmd, args] = npm?.endsWith(".js") ? [process.execPath, [npm]] : ["npm", []];
    const packed = spawnSync(
      cmd,
      [...args, "pack", ZSTD_SOURCE.spec, "--pack-destination", scratch, "--json"],
      {
        encoding: "utf8",
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    if (packed.status !== 0) throw new Error(`npm pack ${ZSTD_SOURCE.spec} failed`);
    const tgz = join(scratch, JSON.parse(packed.stdout)[0].filename);
    const digest = createHash("sha512").update(readFileSync(tgz)).digest("base64");
    if (digest !== ZSTD_SOURCE.sha512)
      throw new Error(`${ZSTD_SOURCE.spec} has sha512 ${digest}, not the pinned one`);
    const untar = spawnSync("tar", ["xzf", tgz, "-C", scratch, "package/deps/zstd/lib"], { stdio: "ignore" });
    if (untar.status !== 0) throw new Error("tar could not unpack the zstd sources");
    rmSync(root, { recursive: true, force: true });
    renameSync(join(scratch, "package", "deps", "zstd"), root);
    return rel;
  } catch (err) {
    console.error(`@zarr-stream/codecs: ${err.message}; linking the system libzstd instead.`);
    return null;
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}
