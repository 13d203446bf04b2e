import assert from "node:assert/strict";
import { test } from "node:test";
import {
  type CodecBackendName,
  type CodecSpec,
  decode,
  encode,
  profileCodec,
  setCodecBackend,
} from "@zarr-stream/codecs";
import fc from "fast-check";
import { BACKENDS, DTYPES, PROFILES, randomBytes, smoothBytes } from "./helpers.js";

async function encodeWith(b: CodecBackendName, spec: CodecSpec, data: Uint8Array) {
  setCodecBackend(b);
  return encode(spec, data);
}
async function decodeWith(b: CodecBackendName, spec: CodecSpec, frame: Uint8Array, n: number) {
  setCodecBackend(b);
  return decode(spec, frame, n, "rt/c/0");
}

function sizesFor(itemsize: number): number[] {
  return [0, 1, itemsize - 1, itemsize, itemsize * 7 + 3, 4099, itemsize * 1000, 300_007].filter(
    (n) => n >= 0,
  );
}

const ALL: CodecBackendName[] = [...BACKENDS, "numcodecs"];
for (const from of ALL) {
  for (const to of ALL) {
    test(`round trip: every profile × dtype, sizes 0..300007, encoded by ${from}, decoded by ${to}, bitwise`, async () => {
      for (const profile of PROFILES) {
        for (const dtype of DTYPES) {
          const spec = profileCodec(profile, dtype);
          const itemsize = spec.kind === "blosc" ? spec.typesize : 8;
          for (const n of new Set(sizesFor(itemsize))) {
            for (const data of [smoothBytes(n), randomBytes(n, n + 1)]) {
              const frame = await encodeWith(from, spec, data);
              const back = await decodeWith(to, spec, frame, n);
              assert.ok(back instanceof Uint8Array, "decode returns a Uint8Array");
              assert.deepEqual(back, new Uint8Array(data), `${profile}/${dtype}/${n} bytes`);
            }
          }
        }
      }
    });
  }
}

test("round trip: smooth float64 compresses; shuffle with typesize 8 (ours) beats typesize 4 (numcodecs)", async () => {
  const data = smoothBytes(1 << 20);
  const sizes: Record<string, number> = {};
  for (const b of [...BACKENDS, "numcodecs"] as const) {
    for (const profile of PROFILES) {
      sizes[`${b}/${profile}`] = (await encodeWith(b, profileCodec(profile, "float64"), data)).length;
      assert.ok(sizes[`${b}/${profile}`]! < data.length, `${b}/${profile}: ${sizes[`${b}/${profile}`]}`);
    }
  }
  // The cost of numcodecs' hard-coded typesize 4: shuffling 8-byte values in 4-byte lanes.
  assert.ok(sizes["native/diagnostic"]! < sizes["numcodecs/diagnostic"]!, JSON.stringify(sizes));
  // One C tree, two builds: the SIMD wasm writes the addon's frames.
  assert.equal(sizes["wasm/diagnostic"], sizes["native/diagnostic"], JSON.stringify(sizes));
  assert.ok(sizes["native/diagnostic"]! < sizes["native/wasm"]!, "byte shuffle helps floats over plain zstd");
});

test("round trip: our Blosc frames record typesize = itemsize; numcodecs wasm writes typesize 4", async () => {
  // Documented finding: numcodecs.js 0.3.2's Blosc takes no typesize and hard-codes 4. The frame is
  // still valid Blosc (the header carries the typesize the decoder must use), as the cross-decode test shows.
  for (const dtype of ["float64", "uint8", "int32"] as const) {
    const spec = profileCodec("diagnostic", dtype);
    const data = smoothBytes(4096);
    assert.equal((await encodeWith("native", spec, data))[3], (spec as { typesize: number }).typesize, dtype);
    assert.equal((await encodeWith("wasm", spec, data))[3], (spec as { typesize: number }).typesize, dtype);
    assert.equal((await encodeWith("numcodecs", spec, data))[3], 4, dtype);
  }
});

test("round trip: zstd checksum:true frames carry a checksum and cross-decode (native verifies it)", async () => {
  const spec: CodecSpec = { kind: "zstd", level: 3, checksum: true };
  const data = smoothBytes(70_001);
  for (const from of BACKENDS) {
    const frame = await encodeWith(from, spec, data);
    assert.equal((frame[4] ?? 0) & 0x04, 0x04, `${from} sets Content_Checksum_flag`);
    for (const to of BACKENDS) assert.deepEqual(await decodeWith(to, spec, frame, data.length), data);
  }
});

test("round trip: random specs and byte strings (fast-check), every backend pair", async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.constantFrom(...PROFILES),
      fc.constantFrom(...DTYPES),
      fc.uint8Array({ minLength: 0, maxLength: 3000 }),
      fc.constantFrom(...BACKENDS),
      fc.constantFrom(...BACKENDS),
      async (profile, dtype, data, from, to) => {
        const spec = profileCodec(profile, dtype);
        const frame = await encodeWith(from, spec, data);
        assert.deepEqual(await decodeWith(to, spec, frame, data.length), data);
      },
    ),
    { numRuns: 150 },
  );
});

test("round trip: encode reads a view at its offset, not its whole ArrayBuffer", async () => {
  const whole = randomBytes(1000, 7);
  const view = whole.subarray(100, 400);
  for (const b of BACKENDS) {
    for (const profile of PROFILES) {
      const spec = profileCodec(profile, "uint8");
      const frame = await encodeWith(b, spec, view);
      assert.deepEqual(await decodeWith(b, spec, frame, 300), new Uint8Array(view));
      const inside = new Uint8Array(frame.length + 10);
      inside.set(frame, 5);
      const shifted = inside.subarray(5, 5 + frame.length);
      assert.deepEqual(
        await decodeWith(b, spec, shifted, 300),
        new Uint8Array(view),
        `${b}/${profile} offset frame`,
      );
    }
  }
});
