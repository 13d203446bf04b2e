import { blobObjectKey } from "@zarr-stream/reader";
import { shardKey } from "@zarr-stream/shard";
import {
  type BlobScope,
  CommitError,
  type CommitReceipt,
  type CommitToken,
  Fenced,
  type OutputManifest,
  ProtocolError,
  type RecordArrays,
  type Region,
  type Role,
  RunRecordIncomplete,
  SchemaError,
  type StreamSchema,
  type TokenBlob,
  type TypedArray,
} from "@zarr-stream/spec";
import type { Store } from "@zarr-stream/store";
import { committedCount } from "./committed-state.js";
import { checkSuppliedArray } from "./input-checks.js";
import { encodeStaticShard } from "./static-shard.js";
import type { WriterCore, WriterOptions } from "./writer-core.js";
import { createCore, joinCore, resumeCore } from "./writer-open.js";

export type { WriterOptions } from "./writer-core.js";

/**
 * The streaming writer of seed 000 §4–§8: one instance per writer (Single, Owner or Contributor) of one
 * store. Data objects are written whole and atomically by the writer that owns them; only the owner
 * writes metadata, and the manifest is always its last write, so readers never see uncommitted data.
 */
export class ZarrStreamWriter {
  readonly #s: WriterCore;

  private constructor(core: WriterCore) {
    this.#s = core;
  }

  /** Seed §5.1 create (owner or Single): group, coordinates, array zarr.json, and a v2 manifest at commit_seq 0. */
  static async create(
    store: Store,
    schema: StreamSchema,
    role: Role,
    region: Region = {},
    opts: WriterOptions = {},
  ): Promise<ZarrStreamWriter> {
    return new ZarrStreamWriter(await createCore(store, schema, role, region, opts));
  }

  /** Seed §5.1 join (contributors): reads the v2 manifest, rebuilds and fingerprint-checks the schema. */
  static async join(
    store: Store,
    role: Role,
    region: Region = {},
    opts: WriterOptions = {},
  ): Promise<ZarrStreamWriter> {
    return new ZarrStreamWriter(await joinCore(store, role, region, opts));
  }

  /**
   * Seed §7 resume after preemption. Append mode keeps the committed records with t <= at (all when at is
   * undefined); when that drops records the owner rewrites shapes and manifest. Every writer reloads its
   * region of the open time shard so later flushes rewrite whole shards.
   */
  static async resume(
    store: Store,
    role: Role,
    region: Region = {},
    at?: number,
    opts: WriterOptions = {},
  ): Promise<ZarrStreamWriter> {
    return new ZarrStreamWriter(await resumeCore(store, role, region, at, opts));
  }

  get store(): Store {
    return this.#s.store;
  }

  get schema(): StreamSchema {
    return this.#s.schema;
  }

  get fingerprint(): string {
    return this.#s.fingerprint;
  }

  get role(): Role {
    return this.#s.role;
  }

  /** 0 for the owner or a Single writer. */
  get writerId(): number {
    return this.#s.writerId;
  }

  get nWriters(): number {
    return this.#s.nWriters;
  }

  get manifestVersion(): 1 | 2 {
    return this.#s.manifestVersion;
  }

  /** Whether the store's manifest is kept in the paged form (WriterOptions.manifestPages). */
  get manifestPages(): boolean {
    return this.#s.manifestPages;
  }

  get isOwner(): boolean {
    return this.#s.isOwner;
  }

