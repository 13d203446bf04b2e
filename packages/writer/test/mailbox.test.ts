import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { type CommitToken, ProtocolError, SchemaError } from "@zarr-stream/spec";
import { FsStore, MemoryStore, type Store, snapshotStore } from "@zarr-stream/store";
import {
  clearRound,
  collectTokens,
  MailboxTimeout,
  mailboxKey,
  postToken,
  type ZarrStreamWriter,
} from "../src/index.js";
import { COMMIT_EVERY, N_RECORDS, openWriters, REGIONS, runFrom, SCHEMA, tOf } from "./crash-workload.js";
import { committedDump, recordArrays } from "./helpers.js";

const dir = mkdtempSync(join(tmpdir(), "zs-mailbox-"));
after(() => rmSync(dir, { recursive: true, force: true }));
let nDirs = 0;
const backends: [string, () => Store][] = [
  ["MemoryStore", () => new MemoryStore()],
  ["FsStore", () => new FsStore(join(dir, `s${nDirs++}`))],
];

/** Real tokens of one round: the 4-writer workload, one record each, flushed. */
async function roundTokens(store: Store): Promise<CommitToken[]> {
  const writers = await openWriters(store, "create");
  for (const w of writers) {
    await w.writeRecord(
      tOf(0),
      recordArrays(SCHEMA, 0, REGIONS[w.writerId]!, (_, p) => p || w.isOwner),
    );
  }
  return Promise.all(writers.map((w) => w.flush()));
}

describe("mailboxKey", () => {
  it("mailbox: tokens live at _tokens/<commit_seq+1>/<writer>.json", () => {
    assert.equal(mailboxKey(1, 0), "_tokens/1/0.json");
    assert.equal(mailboxKey(42, 7), "_tokens/42/7.json");
  });

  it("standards: a round below 1 or a bad writer id is a SchemaError", () => {
    for (const [round, writer] of [
      [0, 0],
      [-1, 0],
      [1.5, 0],
      [Number.NaN, 0],
      [1, -1],
      [1, 0.5],
    ] as const) {
      assert.throws(() => mailboxKey(round, writer), SchemaError, `${round}/${writer}`);
    }
  });
});

for (const [name, make] of backends) {
  describe(`mailbox on ${name}`, () => {
    it("mailbox: posted tokens come back validated, in writer order, and clearRound removes only that round", async () => {
      const store = make();
      const tokens = await roundTokens(store);
      for (const t of [...tokens].reverse()) await postToken(store, 1, t);
      await postToken(store, 2, tokens[2]!);
      assert.deepEqual(await collectTokens(store, 1, 4, { timeoutMs: 0 }), tokens);
      await clearRound(store, 1);
      assert.deepEqual(await store.list("_tokens/"), ["_tokens/2/2.json"]);
    });

    it("mailbox: a second post for the same round and writer is a ProtocolError and keeps the first", async () => {
      const store = make();
      const [t0] = await roundTokens(store);
      await postToken(store, 1, t0!);
      const before = await store.get(mailboxKey(1, 0));
      await assert.rejects(postToken(store, 1, { ...t0!, records: [] }), ProtocolError);
      assert.deepEqual(await store.get(mailboxKey(1, 0)), before);
    });

    it("mailbox: the owner's wait times out with MailboxTimeout naming exactly the missing writers", async () => {
      const store = make();
      const tokens = await roundTokens(store);
      await postToken(store, 3, tokens[0]!);
      await postToken(store, 3, tokens[2]!);
      const snap = await snapshotStore(store);
      const started = Date.now();
      await assert.rejects(
        collectTokens(store, 3, 4, { timeoutMs: 200, pollMs: 20 }),
        (e: unknown) =>
          e instanceof MailboxTimeout &&
          e.round === 3 &&
          e.missing.join() === "1,3" &&
          /writers 1, 3/.test(e.message),
      );
      assert.ok(Date.now() - started >= 200);
      assert.deepEqual(await snapshotStore(store), snap, "waiting writes nothing");
    });

    it("mailbox: the wait ends as soon as the last writer posts", async () => {
      const store = make();
      const tokens = await roundTokens(store);
      for (const t of tokens.slice(0, 3)) await postToken(store, 1, t);
      setTimeout(() => void postToken(store, 1, tokens[3]!), 150);
      const got = await collectTokens(store, 1, 4, { timeoutMs: 5000, pollMs: 20 });
      assert.deepEqual(got, tokens);
    });
  });
}

