// Spawned by fs-store-cas.test: adds 1 to a counter object `n` times with getVersioned + putIfVersion,
// retrying on a lost race. Lost updates would show as a final count below (children x n).
import { FsStore } from "../src/fs-store.js";

const [root, times] = process.argv.slice(2);
if (root === undefined || times === undefined) throw new Error("usage: root times");
const store = new FsStore(root);
let retries = 0;
for (let i = 0; i < Number(times); i++) {
  for (;;) {
    const cur = await store.getVersioned("counter");
    const value = cur === undefined ? 0 : Number(new TextDecoder().decode(cur.bytes));
    const next = new TextEncoder().encode(String(value + 1));
    if ((await store.putIfVersion("counter", next, cur?.version ?? null)) !== undefined) break;
    retries++;
  }
}
process.stdout.write(`retries ${retries}\n`);
