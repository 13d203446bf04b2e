import assert from "node:assert/strict";
import { test } from "node:test";
import { encode, encodeInto, maxEncodedLength, profileCodec, setCodecBackend } from "@zarr-stream/codecs";
import { SchemaError } from "@zarr-stream/spec";
import fc from "fast-check";
import { BACKENDS, DTYPES, PROFILES, randomBytes, smoothBytes } from "./helpers.js";

const runs = Number(process.env.FC_RUNS ?? 60);
const seed = Number(process.env.FC_SEED ?? 20261202);

for (const backend of BACKENDS) {
  test(`encodeInto [${backend}]: each frame equals encode() of its chunk, packed back to back from the offset`, async () => {
    setCodecBackend(backend);
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...PROFILES),
        fc.constantFrom(...DTYPES),
        // Sizes include 0 and the tiny chunks where c-blosc's frame length depends on its output room.
        fc.array(fc.option(fc.integer({ min: 0, max: 70_000 }), { nil: undefined }), { maxLength: 9 }),
        fc.integer({ min: 0, max: 64 }),
        fc.boolean(),
        async (profile, dtype, lengths, offset, slack) => {
          const spec = profileCodec(profile, dtype);
          const chunks = lengths.map((n, i) =>
            n === undefined ? undefined : i % 2 ? randomBytes(n, n + i) : smoothBytes(n, i),
          );
          let bound = offset;
          for (const c of chunks) if (c) bound += maxEncodedLength(spec, c.length);
          const out = new Uint8Array(bound + (slack ? 4096 : 0)).fill(0xa5);
          const sizes = new Uint32Array(chunks.length).fill(7);
          const end = await encodeInto(spec, chunks, out, offset, sizes);
          assert.ok(
            out.subarray(0, offset).every((b) => b === 0xa5),
            "bytes before the offset untouched",
          );
          let pos = offset;
          for (let i = 0; i < chunks.length; i++) {
            const c = chunks[i];
            if (c === undefined) {
              assert.equal(sizes[i], 0);
              continue;
            }
            const want = await encode(spec, c);
            assert.ok(want.length <= maxEncodedLength(spec, c.length), "the bound holds");
            assert.equal(sizes[i], want.length, `chunk ${i} (${c.length} bytes)`);
            assert.deepEqual(out.subarray(pos, pos + want.length), want, `chunk ${i} frame`);
            pos += want.length;
          }
          assert.equal(end, pos);
        },
      ),
      { numRuns: runs, seed },
    );
  });
}

test("encodeInto: an output smaller than offset plus the bound is a SchemaError before any work", async () => {
  const spec = profileCodec("diagnostic", "float64");
  const chunk = smoothBytes(4096);
  const out = new Uint8Array(10 + maxEncodedLength(spec, 4096) - 1);
  await assert.rejects(encodeInto(spec, [chunk], out, 10, new Uint32Array(1)), (e: unknown) => {
    assert.ok(e instanceof SchemaError);
    assert.equal(e.pointer, "/out");
    return true;
  });
  assert.ok(
    out.every((b) => b === 0),
    "nothing written",
  );
  await assert.rejects(encodeInto(spec, [chunk], new Uint8Array(9000), 0, new Uint32Array(2)), SchemaError);
});
