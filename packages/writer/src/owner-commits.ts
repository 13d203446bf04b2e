import { MANIFEST_KEY, parseJsonObject } from "@zarr-stream/reader";
import { parseArrayZarrJson } from "@zarr-stream/shard";
import {
  ClaimLost,
  type CommitReceipt,
  type CommitToken,
  isPartitioned,
  type OutputManifest,
  type OutputManifestV2,
  ProtocolError,
  SchemaError,
  type StreamSchema,
} from "@zarr-stream/spec";
import type { Store } from "@zarr-stream/store";
import type { ArrayPlan } from "./array-plan.js";
import { verifyTokens } from "./commit-check.js";
import { announceCommit, withdrawCommit } from "./commit-intent.js";
import type { FlushReceipts } from "./commit-ledger.js";
import {
  applyCommit,
  checkBlobRecords,
  committedCount,
  invalidatedState,
  truncatedState,
} from "./committed-state.js";
import type { CommittedView } from "./committed-view.js";
import type { ControlPlaneLink, SpanRecord } from "./control-plane-link.js";
import type { FencedObjects } from "./fenced-objects.js";
import { runLimited } from "./limit.js";
import type { ManifestCommits, ManifestWrite } from "./manifest-commits.js";
import { buildManifestV1, buildManifestV2, type CommittedState, utcSeconds } from "./manifest-doc.js";
import type { PendingWrites } from "./pending-writes.js";
import {
  arrayDocuments,
  changedFrom,
  consolidatedRoot,
  GROUP_KEY,
  groupDocument,
  type PutObject,
  rebuildRoot,
  type StoredRoot,
  storedRoot,
  writeArrays,
  writeTimeShapes,
  zarrJsonKey,
} from "./store-layout.js";
import type { TimeMode, Truncation } from "./time-mode.js";
import { assertTokensSealed } from "./writer-lease.js";

/** What the owner's commit path works on. */
export interface OwnerContext {
  schema: StreamSchema;
  fingerprint: string;
  nWriters: number;
  regionDims: string[];
  baseUrl: string;
  manifestVersion: 1 | 2;
  /** v2 in the paged form (docs/manifest-pages.md), under its own label. */
  manifestPages: boolean;
  plans: ArrayPlan[];
  objects: FencedObjects;
  receipts: FlushReceipts;
  commits: ManifestCommits;
  view: CommittedView;
  time: TimeMode;
  /** The control plane link, once the handle has opened one. */
  link: () => ControlPlaneLink | undefined;
  /** Clock for created_at; `clockPinned` when the caller gave one (tests). */
  now: () => Date;
  clockPinned: boolean;
  /**
   * A Single writer's pending set: its data stays pending until the commit carrying it lands, so a
   * manifest write found to have landed late drops what it carried from there.
   */
  pendingUntilCommitted?: PendingWrites;
}

/**
 * The owner's (or Single writer's) commit path, seed §5.3: verify every token, grow the shapes, then
 * write the manifest, the commit point, compare-and-swap; invalidate and resume's truncation write the
 * manifest the same way. Before every manifest write the owner checks its lease and control-plane claims.
 */
export class OwnerCommits {
  /**
   * Every array's zarr.json as last written or read: shape rewrites keep every other byte, and the root's
   * consolidated metadata is made from them.
   */
  readonly #zarrJson = new Map<string, Uint8Array>();
  /** The root group's zarr.json as last written or read (create and resume set it). */
  #root: StoredRoot = { doc: {}, bytes: undefined };
  /** Whether this resume has rewritten the time-axis shapes and the root already (append's truncate). */
  #resumeRewrote = false;
  /**
   * The last manifest write found to have landed late, while its state is still the committed state: the
   * same commit retried returns its receipt, even when a flush or invalidate settled it first.
   */
  #landedLate: ManifestWrite | undefined;

  constructor(private readonly o: OwnerContext) {}

  readonly #put: PutObject = (key, bytes, rebuild) => this.o.objects.put(key, bytes, rebuild);

