import { readOutputManifestIfPresent } from "@zarr-stream/reader";
import {
  type BlobScope,
  type OutputManifest,
  ProtocolError,
  type RecordArrays,
  type Region,
  type Role,
  SchemaError,
  StoreError,
  StoreExists,
  type StreamSchema,
  type TypedArray,
  ZarrStreamError,
} from "@zarr-stream/spec";
import { openStore, type Store } from "@zarr-stream/store";
import { leaseKey } from "./fenced-objects.js";
import { type RunRank, runRank } from "./launcher-env.js";
import {
  clearCommittedRounds,
  clearRound,
  collectTokens,
  MailboxTimeout,
  mailboxKey,
  postToken,
} from "./mailbox.js";
import { type WriterOptions, ZarrStreamWriter } from "./writer.js";

/** What a run reports while it opens, writes, waits and commits (for a progress line or a log). */
export type RunEvent =
  | { kind: "waiting-for-owner"; waitedMs: number }
  | { kind: "waiting-for-commit"; round: number; waitedMs: number }
  | { kind: "opened"; id: number; count: number; mode: "create" | "join" | "resume"; nextRecord: number }
  | { kind: "posted"; round: number; records: number }
  | { kind: "waiting"; round: number; missing: number[]; waitedMs: number }
  | { kind: "committed"; round: number; nCommitted: number }
  | { kind: "closed" };

export interface RunOptions {
  /** A store URL (`s3://bucket/prefix`, a path, `file://`, `memory://`) or an opened store. */
  store: string | Store;
  /** This process's writer id; default: the launcher's rank variable. */
  id?: number;
  /** How many writers the run has; default: the launcher's size variable. */
  count?: number;
  /** Where the defaults are read from (default process.env). */
  env?: Record<string, string | undefined>;
  /** This writer's region (seed §3). */
  region?: Region;
  /** The schema: the owner (id 0) needs it to create the store; others, when given, check it is the store's. */
  schema?: StreamSchema;
  /** Commit every this many records (0: only on `commit()` and `close()`). Every writer must use the same. */
  commitEvery?: number;
  /** Give up a wait (the owner's for tokens, a contributor's for the store) after this long (default 10 min). */
  timeoutMs?: number;
  /** Report a wait that lasts this long, then again at this interval (default 5 s). */
  reportEveryMs?: number;
  /** Pause between looks at the store while waiting (default 100 ms). */
  pollMs?: number;
  onEvent?: (event: RunEvent) => void;
  writerOptions?: WriterOptions;
}

/**
 * One writer of a multi-process run, with the token exchange hidden: writer 0 creates the store (or
 * resumes it) and commits every round; the others join (or resume) and post their tokens to the store
 * mailbox. A process restarted with the same id picks up at the committed state: write records from
 * `nextRecord` on.
 */
export class StreamRun {
  private pending = 0;
  private written = 0;
  private flushes = 0;
  private closed = false;

  private constructor(
    readonly store: Store,
    readonly rank: RunRank,
    private readonly writer: ZarrStreamWriter,
    private readonly startRecord: number,
    /** commit_seq at open: the k-th flush goes to round c0 + k (mailbox.ts, round rule). */
    private readonly c0: number,
    private readonly o: Required<Pick<RunOptions, "commitEvery" | "timeoutMs" | "reportEveryMs" | "pollMs">> &
      RunOptions,
  ) {}

  static async open(options: RunOptions): Promise<StreamRun> {
    const o = {
      commitEvery: 0,
      timeoutMs: 600_000,
      reportEveryMs: 5_000,
      pollMs: 100,
      ...options,
    };
    for (const name of ["commitEvery", "timeoutMs", "reportEveryMs", "pollMs"] as const) {
      const v = o[name];
      if (!Number.isSafeInteger(v) || v < 0)
        throw new SchemaError(`${name} must be an integer >= 0, got ${v}`, `/${name}`);
    }
    const rank = runRank({ id: options.id, count: options.count }, options.env ?? process.env);
    if (rank.id === 0 && options.schema === undefined) {
      throw new SchemaError("writer 0 is the run's owner: give it the schema to create the store", "/schema");
    }
    const store = typeof options.store === "string" ? openStore(options.store) : options.store;
    const opener = new RunOpener(store, rank, o);
    let { writer, mode } = await opener.open();
    // Resume rule: a token this writer posted for the open round holds records the new handle does not
    // have; once that round is committed they are part of the committed state to resume from. Writers
    // post ahead of the commits, so a restarted writer may find its tokens in several rounds.
    for (;;) {
      const seq = commitSeqOf(writer.lastManifest);
      if (mode !== "resume" || (await store.size(mailboxKey(seq + 1, rank.id))) === undefined) break;
      if (writer.isOwner) await StreamRun.commitRound(store, writer, seq + 1, rank.count, o);
      else await opener.waitForCommitAfter(seq);
      writer = await opener.openAs("resume");
    }
    if (writer.isOwner) await clearCommittedRounds(store, commitSeqOf(writer.lastManifest));
    o.onEvent?.({ kind: "opened", id: rank.id, count: rank.count, mode, nextRecord: writer.committedCount });
    return new StreamRun(store, rank, writer, writer.committedCount, commitSeqOf(writer.lastManifest), o);
  }

