import assert from "node:assert/strict";
import { test } from "node:test";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { decode, encode, profileCodec, setCodecBackend } from "@zarr-stream/codecs";
import { smoothBytes } from "./helpers.js";

setFlagsFromString("--expose-gc");
const gc = runInNewContext("gc") as () => void;

/** Collects garbage and lets the finalisers that V8 queued run on the event loop. */
async function collect(): Promise<void> {
  for (let k = 0; k < 3; k++) {
    gc();
    await new Promise((r) => setImmediate(r));
  }
}

/*
 * Native decode results of 64 KiB and more live in memory the addon reuses once V8 has collected the
 * Buffer that held it. A result still referenced must never be handed out again: results kept alive
 * across collections and recycling keep their bytes, and recycled blocks decode correctly, including a
 * smaller result in a larger recycled block.
 */
test("decode [native]: recycled result memory never overwrites a live result", async () => {
  setCodecBackend("native");
  const spec = profileCodec("diagnostic", "float64");
  const sizes = [256 << 10, 200 << 10, 80 << 10];
  const chunks = Array.from({ length: 24 }, (_, i) => smoothBytes(sizes[i % 3]!, 1000 * i));
  const frames = await Promise.all(chunks.map((c) => encode(spec, c)));
  const decodeAll = () => Promise.all(frames.map((f, i) => decode(spec, f, chunks[i]!.length)));

  const kept = await decodeAll();
  for (let round = 0; round < 4; round++) {
    await decodeAll(); // dropped at once: their blocks go back to the pool at the next collection
    await collect();
    const again = await decodeAll();
    for (const [i, r] of again.entries()) assert.deepEqual(r, chunks[i], `round ${round}, chunk ${i}`);
    for (const [i, r] of kept.entries())
      assert.deepEqual(r, chunks[i], `kept chunk ${i} after round ${round}`);
  }
  // A result the caller writes to is its own memory too.
  kept[0]!.fill(7);
  await collect();
  const fresh = await decodeAll();
  assert.deepEqual(fresh[0], chunks[0]);
  assert.ok(kept[0]!.every((b) => b === 7));
});