describe("mailbox refuses bad input", () => {
  it("standards: postToken validates the token before any write", async () => {
    const store = new MemoryStore();
    const [t0] = await roundTokens(store);
    const before = await store.list("");
    await assert.rejects(
      postToken(store, 1, { ...t0!, schema: "nope" } as unknown as CommitToken),
      SchemaError,
    );
    await assert.rejects(postToken(store, 1, { ...t0!, writer: -1 }), SchemaError);
    await assert.rejects(postToken(store, 0, t0!), SchemaError);
    assert.deepEqual(await store.list(""), before);
  });

  it("standards: a corrupt, misfiled or foreign token in the mailbox is refused with the key named", async () => {
    const [t0, t1] = await roundTokens(new MemoryStore());
    const enc = (v: unknown) => new TextEncoder().encode(typeof v === "string" ? v : JSON.stringify(v));
    const cases: [string, Uint8Array, (e: unknown) => boolean][] = [
      [
        "_tokens/1/1.json",
        enc("{not json"),
        (e) => e instanceof SchemaError && e.document === "_tokens/1/1.json",
      ],
      ["_tokens/1/1.json", enc(t0), (e) => e instanceof SchemaError && /writer 0/.test(e.message)],
      [
        "_tokens/1/1.json",
        enc({ ...t1, records: "x" }),
        (e) => e instanceof SchemaError && /_tokens\/1\/1/.test(e.message),
      ],
      [
        "_tokens/1/9.json",
        enc({ ...t1, writer: 9 }),
        (e) => e instanceof ProtocolError && /writer 9/.test(e.message),
      ],
    ];
    for (const [key, bytes, check] of cases) {
      const store = new MemoryStore();
      await postToken(store, 1, t0!);
      await store.put(key, bytes);
      await assert.rejects(collectTokens(store, 1, 2, { timeoutMs: 0 }), check, key);
    }
  });

  it("standards: bad nWriters/timeouts are SchemaErrors; an abort ends the wait with the signal's reason", async () => {
    const store = new MemoryStore();
    await assert.rejects(collectTokens(store, 1, 0), SchemaError);
    await assert.rejects(collectTokens(store, 1, 2, { timeoutMs: -1 }), SchemaError);
    await assert.rejects(collectTokens(store, 1, 2, { pollMs: Number.NaN }), SchemaError);
    const ctl = new AbortController();
    setTimeout(() => ctl.abort(new Error("stop waiting")), 50);
    await assert.rejects(collectTokens(store, 1, 2, { signal: ctl.signal, pollMs: 10 }), /stop waiting/);
  });
});

for (const [name, make] of backends) {
  describe(`mailbox exchange in a whole run on ${name}`, () => {
    it("mailbox: 4 writers exchanging tokens through the store commit the same store as direct token passing", async () => {
      const direct = new MemoryStore();
      await runFrom(await openWriters(direct, "create"), 0);
      const store = make();
      const writers = await openWriters(store, "create");
      const [owner] = writers as [ZarrStreamWriter];
      // Round rule: a writer's k-th flush since join goes to round c0 + k (c0 = commit_seq it read).
      const c0 = writers.map((w) => (w.lastManifest as { commit_seq: number }).commit_seq);
      const flushes = writers.map(() => 0);
      for (let r = 0; r < N_RECORDS; r++) {
        for (const w of writers) {
          await w.writeRecord(
            tOf(r),
            recordArrays(SCHEMA, r, REGIONS[w.writerId]!, (_, p) => p || w.isOwner),
          );
        }
        if ((r + 1) % COMMIT_EVERY !== 0) continue;
        await Promise.all(
          writers.map(async (w, i) => postToken(store, c0[i]! + ++flushes[i]!, await w.flush())),
        );
        const round = (owner.lastManifest as { commit_seq: number }).commit_seq + 1;
        assert.equal(round, c0[0]! + flushes[0]!, "the owner's round is manifest commit_seq + 1");
        await owner.commit(await collectTokens(store, round, 4, { timeoutMs: 1000 }));
        await clearRound(store, round);
      }
      assert.deepEqual(await store.list("_tokens/"), []);
      assert.equal(await committedDump(store), await committedDump(direct));
    });
  });
}
