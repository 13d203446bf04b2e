// Exclusive create: eight OS processes race `create` on one store location, a few rounds, on an FsStore path and
// on an S3 prefix of each loopback server (moto, versitygw): exactly one wins each round and the seven others
// report StoreExists.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { pathToFileURL } from "node:url";
import { readOutputManifest } from "@zarr-stream/reader";
import { FsStore, S3Store, type Store } from "@zarr-stream/store";
import {
  S3_SERVER_KINDS,
  type S3Server,
  type S3ServerKind,
  s3ServerSkipReason,
  startS3Server,
} from "@zarr-stream/test-support/s3-server";
import { LEASE_PREFIX, leaseKey } from "../src/index.js";
import { okValue, type Repl, startRepl } from "./writer-repl.js";

const RACERS = 8;
const ROUNDS = 5;
const SINGLE = JSON.stringify({ kind: "single" });

/** Where a round races: the URL the racers open and a store on it for the checks. */
interface Location {
  url: string;
  open: () => Store;
}

/** A backend's locations and the environment its racers need, set up before its rounds and torn down after. */
interface Backend {
  env: Record<string, string>;
  location(round: number): Location;
  stop(): Promise<void>;
}

function fsBackend(): Backend {
  const tmp = mkdtempSync(join(tmpdir(), "zs-create-race-"));
  return {
    env: {},
    location: (round) => {
      const root = join(tmp, `race-${round}`);
      return { url: pathToFileURL(root).href, open: () => new FsStore(root) };
    },
    stop: async () => rmSync(tmp, { recursive: true, force: true }),
  };
}

async function s3Backend(kind: S3ServerKind): Promise<Backend> {
  const server: S3Server<S3Store> = await startS3Server(kind, (o) => new S3Store(o));
  const bucket = await server.makeBucket();
  const opened: S3Store[] = [];
  return {
    env: server.env,
    location: (round) => ({
      url: `s3://${bucket}/race-${round}`,
      open: () => {
        const s = server.store({ prefix: `race-${round}` });
        opened.push(s);
        return s;
      },
    }),
    stop: async () => {
      for (const s of opened) await s.close();
      await server.stop();
    },
  };
}

const cases: [string, () => Promise<Backend>, string | undefined][] = [
  ["FsStore", async () => fsBackend(), undefined],
  ...S3_SERVER_KINDS.map((kind): [string, () => Promise<Backend>, string | undefined] => [
    `S3Store (${kind})`,
    () => s3Backend(kind),
    s3ServerSkipReason(kind),
  ]),
];

for (const [name, setUp, skip] of cases) {
  describe(`create race on ${name}`, { skip }, () => {
    let backend: Backend;
    /** The racers: started once, idle between commands, used by every round. */
    let racers: Repl[] = [];
    before(async () => {
      backend = await setUp();
      racers = await Promise.all(Array.from({ length: RACERS }, () => startRepl(backend.env)));
    });
    after(async () => {
      await Promise.all(racers.map((r) => r.stop()));
      await backend?.stop();
    });

    it(`${RACERS} processes racing create, ${ROUNDS} rounds: one wins, the others get StoreExists`, async () => {
      for (let round = 0; round < ROUNDS; round++) {
        const at = backend.location(round);
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