  get isOwner(): boolean {
    return this.writer.isOwner;
  }

  /** The index of the next record to write; at open, everything before it is committed. */
  get nextRecord(): number {
    return this.startRecord + this.written;
  }

  /** Writes one record (the owner includes the arrays without a region dim); commits every `commitEvery`. */
  async write(t: number, arrays: RecordArrays): Promise<void> {
    if (this.closed) throw new ProtocolError("this run is closed");
    await this.writer.writeRecord(t, arrays);
    this.written++;
    this.pending++;
    if (this.o.commitEvery > 0 && this.pending >= this.o.commitEvery) await this.commit();
  }

  /** A static array over this writer's region, committed with the next round. */
  async writeStatic(name: string, array: TypedArray): Promise<void> {
    if (this.closed) throw new ProtocolError("this run is closed");
    await this.writer.writeStatic(name, array);
  }

  /** A blob of this writer (seed §6), committed with the next round. */
  async writeBlob(scope: BlobScope, key: string, bytes: Uint8Array): Promise<void> {
    if (this.closed) throw new ProtocolError("this run is closed");
    await this.writer.writeBlob(scope, key, bytes);
  }

  /**
   * Ends a round: posts this writer's token; the owner waits for every writer's token and commits them.
   * Every writer must call it after the same records.
   */
  async commit(): Promise<void> {
    if (this.closed) throw new ProtocolError("this run is closed");
    const round = this.c0 + this.flushes + 1;
    const token = await this.writer.flush();
    await postToken(this.store, round, token);
    this.flushes++;
    this.o.onEvent?.({ kind: "posted", round, records: this.pending });
    this.pending = 0;
    if (this.writer.isOwner)
      await StreamRun.commitRound(this.store, this.writer, round, this.rank.count, this.o);
  }

  /** Commits what is still pending, then ends this writer. */
  async close(): Promise<void> {
    if (this.closed) return;
    if (this.pending > 0) await this.commit();
    // The owner's rounds are all committed; its writer's close would start a round of its own.
    if (!this.writer.isOwner) await this.writer.close();
    this.closed = true;
    (this.store as { close?: () => Promise<void> | void }).close?.();
    this.o.onEvent?.({ kind: "closed" });
  }

  /** The owner: waits for every token of the round (reporting who is missing), commits, clears it. */
  private static async commitRound(
    store: Store,
    writer: ZarrStreamWriter,
    round: number,
    count: number,
    o: StreamRun["o"],
  ): Promise<void> {
    const started = Date.now();
    for (;;) {
      const left = o.timeoutMs - (Date.now() - started);
      try {
        const tokens = await collectTokens(store, round, count, {
          timeoutMs: Math.max(0, Math.min(o.reportEveryMs, left)),
          pollMs: o.pollMs,
        });
        const receipt = await writer.commit(tokens);
        await clearRound(store, round);
        o.onEvent?.({ kind: "committed", round, nCommitted: receipt.n_committed });
        return;
      } catch (err) {
        if (!(err instanceof MailboxTimeout)) throw err;
        const waitedMs = Date.now() - started;
        if (waitedMs >= o.timeoutMs) {
          throw new MailboxTimeout(
            `${err.message}; gave up after ${waitedMs} ms: restart the missing writer${err.missing.length > 1 ? "s" : ""} with the same id (they resume), then restart writer 0`,
            err.round,
            err.missing,
          );
        }
        o.onEvent?.({ kind: "waiting", round, missing: err.missing, waitedMs });
      }
    }
  }
}

function commitSeqOf(m: OutputManifest | undefined): number {
  return (m as { commit_seq?: number } | undefined)?.commit_seq ?? 0;
}

