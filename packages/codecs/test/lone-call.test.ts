import assert from "node:assert/strict";
import { test } from "node:test";
import { decode, decodeBoxes, encode, profileCodec, setCodecBackend } from "@zarr-stream/codecs";
import { CorruptShard } from "@zarr-stream/spec";
import { LoneCallGate } from "../src/lone-call.js";
import { loadAddon } from "../src/native-backend.js";
import { BACKENDS, smoothBytes } from "./helpers.js";

/** A gate whose calls record where they ran; pooled calls settle when the test says so. */
function recordingGate() {
  const gate = new LoneCallGate();
  const ran: string[] = [];
  const release: (() => void)[] = [];
  const call = (name: string, fail = false, bytes = 1 << 16) =>
    gate.run(
      bytes,
      () => {
        ran.push(`${name}:here`);
        if (fail) throw new Error(`${name} failed here`);
        return name;
      },
      () => {
        ran.push(`${name}:pool`);
        return new Promise<string>((resolve, reject) =>
          release.push(() => (fail ? reject(new Error(`${name} failed in the pool`)) : resolve(name))),
        );
      },
    );
  return { gate, ran, release, call };
}

test("lone calls: one call alone runs here; calls made in the same turn all go to the pool", async () => {
  const { ran, release, call } = recordingGate();
  assert.equal(await call("a"), "a");
  assert.deepEqual(ran, ["a:here"]);
  const both = Promise.all([call("b"), call("c")]);
  await Promise.resolve();
  assert.deepEqual(ran.slice(1), ["b:pool", "c:pool"]);
  for (const r of release.splice(0)) r();
  assert.deepEqual(await both, ["b", "c"]);
});

test("lone calls: a lone call decoding more than 1 MiB goes to the pool", async () => {
  const { ran, release, call } = recordingGate();
  const big = call("a", false, (1 << 20) + 1);
  await Promise.resolve();
  assert.deepEqual(ran, ["a:pool"]);
  for (const r of release.splice(0)) r();
  assert.equal(await big, "a");
  assert.equal(await call("b", false, 1 << 20), "b");
  assert.equal(ran.at(-1), "b:here");
});

test("lone calls: a call made while another is in the pool goes to the pool too; once it settles, here again", async () => {
  const { ran, release, call } = recordingGate();
  const first = Promise.all([call("a"), call("b")]);
  await Promise.resolve();
  const third = call("c");
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(ran, ["a:pool", "b:pool", "c:pool"]);
  for (const r of release.splice(0)) r();
  await Promise.all([first, third]);
  assert.equal(await call("d"), "d");
  assert.equal(ran.at(-1), "d:here");
});

test("lone calls: failures reject, here and in the pool, and a failed pooled call leaves the pool", async () => {
  const { ran, release, call } = recordingGate();
  await assert.rejects(call("a", true), /a failed here/);
  const both = Promise.allSettled([call("b", true), call("c")]);
  await Promise.resolve();
  for (const r of release.splice(0)) r();
  const [b, c] = await both;
  assert.equal(b.status, "rejected");
  assert.match(String((b as PromiseRejectedResult).reason), /b failed in the pool/);
  assert.equal(c.status, "fulfilled");
  assert.equal(await call("d"), "d");
  assert.equal(ran.at(-1), "d:here", "nothing is counted in the pool any more");
});

test("lone calls: a pooled call that throws instead of returning a promise rejects", async () => {
  const gate = new LoneCallGate();
  const pooled = () => {
    throw new Error("threw before a promise");
  };
  const calls = [gate.run(0, () => 1, pooled), gate.run(0, () => 2, pooled)];
  for (const c of calls) await assert.rejects(c, /threw before a promise/);
  assert.equal(await gate.run(0, () => 3, pooled), 3);
});

test("lone calls [native]: decoding on the calling thread gives the pool's bytes and errors", async () => {
  const loaded = loadAddon();
  assert.ok("addon" in loaded, "native addon is built");
  const { addon } = loaded;
  setCodecBackend("native");
  const data = smoothBytes(300_000);
  const blosc = await encode(profileCodec("diagnostic", "float64"), data);
  const zstd = await encode(profileCodec("wasm", "float64"), data);
  assert.deepEqual(addon.bloscDecode(blosc, data.length, 1), data);
  assert.deepEqual(addon.zstdDecode(zstd, data.length, 1), data);
  assert.deepEqual(await addon.bloscDecode(blosc, data.length, 0), data);
  const isCorrupt = (e: unknown) => (e as { code?: string }).code === "ZS_CORRUPT";
  assert.throws(() => addon.bloscDecode(blosc.subarray(0, blosc.length - 1), data.length, 1), isCorrupt);
  assert.throws(() => addon.zstdDecode(zstd, data.length - 8, 1), isCorrupt);
  assert.throws(() => addon.bloscDecode(blosc, data.length, 2 as 1), /bad arguments/);
  // decodeBoxes on this thread: the middle third of the chunk into the front of a target.
  const n = data.length / 8;
  const target = new Uint8Array(data.length);
  const shape = Int32Array.of(n);
  const third = Math.floor(n / 3);
  assert.equal(
    addon.decodeBoxes([blosc], 0, shape, 8, target, shape, Int32Array.of(third, 0, third), 1),
    undefined,
  );
  assert.deepEqual(target.subarray(0, third * 8), data.subarray(third * 8, 2 * third * 8));
  assert.throws(
    () => addon.decodeBoxes([blosc.subarray(0, 40)], 0, shape, 8, target, shape, Int32Array.of(0, 0, n), 1),
    (e: unknown) => isCorrupt(e) && (e as { frame?: number }).frame === 0,
  );
});

for (const backend of BACKENDS) {
  test(`lone calls [${backend}]: serial and parallel decodes agree, and a corrupt lone frame is a CorruptShard`, async () => {
    setCodecBackend(backend);
    const spec = profileCodec("checkpoint", "float64");
    const chunks = [0, 1, 2, 3].map((k) => smoothBytes(1 << 20, k * 977));
    const frames = await Promise.all(chunks.map((c) => encode(spec, c)));
    for (let i = 0; i < frames.length; i++)
      assert.deepEqual(await decode(spec, frames[i]!, 1 << 20), chunks[i]);
    assert.deepEqual(await Promise.all(frames.map((f) => decode(spec, f, 1 << 20))), chunks);
    const shape = Int32Array.of((1 << 20) / 8);
    const into = new Uint8Array(1 << 20);
    await decodeBoxes(spec, [frames[2]!], shape, 8, into, shape, Int32Array.of(0, 0, shape[0]!));
    assert.deepEqual(into, chunks[2]);
    const truncated = frames[1]!.subarray(0, frames[1]!.length - 3);
    await assert.rejects(decode(spec, truncated, 1 << 20, "k/c/1"), CorruptShard);
    await assert.rejects(
      decodeBoxes(spec, [truncated], shape, 8, into, shape, Int32Array.of(0, 0, shape[0]!), "k/c/1"),
      CorruptShard,
    );
  });
}
