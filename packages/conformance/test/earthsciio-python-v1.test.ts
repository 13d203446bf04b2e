import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { readOutputManifest } from "@zarr-stream/reader";
import { FsStore } from "@zarr-stream/store";
import { findPython } from "@zarr-stream/test-support/python";
import { BUNDLED_CORPUS, compareDump, dumpStore, findCase, loadCorpus, oracleDump } from "../src/index.js";

const pythonProbe = findPython({ modules: ["earthsciio"] });
const WRITER = fileURLToPath(new URL("../../python/write_earthsciio_v1.py", import.meta.url));

const corpus = await loadCorpus(BUNDLED_CORPUS);
let out: string;
before(async () => {
  out = await mkdtemp(join(tmpdir(), "zs-esio-v1-"));
});
after(async () => {
  await rm(out, { recursive: true, force: true });
});

/** Writes the case with EarthSciIO's Python v1 writer (PyPI earthsciio) into a fresh directory. */
function writeWithEarthSciIO(name: string): string {
  const dir = join(out, name);
  const res = spawnSync(pythonProbe.require(), [WRITER, BUNDLED_CORPUS, name, dir], { encoding: "utf8" });
  assert.equal(res.status, 0, res.stderr);
  return dir;
}

describe("§8.1 v1 stores written by EarthSciIO's Python binding (Python manifest spelling)", () => {
  for (const name of ["manifest-v1-compat", "manifest-v1-compat-wasm"]) {
    test(
      `§8.1 ${name} written by earthsciio's ZarrWriter reads bitwise through our reader`,
      { skip: pythonProbe.skip },
      async () => {
        const store = new FsStore(writeWithEarthSciIO(name));
        const m = await readOutputManifest(store);
        assert.equal(m.schema, "earthsciio/output-manifest/v1");
        assert.equal(m.n_records, 4);
        assert.deepEqual(
          m.dims.map((d) => [d.name, d.length]),
          [
            ["time", 4],
            ["lat", 3],
            ["lon", 4],
          ],
        );
        const dump = await dumpStore(store, name, { writer: "earthsciio-python" });
        assert.ok("total_records" in dump.manifest!, "the stored manifest is in the Python spelling");
        const c = findCase(corpus, name);
        const { manifest: _m, ...dataOnly } = c.expect;
        assert.deepEqual(compareDump(oracleDump({ ...c, expect: dataOnly }), dump), []);
        // The corpus's manifest check names exactly how the Python spelling differs from the contract's.
        assert.deepEqual(
          compareDump(oracleDump(c), dump).map((l) => l.split(":")[0]),
          [
            "manifest dims",
            "manifest time_shards",
            "manifest n_records",
            "manifest total_records",
            "manifest written_at",
          ],
        );
      },
    );
  }
});
