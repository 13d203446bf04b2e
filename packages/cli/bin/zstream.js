#!/usr/bin/env node
// The installed `zstream` launcher. It is a checked-in file, not build output, so `npm ci` can link and
// mark it executable before the build has created dist/ (npm skips bins whose target does not exist).
try {
  await import("../dist/src/bin.js");
} catch (err) {
  if (err?.code === "ERR_MODULE_NOT_FOUND" && String(err.message).includes("dist/src/bin.js")) {
    process.stderr.write(
      "zstream: packages/cli is not built yet: run `npm run build` at the repository root\n",
    );
    process.exit(4);
  }
  throw err;
}
