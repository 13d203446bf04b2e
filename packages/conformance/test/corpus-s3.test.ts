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

    for (const c of corpus.cases) {
      test(`${c.name} on S3 equals the oracle`, async () => {
        const store = s3.store();
        await runCase(c, store);
        assert.deepEqual(compareDump(oracleDump(c), await dumpStore(store, c.name)), []);
      });
    }
  });
}
