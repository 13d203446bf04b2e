import {
  type BlobScope,
  type CommitToken,
  ProtocolError,
  type RecordArrays,
  SchemaError,
  type TypedArray,
} from "@zarr-stream/spec";
import { openStore, type Store } from "@zarr-stream/store";
import { commitSeqOf } from "./commit-intent.js";
import { type RunRank, runRank } from "./launcher-env.js";
import { clearCommittedRounds, mailboxKey, postToken } from "./mailbox.js";
import { RunOpener } from "./run-open.js";
import { checkRunOptions } from "./run-option-checks.js";
import { type RunOptions, type RunSettings, runSettings } from "./run-options.js";
import { commitRound } from "./run-rounds.js";
import type { ZarrStreamWriter } from "./writer.js";

export type { RunEvent, RunOptions } from "./run-options.js";

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
  /**
   * The round a commit() flushed for and has not finished (its post or, for the owner, its commit failed):
   * the flush took the token's records out of the writer's pending set, so the retry goes on with this
   * token; flushing again would post one without them.
   */
  private unfinished: { round: number; token: CommitToken; posted: boolean } | undefined;

  private constructor(
    readonly store: Store,
    readonly rank: RunRank,
    private readonly writer: ZarrStreamWriter,
    private readonly startRecord: number,
    /** commit_seq at open: the k-th flush goes to round c0 + k (mailbox.ts, round rule). */
    private readonly c0: number,
    private readonly o: RunSettings,
  ) {}

  static async open(options: RunOptions): Promise<StreamRun> {
    checkRunOptions(options);
    const o = runSettings(options);
    const rank = runRank(
      { id: options.id, count: options.count, job: options.job },
      options.env ?? process.env,
    );
    if (rank.id === 0 && options.schema === undefined) {
      throw new SchemaError("writer 0 is the run's owner: give it the schema to create the store", "/schema");
    }
    const store = typeof options.store === "string" ? openStore(options.store) : options.store;
    const opener = new RunOpener(store, rank, o);
    let { writer, mode } = await opener.open();
    // Resume rule. The owner: a token it posted for the open round holds records the new handle does not
    // have; once that round is committed they are part of the committed state to resume from. Owners post
    // ahead of their commits, so a restarted owner may find its tokens in several rounds. A contributor's
    // posted token is stale once this handle has taken its lease (fencing.md, "Sealed tokens"): the owner
    // waits past it, and this handle's post of the round replaces it, so it resumes from the committed
    // state, unless the owner committed a round between this handle's open and now.
    while (mode === "resume") {
      const seq = commitSeqOf(writer.lastManifest);
      if (writer.isOwner) {
        if ((await store.size(mailboxKey(seq + 1, rank.id))) === undefined) break;
        await commitRound(store, writer, seq + 1, rank.count, o);
      } else if ((await opener.committedSeq()) === seq) {
        break;
      }
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
    this.unfinished ??= {
      round: this.c0 + this.flushes + 1,
      token: await this.writer.flush(),
      posted: false,
    };
    const open = this.unfinished;
    const { round, token } = open;
    if (!open.posted) {
      await postToken(this.store, round, token);
      open.posted = true;
      this.o.onEvent?.({ kind: "posted", round, records: token.records.length });
      this.pending -= token.records.length;
    }
    if (this.writer.isOwner) await commitRound(this.store, this.writer, round, this.rank.count, this.o);
    this.flushes++;
    this.unfinished = undefined;
  }

  /** Commits what is still pending, then ends this writer. */
  async close(): Promise<void> {
    if (this.closed) return;
    // A round a failed commit() left unfinished goes first; records written since go in the next.
    if (this.unfinished !== undefined) await this.commit();
    if (this.pending > 0) await this.commit();
    // The owner's rounds are all committed; its writer's close would start a round of its own.
    if (!this.writer.isOwner) await this.writer.close();
    this.closed = true;
    (this.store as { close?: () => Promise<void> | void }).close?.();
    this.o.onEvent?.({ kind: "closed" });
  }
}
