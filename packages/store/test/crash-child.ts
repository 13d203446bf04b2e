// Spawned by fs-store-crash.test: rewrites one key forever until the test SIGKILLs it. Reports each put
// only after it resolved, so the parent knows which versions were acknowledged.
import { FsStore } from "../src/fs-store.js";
import { crashPayload } from "./crash-payload.js";

const [root, key, start] = process.argv.slice(2);
if (root === undefined || key === undefined || start === undefined)
  throw new Error("usage: root key startSeq");
const store = new FsStore(root);
process.stdout.write("started\n");
for (let seq = Number(start); ; seq++) {
  await store.put(key, crashPayload(seq));
  process.stdout.write(`done ${seq}\n`);
}