  /**
   * Seed §5.1 create: the group (with every array's metadata consolidated), every array's zarr.json and
   * coordinates, then (v2) the manifest.
   */
  async layOut(withManifest = this.o.manifestVersion === 2): Promise<void> {
    const { objects, schema, plans, fingerprint } = this.o;
    const documents = arrayDocuments(plans);
    const doc = groupDocument(schema);
    const bytes = consolidatedRoot(doc, documents);
    await objects.put(GROUP_KEY, bytes);
    this.#root = { doc, bytes };
    await writeArrays(this.#put, schema, plans, documents);
    for (const [name, bytes] of documents) this.#zarrJson.set(name, bytes);
    await this.o.link()?.ensureSchema(schema, fingerprint);
    if (withManifest) await this.writeManifest();
  }

  /**
   * Writes the first manifest create-only (a store laid out again by resume): false when another
   * handle's commit landed first.
   */
  async createManifest(): Promise<boolean> {
    const write = this.#manifestWrite(this.o.view.state);
    if (!(await this.o.commits.tryWrite(write))) return false;
    this.o.view.adopt(write.state, write.manifest);
    return true;
  }

  /**
   * Resume: the root group's zarr.json and every array's, validated, kept for shape rewrites and the
   * consolidated metadata.
   */
  async readLayout(): Promise<void> {
    const { objects } = this.o;
    const missing = (key: string) => new SchemaError(`${key} is missing`, "", key);
    const root = await objects.read(GROUP_KEY);
    if (root === undefined) throw missing(GROUP_KEY);
    parseJsonObject(root, GROUP_KEY);
    this.#root = storedRoot(root);
    await runLimited(
      this.o.plans.map((p) => async () => {
        const key = zarrJsonKey(p.name);
        const bytes = await objects.read(key);
        if (bytes === undefined) throw missing(key);
        parseArrayZarrJson(parseJsonObject(bytes, key), key);
        this.#zarrJson.set(p.name, bytes);
      }),
    );
    // A schema rebuilt from the manifest has no coordinate values, so it plans no coordinate arrays; the
    // ones create wrote are found by key (as `zstream verify` does) and consolidated as stored.
    const planned = new Set(this.o.plans.map((p) => p.name));
    await runLimited(
      this.o.schema.dims
        .filter(([dim]) => !planned.has(dim))
        .map(([dim]) => async () => {
          const key = zarrJsonKey(dim);
          const bytes = await objects.store.get(key);
          if (bytes === undefined) return;
          parseArrayZarrJson(parseJsonObject(bytes, key), key);
          this.#zarrJson.set(dim, bytes);
        }),
    );
  }

  /**
   * The end of an owner's resume: the root's consolidated metadata rewritten from the arrays, its bytes
   * changed (fencing.md, "Zombie owners"), unless append's truncate has done so already.
   */
  async finishResume(): Promise<void> {
    if (this.#resumeRewrote) return;
    const bytes = changedFrom(consolidatedRoot(this.#root.doc, this.#zarrJson), this.#root.bytes);
    this.#root.bytes = bytes;
    await this.o.objects.put(GROUP_KEY, bytes, rebuildRoot(this.#root, this.#zarrJson));
  }

  /**
   * After a takeover (fencing.md): restamps the manifest (compare-and-swap, created_at set to now), each
   * attempt after `reread` has adopted whatever landed meanwhile. Only a commit already in flight when
   * the lease changed hands can land, and only once. Returns whether any reread found a change.
   */
  async restamp(reread: () => Promise<boolean>): Promise<boolean> {
    const { commits, view } = this.o;
    let changed = false;
    let refusals = 0;
    for (;;) {
      changed = (await reread()) || changed;
      const before = commits.tag;
      const write = this.#manifestWrite({ ...view.state, createdAt: utcSeconds(this.o.now()) });
      if (!(await commits.tryWrite(write))) {
        if (++refusals === 3) throw commits.concurrentOwner();
        continue;
      }
      view.adopt(write.state, write.manifest);
      // A store that versions by content (S3: identical bytes keep their ETag) fenced nothing if the
      // stamp did not change the bytes: stamp again in the next second.
      if (commits.tag !== before || this.o.clockPinned) return changed;
      await new Promise((resolve) => setTimeout(resolve, 1005 - (Date.now() % 1000)));
    }
  }

  /**
   * FencedObjects asks before overwriting a changed object: only while no one else has committed. A
   * manifest write of this owner's whose outcome is unknown is settled first: landed, it is no one else's.
   */
  async manifestUnchanged(): Promise<boolean> {
    await this.settle();
    return ((await this.o.objects.store.version(MANIFEST_KEY)) ?? null) === this.o.commits.tag;
  }

  /**
   * Settles a manifest write whose outcome was unknown (it threw): when it landed, its state becomes the
   * committed state (and a Single writer's data it carried is no longer pending).
   */
  async settle(): Promise<ManifestWrite | undefined> {
    const landed = await this.o.commits.settle();
    if (landed === undefined) return undefined;
    this.#landedLate = landed;
    this.o.view.adopt(landed.state, landed.manifest);
    const pending = this.o.pendingUntilCommitted;
    if (pending && landed.carried) for (const t of landed.carried) pending.drop(t);
    await this.#owe(landed.record);
    // The commit's receipts are in its ledger now; the call that wrote it threw before deleting them.
    if (landed.carried) await this.o.receipts.clear(this.o.objects.store, landed.carried);
    return landed;
  }

  /** Seed §5.3 commit, after settling; the same call retried after an unknown outcome that landed succeeds. */
  async commit(tokens: CommitToken[]): Promise<CommitReceipt> {
    await this.settle();
    const landed = this.#landedLate;
    if (
      landed?.carried !== undefined &&
      landed.state === this.o.view.state &&
      JSON.stringify(landed.carried) === JSON.stringify(tokens)
    )
      return this.receipt();
    return this.commitVerified(tokens);
  }

  receipt(): CommitReceipt {
    const { view } = this.o;
    return {
      commit_seq: view.state.commitSeq,
      n_committed: committedCount(view.state),
      manifest: view.manifest as OutputManifestV2,
    };
  }

  /** Verifies `tokens`, then writes shapes (append, when the count grows) and the manifest. */
  async commitVerified(tokens: CommitToken[]): Promise<CommitReceipt> {
    const { schema, view } = this.o;
    const state = view.state;
    const verified = verifyTokens(tokens, {
      schema,
      fingerprint: this.o.fingerprint,
      nWriters: this.o.nWriters,
      nCommitted: state.nCommitted,
      lastT: state.lastT,
      regionDims: this.o.manifestVersion === 2 ? this.o.regionDims : undefined,
      isRecordCommitted: (i) => state.entries?.at(i)?.committed === true,
      committedStatics: new Set(state.staticsCommitted),
      isStaticPartitioned: (name, regionDims) =>
        isPartitioned(schema.statics.find((s) => s.name === name)!.dims, regionDims),
    });
    const next = applyCommit(state, verified, schema.shard_shape[schema.time_dim]!);
    checkBlobRecords(next, verified.blobs);
    const store = this.o.objects.store;
    await this.#sealedOrWithdrawn(store, tokens, next.commitSeq);
    const published = await this.o.receipts.gather(store, tokens);
    await this.assertClaimsHeld();
    if (next.nCommitted !== state.nCommitted) {
      await this.o.commits.assertUnchanged();
      await writeTimeShapes(this.#put, this.o.plans, next.nCommitted, this.#zarrJson, this.#root);
    }
    await this.o.receipts.writeLedger(next.commitSeq, published);
    await this.writeManifest(next, tokens, {
      kind: "committed",
      commitSeq: next.commitSeq,
      records: verified.records,
      arrays: schema.vars.map((v) => v.name),
      regionDims: verified.regionDims,
    });
    this.o.time.handedOff();
    // The intent has landed: a store at rest carries none (best effort; a leftover is settled anyway). Only
    // this commit's own: an owner that resumed since this manifest write may have announced its own commit.
    const nonce = this.o.objects.leaseNonce;
    const landed =
      nonce !== undefined && tokens.some((t) => t.writer !== 0)
        ? withdrawCommit(store, next.commitSeq, nonce).catch(() => undefined)
        : undefined;
    await Promise.all([this.o.receipts.clear(store, tokens), landed]);
    return this.receipt();
  }

  /**
   * Refuses tokens no live handle sealed (fencing.md, "Sealed tokens"). When contributors' tokens are
   * among them, the commit's intent is announced first and withdrawn on a refusal (commit-intent.ts), so a
   * contributor taking its lease over meanwhile waits for this commit rather than read past it.
   */
  async #sealedOrWithdrawn(store: Store, tokens: CommitToken[], commitSeq: number): Promise<void> {
    const nonce = this.o.objects.leaseNonce;
    if (nonce === undefined || tokens.every((t) => t.writer === 0))
      return assertTokensSealed(store, tokens, 0);
    await announceCommit(store, commitSeq, nonce);
    try {
      await assertTokensSealed(store, tokens, 0);
    } catch (err) {
      // The refusal is what the caller must hear; an intent left behind only delays a contributor's open
      // until this owner's next commit lands (or its timeout names it).
      await withdrawCommit(store, commitSeq, nonce).catch(() => undefined);
      throw err;
    }
  }

  /**
   * Writes the manifest of `state` (the commit point); only then is `state` the committed state.
   * `carried` are the tokens the commit carries, so a retry of the same call can be recognised; `record`
   * is what the control plane's WAL is owed once it lands. Records still owed are paid first: failing
   * there, nothing has landed and the call may be retried.
   */
  async writeManifest(
    state: CommittedState = this.o.view.state,
    carried?: CommitToken[],
    record?: SpanRecord,
  ): Promise<OutputManifest> {
    const write = { ...this.#manifestWrite(state, carried), record };
    await this.assertClaimsHeld();
    await this.o.link()?.payOwed();
    await this.o.commits.write(write);
    this.o.view.adopt(state, write.manifest);
    await this.#owe(record);
    return write.manifest;
  }

  /**
   * Hands the control plane the record of a manifest write that landed. The commit stands whatever the
   * control plane does, so its failure is not the caller's: the link keeps the record owed and pays it
   * before its next record, the next manifest write or close (writer-decisions.md rule 20).
   */
  async #owe(record: SpanRecord | undefined): Promise<void> {
    const link = this.o.link();
    if (link === undefined || record === undefined) return;
    try {
      await link.record(record);
    } catch {
      // Owed: the link retries it in order.
    }
  }

  /** Seed §6.2: marks records uncommitted (and their record blobs), bumping commit_seq. */
  async invalidate(indices: number[]): Promise<void> {
    if (!Array.isArray(indices))
      throw new SchemaError("invalidate takes an array of record indices", "/indices");
    const entries = this.o.view.state.entries;
    if (!entries)
      throw new ProtocolError("invalidate is for indexed stores: append records are never rewritten");
    for (const i of indices) {
      if (!Number.isInteger(i) || i < 0 || i >= entries.length)
        throw new SchemaError(`invalidate: index ${i} is not in [0, ${entries.length})`, "/indices");
    }
    await this.settle();
    const next = invalidatedState(this.o.view.state, indices);
    await this.writeManifest(next, undefined, {
      kind: "invalidated",
      commitSeq: next.commitSeq,
      indices: [...new Set(indices)].sort((a, b) => a - b),
    });
  }

  /** Seed §6.2 for statics: uncommits them so they may be written again. */
  async invalidateStatics(names: string[]): Promise<void> {
    if (!Array.isArray(names))
      throw new SchemaError("invalidateStatics takes an array of static names", "/names");
    for (const n of names) {
      if (!this.o.schema.statics.some((s) => s.name === n))
        throw new SchemaError(`invalidateStatics: unknown static ${JSON.stringify(n)}`, "/names");
    }
    await this.settle();
    const state = this.o.view.state;
    const next = {
      ...state,
      staticsCommitted: state.staticsCommitted.filter((s) => !names.includes(s)),
      commitSeq: state.commitSeq + 1,
    };
    await this.writeManifest(next);
  }

  /**
   * Append resume: persists a truncation to `keep` records (shapes and consolidated root, then the
   * manifest). With nothing to drop it still rewrites them at the committed count, which repairs shapes a
   * crash between the shape rewrite and the manifest left ahead, and, its bytes changed, refuses a zombie
   * owner's shape write conditional on the version before the takeover (fencing.md).
   */
  async truncate({ keep, times }: Truncation): Promise<void> {
    const { schema, plans, view } = this.o;
    const n = view.state.nCommitted;
    this.#resumeRewrote = true;
    if (keep < n) {
      const shardT = schema.shard_shape[schema.time_dim]!;
      const next = truncatedState(view.state, keep, times!, shardT, this.o.manifestVersion === 2);
      await this.o.commits.assertUnchanged();
      await writeTimeShapes(this.#put, plans, keep, this.#zarrJson, this.#root, true);
      await this.writeManifest(next, undefined, { kind: "truncated", keep, dropped: n });
      return;
    }
    await writeTimeShapes(this.#put, plans, keep, this.#zarrJson, this.#root, true);
  }

  /** Under a control plane: an owner whose claim was cleared or taken stops before it writes metadata. */
  async assertClaimsHeld(): Promise<void> {
    try {
      await this.o.link()?.assertClaimsHeld();
    } catch (err) {
      if (err instanceof ClaimLost) this.o.objects.fence(err.domain, `claim ${err.domain} was lost`);
      throw err;
    }
  }

  #manifestWrite(state: CommittedState, carried?: CommitToken[]): ManifestWrite {
    const id = {
      schema: this.o.schema,
      fingerprint: this.o.fingerprint,
      nWriters: this.o.nWriters,
      regionDims: this.o.regionDims,
      baseUrl: this.o.baseUrl,
      paged: this.o.manifestPages,
    };
    const manifest = this.o.manifestVersion === 1 ? buildManifestV1(id, state) : buildManifestV2(id, state);
    return { ...this.o.commits.compose(manifest), state, manifest, carried };
  }
}
