import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { bytesOf } from "@zarr-stream/shard";
import { UnsupportedCodec } from "@zarr-stream/spec";
import { FsStore } from "@zarr-stream/store";
import { findPython } from "@zarr-stream/test-support/python";
import { openArray, readArrayRegion } from "../src/index.js";
import { countingStore } from "./helpers.js";

const SCRIPT = fileURLToPath(new URL("../../python/codec_arrays.py", import.meta.url));
const python = findPython({ modules: ["numpy", "zarr", "numcodecs"] });

interface Case {
  name: string;
  shape: number[];
  dtype: string;
  box: [number, number][];
  whole: string;
  part: string;
}

function runPython(root: string): Case[] {
  const res = spawnSync(python.require(), [SCRIPT, root], { encoding: "utf8", maxBuffer: 1 << 24 });
  if (res.status !== 0) throw new Error(`codec_arrays.py failed (${res.status}): ${res.stderr}`);
  return JSON.parse(res.stdout) as Case[];
}

test(
  "arrays zarr-python writes with gzip, transpose, plain zstd, crc32c, Blosc-lz4, big-endian bytes, nested sharding and nonzero fill read back as zarr-python reads them",
  { skip: python.skip },
  async () => {
    const root = mkdtempSync(join(tmpdir(), "zs-codec-arrays-"));
    const cases = runPython(root);
    assert.equal(cases.length, 9);
    const store = new FsStore(root);
    for (const c of cases) {
      const array = await openArray(store, c.name);
      assert.equal(array.layout, undefined, `${c.name} takes the general path`);
      assert.deepEqual(array.shape, c.shape, c.name);
      assert.equal(array.dtype, c.dtype, c.name);
      const whole = await readArrayRegion(
        store,
        c.name,
        array,
        c.shape.map((n) => [0, n]),
      );
      assert.ok(Buffer.from(bytesOf(whole)).equals(readFileSync(c.whole)), `${c.name}: whole array bitwise`);
      const part = await readArrayRegion(store, c.name, array, c.box);
      assert.ok(
        Buffer.from(bytesOf(part)).equals(readFileSync(c.part)),
        `${c.name}: box ${JSON.stringify(c.box)}`,
      );
    }
  },
);

test(
  "an array using a codec we lack is UnsupportedCodec naming it and where it sits, before any chunk is read",
  { skip: python.skip },
  async () => {
    const root = mkdtempSync(join(tmpdir(), "zs-codec-missing-"));
    runPython(root);
    for (const [array, at] of [
      ["gzip", "/codecs/1"],
      ["sharded_transpose_big_start", "/codecs/0/configuration/codecs/2"],
    ] as const) {
      const key = join(root, array, "zarr.json");
      const doc = JSON.parse(readFileSync(key, "utf8"));
      const codecs =
        array === "gzip" ? doc.codecs : (doc.codecs[0].configuration.codecs as Record<string, unknown>[]);
      codecs[codecs.length - 1] = { name: "made-up-codec", configuration: { level: 1 } };
      writeFileSync(key, JSON.stringify(doc));
      const { store, calls } = countingStore(new FsStore(root));
      await assert.rejects(
        openArray(store, array),
        (e) =>
          e instanceof UnsupportedCodec &&
          e.codec === "made-up-codec" &&
          e.pointer === at &&
          e.document === `${array}/zarr.json` &&
          e.message.includes('"made-up-codec"'),
      );
      const fetched = calls.filter((c) => !["version", "size"].includes(c.method));
      assert.deepEqual(
        fetched.map((c) => c.key),
        [`${array}/zarr.json`],
        "only the metadata was read",
      );
    }
  },
);
