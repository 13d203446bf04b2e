// The two readers of the JavaScript-peers bench (js-peers.mjs) and one turn of either, shared by the Node
// turns and the Chromium page (js-peers-page.mjs), so both places time the same reads: no Node module here.
import { field, totalBytes } from "./workload.mjs";

const MB = 1e6;

/** The record box of variable k as the writer wrote it (its records cycle through a pool of wl.pool). */
export function expectedBox(wl, k) {
  const [[a, b], [c, d]] = wl.read_region;
  const f = field(wl, k, wl.read_record % wl.pool);
  const want = new f.constructor((b - a) * (d - c));
  for (let i = a; i < b; i++) want.set(f.subarray(i * wl.lon + c, i * wl.lon + d), (i - a) * (d - c));
  return want;
}

export function sameBytes(a, b) {
  const x = new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
  const y = new Uint8Array(b.buffer, b.byteOffset, b.byteLength);
  return x.length === y.length && x.every((v, i) => v === y[i]);
}

/**
 * The two readers over one store, as the Node turn and the page both drive them: `open()` once, then
 * `record()` (every variable's record box; resolves with the boxes) and `all()` (resolves with the bytes).
 * `ours` and `zarrita` are the modules (so the page passes its bundled copies).
 */
export function readers(wl, { ours, zarrita, readAll }) {
  const [[a, b], [c, d]] = wl.read_region;
  return {
    ours: (store) => {
      const outs = wl.vars.map((v) => ours.allocTypedUnfilled(v.dtype, (b - a) * (d - c)));
      return {
        record: () =>
          Promise.all(
            wl.vars.map((v, k) =>
              ours
                .readRecord(store, v.name, wl.read_record, { lat: [a, b], lon: [c, d] }, { out: outs[k] })
                .then((r) => r.data),
            ),
          ),
        all: () => readAll(store, wl),
      };
    },
    zarrita: async (store) => {
      const root = zarrita.root(store);
      const arrays = await Promise.all(
        wl.vars.map((v) => zarrita.open(root.resolve(v.name), { kind: "array" })),
      );
      return {
        record: () =>
          Promise.all(
            arrays.map((arr) =>
              zarrita
                .get(arr, [wl.read_record, zarrita.slice(a, b), zarrita.slice(c, d)])
                .then((r) => r.data),
            ),
          ),
        all: async () => {
          let bytes = 0;
          for (const arr of arrays) {
            for (let r0 = 0; r0 < wl.records; r0 += wl.shard[0]) {
              const r1 = Math.min(wl.records, r0 + wl.shard[0]);
              const box = await zarrita.get(arr, [zarrita.slice(r0, r1), null, null]);
              bytes += box.data.byteLength;
            }
          }
          return bytes;
        },
      };
    },
  };
}

/**
 * One reader's turn: the first record read (opening included), the warm record read (best of warm reps)
 * and read-all (best of `allReps` passes). `check(k, box)` throws when a box differs from the generator.
 */
export async function turn(open, wl, check, allReps = 1) {
  const t0 = performance.now();
  const r = await open();
  const first = await r.record();
  const first_record_ms = performance.now() - t0;
  for (const [k, box] of first.entries()) check(k, box);
  let warm = Number.POSITIVE_INFINITY;
  for (let i = 0; i < Math.max(3, wl.warm_reps ?? 0); i++) {
    const t = performance.now();
    await r.record();
    warm = Math.min(warm, performance.now() - t);
  }
  let allS = Number.POSITIVE_INFINITY;
  for (let i = 0; i < allReps; i++) {
    const t = performance.now();
    const bytes = await r.all();
    allS = Math.min(allS, (performance.now() - t) / 1000);
    if (bytes !== totalBytes(wl))
      throw new Error(`read-all returned ${bytes} bytes, expected ${totalBytes(wl)}`);
  }
  return { first_record_ms, read_record_ms: warm, read_all_MBps: totalBytes(wl) / MB / allS };
}
