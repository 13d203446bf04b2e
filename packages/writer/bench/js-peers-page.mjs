// The Chromium page of the JavaScript-peers bench (js-peers.mjs bundles it for the browser, as the viewer
// is bundled): our reader as the viewer reads (HttpStore over the viewer's server, the reader's and the
// codecs' browser builds) and zarrita.js with its FetchStore and numcodecs.js, over the same store. Node
// calls jsPeers.setup once, then jsPeers.turn("ours" | "zarrita") in turns; the page times each read.
import * as reader from "@zarr-stream/reader";
import * as shard from "@zarr-stream/shard";
import * as zarrita from "zarrita";
// The viewer's own HTTP store: the reading path the viewer page takes (the bench is a tool, not a package
// import, so the layers keep no circle).
import { HttpStore } from "../../viewer/dist/src/http-store.js";
import { readers, sameBytes, turn } from "./js-peers-readers.mjs";
import { readAll } from "./read-all.mjs";

let wl;
let want;
const storeUrl = new URL("/store/", location.href).href;

globalThis.jsPeers = {
  setup(workload, boxes) {
    wl = workload;
    want = boxes.map((b) => new Uint8Array(b));
  },
  /** One turn of `who` (js-peers-readers.mjs): first record, warm record, read-all. */
  turn(who) {
    return turn(opener(who), wl, checker(who));
  },
  /**
   * The page's fetch alone: every key fetched whole, `lanes` at a time, as the readers fetch (no-store),
   * the bytes kept and nothing decoded. Resolves with the bytes and the stored bytes per second.
   */
  async fetchOnly(keys, lanes) {
    const t = performance.now();
    let next = 0;
    const sizes = await Promise.all(
      Array.from({ length: lanes }, async () => {
        let bytes = 0;
        while (next < keys.length) {
          const res = await fetch(new URL(keys[next++], storeUrl), { cache: "no-store" });
          if (res.status !== 200) throw new Error(`fetch only: HTTP ${res.status} for ${res.url}`);
          bytes += (await res.arrayBuffer()).byteLength;
        }
        return bytes;
      }),
    );
    const bytes = sizes.reduce((a, b) => a + b, 0);
    return { bytes, MBps: bytes / 1e3 / (performance.now() - t) };
  },
  /** `n` reads of one kind ("record" or "all") by `who` after opening once: their times (ms), to profile. */
  async repeat(who, what, n) {
    const r = await opener(who)();
    const times = [];
    for (let i = 0; i < n; i++) {
      const t = performance.now();
      await r[what]();
      times.push(performance.now() - t);
    }
    return times;
  },
};

function checker(who) {
  return (k, box) => {
    if (!sameBytes(box, want[k]))
      throw new Error(`${who}: record box of ${wl.vars[k].name} differs from what was written`);
  };
}

function opener(who) {
  const r = readers(wl, { ours: { ...reader, ...shard }, zarrita, readAll });
  // zarrita's FetchStore asks for a shard index by a suffix range, which the viewer's server answers,
  // rather than its default HEAD then range (two requests for one).
  if (who === "ours") return async () => r.ours(new HttpStore(storeUrl));
  if (who === "zarrita") return () => r.zarrita(new zarrita.FetchStore(storeUrl, { useSuffixRequest: true }));
  throw new Error(`unknown reader ${who}`);
}
