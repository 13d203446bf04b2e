import { MANIFEST_KEY, readManifestVersioned, readOutputManifestIfPresent } from "@zarr-stream/reader";
import {
  type CommitToken,
  FingerprintMismatch,
  type OutputManifest,
  ProtocolError,
  type Region,
  type Role,
  StoreError,
  type StreamSchema,
  schemaFingerprint,
  validateStreamSchema,
} from "@zarr-stream/spec";
import type { Store } from "@zarr-stream/store";
import { AppendMode } from "./append-mode.js";
import { type ArrayPlan, planArrays } from "./array-plan.js";
import { commitSeqOf, waitForCommitInFlight } from "./commit-intent.js";
import { FlushReceipts } from "./commit-ledger.js";
import { CommittedView, ContributorView } from "./committed-view.js";
import { ControlPlaneLink, type WriterControlPlaneOptions } from "./control-plane-link.js";
import { FencedObjects } from "./fenced-objects.js";
import { IndexedMode } from "./indexed-mode.js";
import { indexedTimes } from "./indexed-times.js";
import { ManifestCommits } from "./manifest-commits.js";
import { type CommittedState, stateFromManifest } from "./manifest-doc.js";
import { OwnerCommits } from "./owner-commits.js";
import { PendingWrites } from "./pending-writes.js";
import { ContributorRole, OwnerRole, resolveRegion, SingleRole, type WriterRole } from "./roles.js";
import type { TimeMode, TimeModeContext } from "./time-mode.js";

export interface WriterOptions {
  /** base_url recorded in the manifest; defaults to the store's URL. */
  baseUrl?: string;
  /** join/resume: the caller's schema, which must have the store's fingerprint. */
  schema?: StreamSchema;
  /** Clock for created_at (tests pin it). */
  now?: () => Date;
  /** Run under a `.firecube/` control plane: claims, a run WAL, the schema as the resolved index. */
  controlPlane?: WriterControlPlaneOptions;
  /** The launch this handle belongs to (the run API sets it from the launcher), recorded in its lease. */
  job?: string;
  /**
   * A contributor taking its lease waits at most this long for the owner's commit in flight to land or
   * be refused (default 60 s; the run API passes its timeoutMs).
   */
  commitWaitMs?: number;
  /**
   * Keep the v2 manifest in the paged form (docs/manifest-pages.md): its long lists in pages, under the
   * label `zarr-stream/output-manifest/v2-paged`, which readers that follow only seed 000 refuse. Off
   * by default: the manifest is the seed's at any size. Chosen at create; join and resume keep the
   * store's form, and refuse a value that contradicts it (`zstream manifest pages on|off` changes it).
   * A v1 store (seed §8.1) never pages.
   */
  manifestPages?: boolean;
}

export interface WriterInit {
  store: Store;
  schema: StreamSchema;
  fingerprint: string;
  role: Role;
  region: Region;
  version: 1 | 2;
  /** Whether the manifest is kept in the paged form. */
  manifestPages: boolean;
  nWriters: number;
  committed: CommittedState;
  opts: WriterOptions;
  /** The handle's fenced writes, when the lease was taken before the manifest was read (join, resume). */
  objects?: FencedObjects;
}

/**
 * One writer handle's parts, wired together once its role and time mode are known: the fenced objects,
 * the committed view, the pending set, the time mode, the role (with the owner's commit path) and the
 * control-plane link. ZarrStreamWriter is its public face; writer-open.ts brings it up.
 */
export class WriterCore {
  readonly store: Store;
  readonly schema: StreamSchema;
  readonly fingerprint: string;
  readonly role: Role;
  readonly writerId: number;
  readonly nWriters: number;
  readonly manifestVersion: 1 | 2;
  /** The store's manifest form: paged (its own label) or the seed's. */
  readonly manifestPages: boolean;
  readonly opts: WriterOptions;
  readonly namedRegion: Region;
  /** The region dims this writer names, sorted: every writer of a v2 store names the same. */
  readonly regionDims: string[];
  readonly plans: ArrayPlan[];
  /** Every object this handle writes goes through here, conditional on the version it last saw. */
  readonly objects: FencedObjects;
  /** The manifest's version as last written or read; the owner's commit point writes through it. */
  readonly commits: ManifestCommits;
  readonly view: CommittedView;
  readonly pending = new PendingWrites();
  /** What each flushed token's objects hold (commit-ledger.ts). */
  readonly receipts: FlushReceipts;
  readonly time: TimeMode;
  readonly duties: WriterRole;
  link: ControlPlaneLink | undefined;
  closed = false;

