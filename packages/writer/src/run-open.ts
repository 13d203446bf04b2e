import { readOutputManifestIfPresent } from "@zarr-stream/reader";
import {
  type OutputManifest,
  ProtocolError,
  type Role,
  StoreError,
  StoreExists,
  ZarrStreamError,
} from "@zarr-stream/spec";
import type { Store } from "@zarr-stream/store";
import type { RunRank } from "./launcher-env.js";
import type { RunEvent, RunSettings } from "./run-options.js";
import { type WriterOptions, ZarrStreamWriter } from "./writer.js";
import { leaseKey } from "./writer-lease.js";

export function commitSeqOf(m: OutputManifest | undefined): number {
  return (m as { commit_seq?: number } | undefined)?.commit_seq ?? 0;
}

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

  /** The store's commit_seq now (0 before the first commit). */
  async committedSeq(): Promise<number> {
    return commitSeqOf(await readOutputManifestIfPresent(this.store));
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
