// Exclusive create: eight OS processes race `create` on one store location, a few rounds, on an FsStore path and
// on an S3 prefix: exactly one wins each round and the seven others report StoreExists.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { pathToFileURL } from "node:url";
import { readOutputManifest } from "@zarr-stream/reader";
import { FsStore, S3Store, type Store } from "@zarr-stream/store";
import { type S3Server, s3ServerSkipReason, startS3Server } from "@zarr-stream/test-support/s3-server";
import { LEASE_PREFIX, leaseKey } from "../src/index.js";
import { okValue, type Repl, startRepl } from "./writer-repl.js";

const RACERS = 8;
const ROUNDS = 5;
const skip = s3ServerSkipReason("moto");
const tmp = mkdtempSync(join(tmpdir(), "zs-create-race-"));
let server: S3Server<S3Store> | undefined;
let bucket = "";
const opened: Store[] = [];
/** The racers: started once, idle between commands, used by every round on both backends. */
let racers: Repl[] = [];

before(async () => {
  if (skip === undefined) {
    server = await startS3Server("moto", (o) => new S3Store(o));
    bucket = await server.makeBucket();
  }
  racers = await Promise.all(Array.from({ length: RACERS }, () => startRepl(server?.env ?? {})));
});
after(async () => {
  await Promise.all(racers.map((r) => r.stop()));
  for (const s of opened) await (s as { close?: () => Promise<void> }).close?.();
  await server?.stop();
  rmSync(tmp, { recursive: true, force: true });
});

const SINGLE = JSON.stringify({ kind: "single" });

const backends: [
  string,
  (round: number) => { url: string; open: () => Store },
  () => Record<string, string>,
][] = [
  [
    "FsStore",
    (round) => {
      const root = join(tmp, `race-${round}`);
      return { url: pathToFileURL(root).href, open: () => new FsStore(root) };
    },
    () => ({}),
  ],
  [
    "S3Store",
    (round) => {
      const prefix = `race-${round}`;
      return {
        url: `s3://${bucket}/${prefix}`,
        open: () => {
          const s = server!.store({ prefix });
          opened.push(s);
          return s;
        },
      };
    },
    () => server!.env,
  ],
];

for (const [backend, location] of backends) {
  describe(`create race on ${backend}`, { skip: backend === "S3Store" ? skip : undefined }, () => {
    it(`${RACERS} processes racing create, ${ROUNDS} rounds: one wins, the others get StoreExists`, async () => {
      for (let round = 0; round < ROUNDS; round++) {
        const at = location(round);
        // every racer is idle and waiting: the command reaches all of them at once
        const replies = await Promise.all(racers.map((r) => r.send(`open ${at.url} create ${SINGLE} {}`)));
        const winners = replies.flatMap((r, i) => (r.ok ? [i] : []));
        assert.equal(winners.length, 1, `round ${round}: ${winners.length} creates succeeded`);
        const losers = replies.filter((r) => !r.ok).map((r) => (r.ok ? "" : `${r.name}: ${r.message}`));
        for (const l of losers) assert.match(l, /^StoreExists: /, `round ${round}`);
        // the winner's store works: a record, committed by its flush (a v1 Single store)
        const w = racers[winners[0]!]!;
        okValue(await w.send("write 10 0"), "winner write");
        okValue(await w.send("flush"), "winner flush");
        const store = at.open();
        assert.equal((await readOutputManifest(store)).n_records, 1);
        assert.deepEqual(await store.list(LEASE_PREFIX), [leaseKey(0)]);
        await Promise.all(racers.map((r) => r.send("drop")));
      }
    });
  });
}
