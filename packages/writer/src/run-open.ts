import { readOutputManifestIfPresent } from "@zarr-stream/reader";
import {
  Fenced,
  type OutputManifest,
  ProtocolError,
  type Role,
  StoreError,
  StoreExists,
  StoreTimeout,
  ZarrStreamError,
} from "@zarr-stream/spec";
import { type Store, withDeadline } from "@zarr-stream/store";
import { commitSeqOf } from "./commit-intent.js";
import type { RunRank } from "./launcher-env.js";
import type { RunEvent, RunSettings } from "./run-options.js";
import { type WriterOptions, ZarrStreamWriter } from "./writer.js";
import { leaseKey, storedLease } from "./writer-lease.js";

/** How a run's writer opens: create, join or resume, decided from what the store holds. */
export class RunOpener {
  constructor(
    private readonly store: Store,
    private readonly rank: RunRank,
    private readonly o: RunSettings,
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
    for (let attempt = 1; ; attempt++) {
      await this.waitForOwnerOfThisLaunch();
      // A lease for this id means an earlier process of it ran: resume; a first start joins.
      const mode = (await this.store.size(leaseKey(this.rank.id))) === undefined ? "join" : "resume";
      try {
        return { writer: await this.openAs(mode), mode };
      } catch (err) {
        // Two launches' processes of this id took its lease at the same moment and this one lost: it
        // takes the lease over again while writer 0 is of its launch, and is Fenced otherwise.
        if (!(err instanceof Fenced) || attempt === 3 || !(await this.ownerIsOfThisLaunch())) throw err;
      }
    }
  }

  /** The launch writer 0's lease names, or null when it names none (or there is none yet). */
  private async ownerLaunch(): Promise<string | null> {
    const stored = await storedLease(this.store, 0);
    return stored.present ? (stored.lease?.job ?? null) : null;
  }

  /** Whether writer 0's lease names this process's launch (false when either names none). */
  private async ownerIsOfThisLaunch(): Promise<boolean> {
    return this.rank.job !== undefined && (await this.ownerLaunch()) === this.rank.job;
  }

  openAs(mode: "create" | "join" | "resume"): Promise<ZarrStreamWriter> {
    const region = this.o.region ?? {};
    const opts: WriterOptions = { ...this.o.writerOptions };
    if (this.o.manifestPages !== undefined) opts.manifestPages = this.o.manifestPages;
    if (this.rank.job !== undefined) opts.job ??= this.rank.job;
    opts.commitWaitMs ??= this.o.timeoutMs;
    if (mode === "create")
      return ZarrStreamWriter.create(this.store, this.o.schema!, this.role, region, opts);
    if (this.o.schema !== undefined) opts.schema = this.o.schema;
    if (mode === "join") return ZarrStreamWriter.join(this.store, this.role, region, opts);
    return ZarrStreamWriter.resume(this.store, this.role, region, undefined, opts);
  }

  /**
   * The first store access: a store that cannot be reached is named with what to check. It is bounded by
   * the run's timeoutMs as well as by the store's own deadlines, so a store without any still cannot hang.
   */
  private async reachableManifest(): Promise<OutputManifest | undefined> {
    try {
      return await this.bounded(
        readOutputManifestIfPresent(this.store),
        this.o.timeoutMs,
        "reading its manifest",
      );
    } catch (err) {
      if (err instanceof ZarrStreamError && !(err instanceof StoreError)) throw err;
      const message =
        `cannot reach the store ${this.store.url} (writer ${this.rank.id} of ${this.rank.count}, at open): ` +
        `${err instanceof Error ? err.message : String(err)}; ` +
        "check the endpoint (AWS_ENDPOINT_URL_S3), credentials, bucket and network, then start the writer again";
      // A timeout stays a StoreTimeout, so a caller can tell "no answer" from "refused".
      if (err instanceof StoreTimeout) {
        throw new StoreTimeout(message, err.key, err.endpoint, err.timeoutMs, { cause: err });
      }
      throw new StoreError(message, err instanceof StoreError ? err.key : "", { cause: err });
    }
  }

  /** `call`, or a StoreTimeout naming the store when it does not settle within `ms`. */
  private bounded<T>(call: Promise<T>, ms: number, doing: string): Promise<T> {
    const url = this.store.url;
    return withDeadline(
      call,
      ms,
      () => new StoreTimeout(`${url} did not answer within ${ms} ms (timeoutMs) while ${doing}`, "", url, ms),
    );
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
    const me = `writer ${this.rank.id} of ${this.rank.count} (id from ${this.rank.source})`;
    return this.waitUntil(
      async () => readOutputManifestIfPresent(this.store),
      (waitedMs) => ({ kind: "waiting-for-owner", waitedMs }),
      `${me} waited for writer 0, the owner, to create the store, and it still has no output ` +
        "manifest: start writer 0 with the schema, and check that it writes to this same store URL",
    );
  }

  /**
   * A contributor of a known launch goes on only under an owner of the same launch: of a job started
   * twice, the launch whose owner holds writer 0's lease (the newer: an owner that opens takes it) is the
   * one whose contributors open, so the two launches never split the writer ids between them. An owner
   * lease that names no launch (an owner started without one) is followed as before.
   */
  private async waitForOwnerOfThisLaunch(): Promise<void> {
    const job = this.rank.job;
    if (job === undefined) return;
    let holder: string | null = null;
    await this.waitUntil(
      async () => {
        holder = await this.ownerLaunch();
        return holder === null || holder === job ? true : undefined;
      },
      (waitedMs) => ({ kind: "waiting-for-owner", waitedMs }),
      () =>
        `writer ${this.rank.id} of ${this.rank.count} (launch ${job}) waited for an owner of its own launch, ` +
        `and writer 0's lease still names launch ${holder}: this looks like a job started twice; stop one ` +
        "of them (the one whose writer 0 holds the lease goes on)",
    );
  }

  /** The store's commit_seq now (0 before the first commit). */
  async committedSeq(): Promise<number> {
    return commitSeqOf(await readOutputManifestIfPresent(this.store));
  }

  private async waitUntil<T>(
    look: () => Promise<T | undefined>,
    event: (waitedMs: number) => RunEvent,
    giveUp: string | (() => string),
  ): Promise<T> {
    const why = () => (typeof giveUp === "string" ? giveUp : giveUp());
    const started = Date.now();
    let reported = 0;
    for (;;) {
      // Each look is bounded by what is left of the wait: a store call that hangs cannot outlast it.
      const left = Math.max(1, this.o.timeoutMs - (Date.now() - started));
      const found = await this.bounded(look(), left, `looking for progress in a wait (${why()})`);
      if (found !== undefined) return found;
      const waitedMs = Date.now() - started;
      if (waitedMs >= this.o.timeoutMs) {
        throw new ProtocolError(`${this.store.url}: ${why()} (waited ${waitedMs} ms)`);
      }
      if (waitedMs - reported >= this.o.reportEveryMs) {
        reported = waitedMs;
        this.o.onEvent?.(event(waitedMs));
      }
      await new Promise((r) => setTimeout(r, this.o.pollMs));
    }
  }
}
