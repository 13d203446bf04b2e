#!/usr/bin/env node
// Installs the Node releases of scripts/node-lts.mjs into .tools/node-<version>/bin/node, from the npm
// registry: it serves each official build as the package node-<platform>-<arch>@<version> (the binaries
// nodejs.org publishes, repackaged; the `node` package's installer fetches the same one). `npm pack` checks
// the tarball against the registry's integrity hash; only bin/node is kept (about 120 MB each).
// A release already in place is kept. A failure names the release and exits 1.
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { join } from "node:path";
import { installedNodes, nodePackage } from "./node-lts.mjs";

const root = new URL("..", import.meta.url).pathname;
const pkg = nodePackage();

function run(cmd, args, cwd) {
  const r = spawnSync(cmd, args, { cwd, encoding: "utf8" });
  if (r.status !== 0) {
    throw new Error(`${cmd} ${args.join(" ")} failed (${r.status ?? r.signal}): ${r.stderr.trim()}`);
  }
  return r.stdout;
}

mkdirSync(join(root, ".tools"), { recursive: true });
let failed = false;
for (const { version, path, installed } of installedNodes(root)) {
  if (installed && run(path, ["--version"]).trim() === `v${version}`) continue;
  const work = mkdtempSync(join(root, ".tools", "node-pack-"));
  try {
    const [packed] = JSON.parse(
      run("npm", ["pack", `${pkg}@${version}`, "--json", "--pack-destination", work], work),
    );
    const dir = join(root, ".tools", `node-${version}`);
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true });
    run("tar", ["xzf", join(work, packed.filename), "-C", dir, "--strip-components=1", "package/bin/node"]);
    const got = run(path, ["--version"]).trim();
    if (got !== `v${version}`) throw new Error(`${path} reports ${got}`);
    console.log(`setup-node-lts: ${pkg}@${version} in ${dir}`);
  } catch (err) {
    failed = true;
    console.error(`setup-node-lts: Node ${version} (${pkg}) not installed: ${err.message}`);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}
process.exit(failed ? 1 : 0);