  constructor(init: WriterInit) {
    const { store, schema, role, committed } = init;
    this.store = store;
    this.schema = schema;
    this.fingerprint = init.fingerprint;
    this.role = role;
    this.writerId = role.kind === "contributor" ? role.id : 0;
    this.nWriters = init.nWriters;
    this.manifestVersion = init.version;
    this.manifestPages = init.manifestPages;
    this.opts = init.opts;
    const { full, named } = resolveRegion(schema, role, init.region);
    this.namedRegion = named;
    const regionDims = Object.keys(named).sort();
    this.regionDims = regionDims;
    this.objects = init.objects ?? new FencedObjects(store, init.opts.job);
    this.objects.mayOverwrite = () => this.duties.mayOverwrite();
    this.receipts = new FlushReceipts(this.objects, role.kind === "single");
    this.commits = new ManifestCommits(this.objects, null, { url: store.url, writer: this.writerId });
    const contributorView = role.kind === "contributor" ? new ContributorView(committed, store) : undefined;
    this.view = contributorView ?? new CommittedView(committed);
    this.view.settle = () => this.duties.settle();
    const times = indexedTimes(schema);
    this.plans = planArrays({
      schema,
      region: full,
      regionDims,
      isOwner: this.isOwner,
      timeLength: times ? times.length : committed.nCommitted,
    });
    const ctx: TimeModeContext = {
      store,
      schema,
      plans: this.plans,
      objects: this.objects,
      view: this.view,
      pending: this.pending,
      isOwner: this.isOwner,
      writerId: this.writerId,
    };
    this.time = times ? new IndexedMode(ctx, times) : new AppendMode(ctx);
    if (contributorView) {
      this.duties = new ContributorRole(
        this.writerId,
        contributorView,
        this.pending,
        this.time,
        this.objects,
      );
      return;
    }
    const single = role.kind === "single";
    const commits = new OwnerCommits({
      schema,
      fingerprint: this.fingerprint,
      nWriters: this.nWriters,
      regionDims,
      baseUrl: init.opts.baseUrl ?? store.url,
      manifestVersion: this.manifestVersion,
      manifestPages: this.manifestPages,
      plans: this.plans,
      objects: this.objects,
      receipts: this.receipts,
      commits: this.commits,
      view: this.view,
      time: this.time,
      link: () => this.link,
      now: init.opts.now ?? (() => new Date()),
      clockPinned: init.opts.now !== undefined,
      pendingUntilCommitted: single ? this.pending : undefined,
    });
    this.duties = single ? new SingleRole(commits, this.pending) : new OwnerRole(commits);
  }

  get isOwner(): boolean {
    return this.role.kind !== "contributor";
  }

  /** The owner's commit path; `what` names the call a contributor may not make. */
  owner(what: string): OwnerCommits {
    const commits = this.duties.commits;
    if (commits === undefined)
      throw new ProtocolError(`${what} is the owner's call; writer ${this.writerId} is a contributor`);
    return commits;
  }

  assertOpen(): void {
    this.objects.assertUnfenced();
    if (this.closed) throw new ProtocolError("the writer is closed");
  }

  /** The pending token, of `records` only when given (see PendingWrites.token). */
  pendingToken(records?: ReadonlySet<number>): CommitToken {
    return this.pending.token(
      {
        writer: this.writerId,
        region: this.namedRegion,
        fingerprint: this.fingerprint,
      },
      records,
    );
  }

  /** The caller's own schema (join/resume option), validated. */
  callerSchema(): StreamSchema | undefined {
    return this.opts.schema === undefined
      ? undefined
      : validateStreamSchema(structuredClone(this.opts.schema));
  }

  /** join/resume with a schema: it must be the store's (the bindings whose open takes a schema check this). */
  checkCallerSchema(): void {
    const caller = this.callerSchema();
    if (caller === undefined) return;
    const mine = schemaFingerprint(caller);
    if (mine !== this.fingerprint) {
      throw new FingerprintMismatch(
        `the caller's schema (${mine}) is not the store's (${this.fingerprint})`,
        this.fingerprint,
        mine,
      );
    }
  }

  async openLink(mode: "create" | "join" | "resume", replaces: string[] = []): Promise<void> {
    const cp = this.opts.controlPlane;
    if (cp === undefined) return;
    this.link = await ControlPlaneLink.open(
      this.store,
      cp,
      {
        isOwner: this.isOwner,
        nWriters: this.nWriters,
        append: this.time.append,
        namedRegion: this.namedRegion,
      },
      mode,
      replaces,
    );
  }

  /** Runs `body`; on an exception the control-plane run ends run_failed and the claims are released. */
  async failingRun<T>(body: () => Promise<T>): Promise<T> {
    try {
      return await body();
    } catch (err) {
      await this.link?.fail(err);
      throw err;
    }
  }

  /** Ends the handle after an unrecoverable error; committed data is untouched. */
  async abort(error: unknown): Promise<void> {
    this.closed = true;
    await this.link?.fail(error);
  }

  /**
   * Takes this writer's lease, which fences every older handle of it (a preempted job that comes back),
   * then reads the manifest again; the owner also restamps it (OwnerCommits.restamp). Either way the view
   * this handle goes on from is the committed state. Returns whether the manifest changed since the
   * handle was opened.
   */
  async takeOver(): Promise<boolean> {
    await this.objects.takeLease(this.writerId, false);
    const reread = () => this.rereadManifest();
    const owner = this.duties.commits;
    if (owner) return owner.restamp(reread);
    // A commit in flight may still publish the older handle's sealed token (commit-intent.ts). Its polls
    // take the manifest from the reader's cache, revalidated by version, rather than parsing it each time.
    await waitForCommitInFlight(
      this.store,
      async () => commitSeqOf(await readOutputManifestIfPresent(this.store)),
      this.opts.commitWaitMs ?? 60_000,
    );
    return reread();
  }

  /** Reads the manifest; a version other than the one last seen is adopted. True when it changed. */
  async rereadManifest(): Promise<boolean> {
    const read = await readManifestVersioned(this.store);
    if (read === undefined)
      throw new StoreError(`${MANIFEST_KEY} of ${this.store.url} vanished while opening`, MANIFEST_KEY);
    if (read.tag === this.commits.tag) return false;
    // The label is the version and the form: a handle goes on only in the one it opened in.
    if (read.manifest.schema !== this.view.manifest?.schema)
      throw new ProtocolError(
        `${MANIFEST_KEY} of ${this.store.url} changed from ${this.view.manifest?.schema} to ${read.manifest.schema} while opening`,
      );
    this.adoptManifest(read.manifest, read.tag);
    return true;
  }

  adoptManifest(m: OutputManifest, tag: string | null): void {
    this.view.adopt(stateFromManifest(m), m);
    this.commits.adoptRead(m, tag);
    this.time.adopt(this.view.state);
  }
}
