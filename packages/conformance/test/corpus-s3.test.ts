import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { S3Store } from "@zarr-stream/store";
import {
  S3_SERVER_KINDS,
  type S3Server,
  s3ServerSkipReason,
  startS3Server,
} from "@zarr-stream/test-support/s3-server";
import { BUNDLED_CORPUS, compareDump, dumpStore, loadCorpus, oracleDump, runCase } from "../src/index.js";

const corpus = await loadCorpus(BUNDLED_CORPUS);
// The cases past 512 manifest entries write over a thousand shard objects each: about five minutes on the
// two emulators together. What they test, the manifest's two forms at size, does not depend on the
// store, and corpus.test (MemoryStore) and crosscheck.test (filesystem, every reader) run them.
const PAST_512 = ["pages-append-524", "unpaged-append-524", "pages-indexed-600", "unpaged-indexed-600"];
const cases = corpus.cases.filter((c) => !PAST_512.includes(c.name));

// The same driver and oracle as corpus.test.ts, on an S3 emulator (moto) and a real S3 gateway
// (versitygw), both on loopback: every case's committed state read back through S3 equals the oracle bitwise.
for (const kind of S3_SERVER_KINDS) {
  describe(`§10 corpus on S3Store (${kind})`, { skip: s3ServerSkipReason(kind) }, () => {
    let s3: S3Server<S3Store>;
    before(async () => {
      s3 = await startS3Server(kind, (o) => new S3Store(o));
      await s3.makeBucket();
    });
    after(async () => s3?.stop());

    test("only the cases past 512 entries are left to the other stores", () => {
      assert.deepEqual(
        corpus.cases.filter((c) => !cases.includes(c)).map((c) => c.name),
        PAST_512,
      );
    });

    for (const c of cases) {
      test(`${c.name} on S3 equals the oracle`, async () => {
        const store = s3.store();
        await runCase(c, store);
        assert.deepEqual(compareDump(oracleDump(c), await dumpStore(store, c.name)), []);
      });
    }
  });
}