  /** Number of committed records (append) or committed records in the writer's view (indexed). */
  get committedCount(): number {
    return committedCount(this.#s.view.state);
  }

  /** The manifest this writer last read or wrote. */
  get lastManifest(): OutputManifest | undefined {
    return this.#s.view.manifest;
  }

  /** Seed §6.1: append record; t strictly increasing. Returns the record index. */
  async writeRecord(t: number, arrays: RecordArrays): Promise<number> {
    this.#s.assertOpen();
    return this.#s.time.writeRecord(t, arrays);
  }

  /** Seed §6.2: indexed record at any index; t must be times[index] bitwise. */
  async writeRecordAt(index: number, t: number, arrays: RecordArrays): Promise<void> {
    this.#s.assertOpen();
    await this.#s.time.writeRecordAt(index, t, arrays);
  }

  /** Seed §7 write_static: encoded and written immediately; committed with the next token. */
  async writeStatic(name: string, array: TypedArray): Promise<void> {
    const s = this.#s;
    s.assertOpen();
    const plan = s.plans.find((p) => p.kind === "static" && p.name === name);
    if (!plan) throw new SchemaError(`unknown static ${JSON.stringify(name)}`, `/statics/${name}`);
    if (!plan.supplies)
      throw new ProtocolError(
        `static ${name} is replicated: only the owner writes it, not contributor ${this.writerId}`,
      );
    checkSuppliedArray(plan, array);
    await s.view.assertStaticWritable(name);
    await s.objects.assertLease();
    for (const idx of plan.ownedShards) {
      const key = shardKey(plan.name, idx);
      await s.objects.putData(key, await encodeStaticShard(plan, array, idx));
      s.pending.objects.add(key);
    }
    s.pending.statics.add(name);
  }

  /** Seed §7 write_blob: a small writer-local payload, committed like records. */
  async writeBlob(scope: BlobScope, key: string, bytes: Uint8Array): Promise<void> {
    const s = this.#s;
    s.assertOpen();
    if (this.manifestVersion === 1)
      throw new ProtocolError("blobs need a v2 store: create it with role owner{nWriters: 1}");
    if (scope !== "static") {
      const r = scope?.record;
      if (!Number.isInteger(r) || r < 0 || !s.time.isOnAxis(r)) {
        throw new SchemaError(
          `blob scope ${JSON.stringify(scope)}: record must be an integer in range`,
          "/scope",
        );
      }
    }
    if (!(bytes instanceof Uint8Array)) throw new SchemaError("blob bytes must be a Uint8Array", "/bytes");
    if (scope !== "static") s.time.assertRecordWritten(scope.record);
    const objectKey = blobObjectKey(scope, this.writerId, key);
    await s.objects.assertLease();
    await s.objects.putData(objectKey, bytes);
    const entry: TokenBlob =
      scope === "static" ? { scope: "static", key } : { scope: "record", record: scope.record, key };
    s.pending.addBlob(entry);
    s.pending.objects.add(objectKey);
  }

  /**
   * Seed §5.1 flush: PUT every dirty shard of the region and return the token. Single: also commits. The
   * token carries the records written before flush was called; one written while it runs goes into the
   * next token.
   */
  async flush(): Promise<CommitToken> {
    const s = this.#s;
    s.assertOpen();
    await s.duties.settle();
    // The records pending now are in what writeDirty writes (it waits for their copies); one written while
    // it runs may be encoded before its copy lands, so it waits for the next token.
    const written = new Set(s.pending.records.keys());
    await s.time.writeDirty();
    const token = s.pendingToken(written);
    await s.receipts.record(token);
    await s.duties.handOff(token);
    s.objects.dropChecksums(token.objects);
    s.pending.drop(token);
    return token;
  }

  /** Seed §5.3 owner commit: verify every token, then shapes, then the manifest (the commit point). */
  async commit(tokens: CommitToken[]): Promise<CommitReceipt> {
    this.#s.assertOpen();
    const owner = this.#s.owner("commit");
    if (!Array.isArray(tokens)) throw new SchemaError("commit takes an array of tokens", "/tokens");
    return owner.commit(tokens);
  }

  /** Seed §6.2: the owner marks records uncommitted (and their record blobs), bumping commit_seq. */
  async invalidate(indices: number[]): Promise<void> {
    this.#s.assertOpen();
    await this.#s.owner("invalidate").invalidate(indices);
  }

  /** Seed §6.2 for statics: uncommits them so they may be written again. */
  async invalidateStatics(names: string[]): Promise<void> {
    this.#s.assertOpen();
    await this.#s.owner("invalidateStatics").invalidateStatics(names);
  }

  /**
   * Seed §5.1 close. Single: flush, then rewrite the manifest at the same commit_seq. Owner: flush and
   * commit its own token with the others'. Contributor: refuses when written data was not flushed.
   */
  async close(tokens: CommitToken[] = []): Promise<OutputManifest | undefined> {
    const s = this.#s;
    s.assertOpen();
    let manifest: OutputManifest | undefined;
    try {
      manifest = await s.duties.close(tokens, {
        flush: () => this.flush(),
        commit: (all) => this.commit(all),
      });
    } catch (err) {
      // A refused close (unflushed data, a token that does not verify) or a failed store call changes no
      // committed byte and may be retried; losing the store to another handle ends the run.
      const fencedOut =
        err instanceof Fenced || (err instanceof CommitError && err.reason === "concurrent-owner");
      if (fencedOut) {
        s.closed = true;
        await s.link?.fail(err);
      }
      throw err;
    }
    s.closed = true;
    await s.time.giveBack();
    try {
      await s.link?.complete();
    } catch (err) {
      // What close committed stands; the caller learns what landed and that the run record lags.
      const reason = err instanceof Error ? err.message : String(err);
      throw new RunRecordIncomplete(
        `close committed, but the control plane did not record the run's end: ${reason}`,
        manifest,
        { cause: err },
      );
    }
    return manifest;
  }

  /**
   * Ends this writer after an unrecoverable error: under a control plane the run ends run_failed and the
   * claims are released. Committed data is untouched; the store can be resumed.
   */
  async abort(error: unknown): Promise<void> {
    await this.#s.abort(error);
  }
}
