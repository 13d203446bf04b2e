import assert from "node:assert/strict";
import { test } from "node:test";
import { crc32c, setCodecBackend } from "@zarr-stream/codecs";
import fc from "fast-check";
import { loadAddon } from "../src/native-backend.js";
import { BACKENDS, randomBytes } from "./helpers.js";

const ascii = (s: string) => new TextEncoder().encode(s);

// Published CRC-32C check values (RFC 3720 appendix B.4 and the "123456789" check of the Castagnoli CRC).
const VECTORS: [string, Uint8Array, number][] = [
  ['"123456789"', ascii("123456789"), 0xe3069283],
  ["empty", new Uint8Array(0), 0],
  ["32 zero bytes", new Uint8Array(32), 0x8a9136aa],
  ["32 0xff bytes", new Uint8Array(32).fill(0xff), 0x62a8ab43],
  ["0..31 ascending", Uint8Array.from({ length: 32 }, (_, i) => i), 0x46dd794e],
  ["31..0 descending", Uint8Array.from({ length: 32 }, (_, i) => 31 - i), 0x113fdb5c],
];

for (const backend of BACKENDS) {
  test(`crc32c [${backend}]: known vectors ("123456789" → 0xE3069283, RFC 3720 B.4, empty → 0)`, async () => {
    setCodecBackend(backend);
    for (const [what, data, want] of VECTORS) {
      const got = await crc32c(data);
      assert.equal(got, want, `${what}: 0x${got.toString(16)}`);
      assert.ok(Number.isInteger(got) && got >= 0 && got <= 0xffffffff, "an unsigned 32-bit number");
    }
  });
}

test("crc32c: native == wasm on random inputs of every length 0..300, unaligned views, and 16 MiB + 5", async () => {
  const big = randomBytes((16 << 20) + 5, 99);
  const inputs = [big, big.subarray(3), big.subarray(1, 1 << 17)];
  for (let n = 0; n <= 300; n++) inputs.push(randomBytes(n + 8, n).subarray(n % 8, (n % 8) + n));
  for (const data of inputs) {
    setCodecBackend("native");
    const native = await crc32c(data);
    setCodecBackend("wasm");
    assert.equal(await crc32c(data), native, `${data.length} bytes at offset ${data.byteOffset}`);
  }
});

test("crc32c: native hardware (SSE4.2) and portable slicing-by-8 paths agree (fast-check)", () => {
  const loaded = loadAddon();
  assert.ok("addon" in loaded, "native addon is built");
  const { addon } = loaded;
  fc.assert(
    fc.property(fc.uint8Array({ maxLength: 2000 }), fc.nat(7), (bytes, skip) => {
      const view = bytes.subarray(Math.min(skip, bytes.length));
      assert.equal(addon.crc32cSync(view), addon.crc32cPortable(view));
    }),
    { numRuns: 300 },
  );
});

test("crc32c: a single flipped bit changes the checksum (both backends)", async () => {
  const data = randomBytes(4096, 5);
  for (const backend of BACKENDS) {
    setCodecBackend(backend);
    const base = await crc32c(data);
    for (let i = 0; i < data.length; i += 97) {
      const bad = data.slice();
      bad[i]! ^= 1 << (i % 8);
      assert.notEqual(await crc32c(bad), base, `${backend} byte ${i}`);
    }
  }
});