/** How a run's writer opens: create, join or resume, decided from what the store holds. */
class RunOpener {
  constructor(
    private readonly store: Store,
    private readonly rank: RunRank,
    private readonly o: RunOptions & { timeoutMs: number; reportEveryMs: number; pollMs: number },
  ) {}

  private get role(): Role {
    return this.rank.id === 0
      ? { kind: "owner", nWriters: this.rank.count }
      : { kind: "contributor", id: this.rank.id };
  }

  async open(): Promise<{ writer: ZarrStreamWriter; mode: "create" | "join" | "resume" }> {
    let manifest = await this.reachableManifest();
    if (this.rank.id === 0) {
      if (manifest === undefined) {
        try {
          return { writer: await this.openAs("create"), mode: "create" };
        } catch (err) {
          // A store laid out by an earlier process of writer 0 that stopped before its first commit.
          if (!(err instanceof StoreExists)) throw err;
        }
        manifest = await readOutputManifestIfPresent(this.store);
      }
      if (manifest !== undefined) this.checkCount(manifest);
      return { writer: await this.openAs("resume"), mode: "resume" };
    }
    manifest ??= await this.waitForOwner();
    this.checkCount(manifest);
    // A lease for this id means an earlier process of it ran: resume; a first start joins.
    const mode = (await this.store.size(leaseKey(this.rank.id))) === undefined ? "join" : "resume";
    return { writer: await this.openAs(mode), mode };
  }

  openAs(mode: "create" | "join" | "resume"): Promise<ZarrStreamWriter> {
    const region = this.o.region ?? {};
    const opts: WriterOptions = { ...this.o.writerOptions };
    if (mode === "create")
      return ZarrStreamWriter.create(this.store, this.o.schema!, this.role, region, opts);
    if (this.o.schema !== undefined) opts.schema = this.o.schema;
    if (mode === "join") return ZarrStreamWriter.join(this.store, this.role, region, opts);
    return ZarrStreamWriter.resume(this.store, this.role, region, undefined, opts);
  }

  /** The first store access: a store that cannot be reached is named with what to check. */
  private async reachableManifest(): Promise<OutputManifest | undefined> {
    try {
      return await readOutputManifestIfPresent(this.store);
    } catch (err) {
      if (err instanceof ZarrStreamError && !(err instanceof StoreError)) throw err;
      throw new StoreError(
        `cannot reach the store ${this.store.url}: ${err instanceof Error ? err.message : String(err)}; ` +
          "check the endpoint (AWS_ENDPOINT_URL_S3), credentials, bucket and network, then start the writer again",
      );
    }
  }

  /** Every writer must agree with the store on the count, or rounds would never fill. */
  private checkCount(m: OutputManifest): void {
    const n = (m as { n_writers?: number }).n_writers ?? 1;
    if (n !== this.rank.count) {
      throw new ProtocolError(
        `${this.store.url} was created for ${n} writers, this process says ${this.rank.count} (from ${this.rank.source}): start ${n} writers, or write to a new store`,
      );
    }
  }

  private async waitForOwner(): Promise<OutputManifest> {
    return this.waitUntil(
      async () => readOutputManifestIfPresent(this.store),
      (waitedMs) => ({ kind: "waiting-for-owner", waitedMs }),
      "writer 0 has not created the store: start writer 0 with the schema",
    );
  }

  async waitForCommitAfter(seq: number): Promise<void> {
    await this.waitUntil(
      async () => {
        const m = await readOutputManifestIfPresent(this.store);
        return commitSeqOf(m) > seq ? m : undefined;
      },
      (waitedMs) => ({ kind: "waiting-for-commit", round: seq + 1, waitedMs }),
      `round ${seq + 1}, which holds this writer's posted token, was not committed: check that writer 0 runs`,
    );
  }

  private async waitUntil<T>(
    look: () => Promise<T | undefined>,
    event: (waitedMs: number) => RunEvent,
    giveUp: string,
  ): Promise<T> {
    const started = Date.now();
    let reported = 0;
    for (;;) {
      const found = await look();
      if (found !== undefined) return found;
      const waitedMs = Date.now() - started;
      if (waitedMs >= this.o.timeoutMs) {
        throw new ProtocolError(`${this.store.url}: ${giveUp} (waited ${waitedMs} ms)`);
      }
      if (waitedMs - reported >= this.o.reportEveryMs) {
        reported = waitedMs;
        this.o.onEvent?.(event(waitedMs));
      }
      await new Promise((r) => setTimeout(r, this.o.pollMs));
    }
  }
}
