import {
  blobObjectKey,
  MANIFEST_KEY,
  parseJsonObject,
  readArrayLayout,
  readArrayRegion,
  readManifestVersioned,
  readOutputManifest,
} from "@zarr-stream/reader";
import { allocTyped, copyStrided, encodeShard, parseArrayZarrJson, shardKey } from "@zarr-stream/shard";
import {
  type BlobScope,
  ClaimLost,
  COMMIT_TOKEN_SCHEMA,
  CommitError,
  type CommitReceipt,
  type CommitToken,
  canonicalRegion,
  checkRegionAligned,
  Fenced,
  FingerprintMismatch,
  isPartitioned,
  normalizeRegion,
  type OutputManifest,
  type OutputManifestV1,
  type OutputManifestV2,
  ProtocolError,
  type RecordArrays,
  type Region,
  type Role,
  SchemaError,
  StoreError,
  StoreExists,
  type StreamSchema,
  schemaFingerprint,
  schemaFromManifest,
  type TokenBlob,
  type TypedArray,
  validateStreamSchema,
} from "@zarr-stream/spec";
import type { Store } from "@zarr-stream/store";
import { type ArrayPlan, planArrays } from "./array-plan.js";
import { verifyTokens } from "./commit-check.js";
import { applyCommit, checkBlobRecords, invalidatedState, truncatedState } from "./committed-state.js";
import { ControlPlaneLink, type WriterControlPlaneOptions } from "./control-plane-link.js";
import { FencedObjects, leaseKey } from "./fenced-objects.js";
import { checkSuppliedArray } from "./input-checks.js";
import { runLimited } from "./limit.js";
import { ManifestCommits, type ManifestWrite } from "./manifest-commits.js";
import {
  buildManifestV1,
  buildManifestV2,
  type CommittedState,
  compareBlobs,
  serializeManifest,
  stateFromManifest,
  utcSeconds,
} from "./manifest-doc.js";
import { schemaFromManifestV1 } from "./schema-v1.js";
import { GROUP_KEY, groupDocument, writeArrays, writeTimeShapes, zarrJsonKey } from "./store-layout.js";
import { indexedTimes } from "./time-mode.js";
import { TimeShardBuffers } from "./time-shard-buffers.js";

export interface WriterOptions {
  /** base_url recorded in the manifest; defaults to the store's URL. */
  baseUrl?: string;
  /** join/resume: the caller's schema, which must have the store's fingerprint. */
  schema?: StreamSchema;
  /** Clock for created_at (tests pin it). */
  now?: () => Date;
  /** Run under a `.firecube/` control plane: claims, a run WAL, the schema as the resolved index. */
  controlPlane?: WriterControlPlaneOptions;
}

interface Pending {
  records: Map<number, number>;
  statics: Set<string>;
  blobs: Map<string, TokenBlob>;
  objects: Set<string>;
}

interface WriterInit {
  store: Store;
  schema: StreamSchema;
  fingerprint: string;
  role: Role;
  region: Region;
  version: 1 | 2;
  nWriters: number;
  committed: CommittedState;
  opts: WriterOptions;
  /** The handle's fenced writes, when the lease was taken before the manifest was read (join, resume). */
  objects?: FencedObjects;
}

const emptyPending = (): Pending => ({
  records: new Map(),
  statics: new Set(),
  blobs: new Map(),
  objects: new Set(),
});

function storeExists(store: Store): StoreExists {
  return new StoreExists(`${store.url} already holds a store: open it with join or resume`, GROUP_KEY);
}

function sameMembers(a: string[], b: string[]): boolean {
  return a.length === b.length && [...a].sort().every((x, i) => x === [...b].sort()[i]);
}

function blobId(b: TokenBlob): string {
  return b.scope === "static" ? `static/${b.key}` : `record/${b.record}/${b.key}`;
}

function compareTokenBlobs(a: TokenBlob, b: TokenBlob): number {
  return compareBlobs({ ...a, writer: 0 }, { ...b, writer: 0 });
}

function checkRole(role: Role): void {
  const ok =
    role !== null &&
    typeof role === "object" &&
    (role.kind === "single" ||
      (role.kind === "owner" && Number.isInteger(role.nWriters) && role.nWriters >= 1) ||
      (role.kind === "contributor" && Number.isInteger(role.id) && role.id >= 1));
  if (!ok)
    throw new SchemaError(
      `role ${JSON.stringify(role)} is not single, owner{nWriters >= 1} or contributor{id >= 1}`,
      "/role",
    );
}

/** The store's region handling, shared by create, join and resume: checked before any write. */
function resolveRegion(schema: StreamSchema, role: Role, region: Region | undefined) {
  const given = region ?? {};
  if (given === null || typeof given !== "object" || Array.isArray(given)) {
    throw new SchemaError(
      `region must be an object {dim: [start, stop)}, got ${JSON.stringify(region)}`,
      "/region",
    );
  }
  const full = normalizeRegion(given, schema.dims, schema.time_dim);
  checkRegionAligned(given, schema.dims, schema.shard_shape);
  if (role.kind === "single") {
    for (const [d, [a, b]] of Object.entries(given)) {
      const len = schema.dims.find(([n]) => n === d)![1];
      if (a !== 0 || b !== len)
        throw new ProtocolError(
          `a Single writer writes the whole domain; region ${d}=[${a}, ${b}) is not [0, ${len})`,
        );
    }
    return { full, named: {} as Region };
  }
  return { full, named: canonicalRegion(given) };
}

/**
 * The streaming writer of seed 000 §4–§8: one instance per writer (Single, Owner or Contributor) of one
 * store. Data objects are written whole and atomically by the writer that owns them; only the owner
 * writes metadata, and the manifest is always its last write, so readers never see uncommitted data.
 */
export class ZarrStreamWriter {
  readonly store: Store;
  readonly schema: StreamSchema;
  readonly fingerprint: string;
  readonly role: Role;
  readonly writerId: number;
  readonly nWriters: number;
  readonly manifestVersion: 1 | 2;
  private readonly namedRegion: Region;
  private readonly regionDims: string[];
  private readonly plans: ArrayPlan[];
  private readonly buffers: TimeShardBuffers;
  private readonly shardT: number;
  private committed: CommittedState;
  private pending = emptyPending();
  /** Contributor view (seed §6.2): records and statics this handle has tokened since join. */
  private readonly tokenedRecords = new Set<number>();
  private readonly tokenedStatics = new Set<string>();
  private nextIndex: number;
  private lastT: number | null;
  private closed = false;
  private readonly baseUrl: string;
  private manifest: OutputManifest | undefined;
  /** Every object this handle writes goes through here, conditional on the version it last saw. */
  private readonly objects: FencedObjects;
  /** The owner's commit point: the manifest, compare-and-swap on the version last written or read. */
  private readonly commits: ManifestCommits;
  /** Each time-axis array's zarr.json as last written or read: shape rewrites keep every other byte. */
  private readonly zarrJson = new Map<string, Uint8Array>();
  private link: ControlPlaneLink | undefined;
  /** The background write of the last full time shard (append mode); its keys join the next token. */
  private inflight: Promise<string[]> | undefined;
  /** A background time-shard write that failed, not yet reported to the caller. */
  private backgroundFailure: { err: unknown } | undefined;
  private ownCloseToken: CommitToken | undefined;
  private readonly opts: WriterOptions;

  private constructor(init: WriterInit) {
    this.store = init.store;
    this.schema = init.schema;
    this.fingerprint = init.fingerprint;
    this.role = init.role;
    this.writerId = init.role.kind === "contributor" ? init.role.id : 0;
    this.nWriters = init.nWriters;
    this.manifestVersion = init.version;
    const { full, named } = resolveRegion(init.schema, init.role, init.region);
    this.namedRegion = named;
    this.regionDims = Object.keys(named).sort();
    this.objects = init.objects ?? new FencedObjects(init.store);
    this.objects.mayOverwrite = (key) => this.mayOverwrite(key);
    this.commits = new ManifestCommits(this.objects, null, {
      url: init.store.url,
      writer: init.role.kind === "contributor" ? init.role.id : 0,
    });
    this.committed = init.committed;
    this.baseUrl = init.opts.baseUrl ?? init.store.url;
    this.opts = init.opts;
    this.shardT = init.schema.shard_shape[init.schema.time_dim]!;
    const times = indexedTimes(init.schema);
    this.plans = planArrays({
      schema: init.schema,
      region: full,
      regionDims: this.regionDims,
      isOwner: this.isOwner,
      timeLength: times ? times.length : init.committed.nCommitted,
    });
    // In append mode the owner streams the time coordinate too; an indexed one is written at create.
    const bufferPlans = this.plans.filter((p) => p.kind === "var" || (p.kind === "time" && !times));
    this.buffers = new TimeShardBuffers(this.objects, bufferPlans, this.shardT, (tsi) =>
      times ? times.length : (tsi + 1) * this.shardT,
    );
    this.nextIndex = times ? 0 : init.committed.nCommitted;
    this.lastT = times ? null : init.committed.lastT;
  }

  /** Seed §5.1 create (owner or Single): group, coordinates, array zarr.json, and a v2 manifest at commit_seq 0. */
  static async create(
    store: Store,
    schema: StreamSchema,
    role: Role,
    region: Region = {},
    opts: WriterOptions = {},
  ): Promise<ZarrStreamWriter> {
    const w = ZarrStreamWriter.fresh(store, schema, role, region, opts);
    if ((await store.size(GROUP_KEY)) !== undefined || (await store.size(MANIFEST_KEY)) !== undefined)
      throw storeExists(store);
    // The lease is the referee: of creators racing on one store, exactly one creates it.
    if (!(await w.objects.takeLease(0, true))) throw storeExists(store);
    await w.openLink("create");
    await w.failingRun(() => w.writeLayout());
    return w;
  }

  /** A handle on a store with nothing committed yet (no I/O): what create and resumeUncommitted lay out. */
  private static fresh(
    store: Store,
    schema: StreamSchema,
    role: Role,
    region: Region,
    opts: WriterOptions,
    objects?: FencedObjects,
  ): ZarrStreamWriter {
    const valid = validateStreamSchema(structuredClone(schema));
    checkRole(role);
    if (role.kind === "contributor")
      throw new ProtocolError("a contributor opens a store with join, not create");
    const times = indexedTimes(valid);
    const version = role.kind === "single" && !times && valid.statics.length === 0 ? 1 : 2;
    const committed: CommittedState = {
      commitSeq: 0,
      nCommitted: 0,
      timeShards: [],
      lastT: null,
      ...(times ? { entries: times.map((t) => ({ committed: false, t, generation: 0 })) } : {}),
      staticsCommitted: [],
      blobs: [],
      createdAt: utcSeconds((opts.now ?? (() => new Date()))()),
    };
    return new ZarrStreamWriter({
      store,
      schema: valid,
      fingerprint: schemaFingerprint(valid),
      role,
      region,
      version,
      nWriters: role.kind === "owner" ? role.nWriters : 1,
      committed,
      opts,
      objects,
    });
  }

  /** The group, every array's zarr.json and coordinates, then (v2) the manifest at commit_seq 0. */
  private async writeLayout(withManifest = this.manifestVersion === 2): Promise<void> {
    await this.objects.put(GROUP_KEY, groupDocument(this.schema));
    const put = (key: string, bytes: Uint8Array) => this.objects.put(key, bytes);
    for (const [name, bytes] of await writeArrays(put, this.schema, this.plans))
      this.zarrJson.set(name, bytes);
    await this.link?.ensureSchema(this.schema, this.fingerprint);
    if (withManifest) await this.writeManifest();
  }

  /** Seed §5.1 join (contributors): reads the v2 manifest, rebuilds and fingerprint-checks the schema. */
  static async join(
    store: Store,
    role: Role,
    region: Region = {},
    opts: WriterOptions = {},
  ): Promise<ZarrStreamWriter> {
    checkRole(role);
    if (role.kind !== "contributor")
      throw new ProtocolError(`join is for contributors; a ${role.kind} uses create or resume`);
    const objects = new FencedObjects(store);
    const read = await readManifestVersioned(store);
    if (read === undefined)
      throw new ProtocolError(`${store.url} has no ${MANIFEST_KEY}: the owner must create the store first`);
    const { manifest: m, tag } = read;
    if (m.schema !== "earthsciio/output-manifest/v2") {
      throw new ProtocolError(
        `join needs an earthsciio/output-manifest/v2 store; ${store.url} has ${m.schema}`,
      );
    }
    const w = ZarrStreamWriter.reopen(store, m, tag, role, region, opts, objects);
    w.checkCallerSchema();
    // Claims first: a second process opening a claimed role fails fast without fencing the first.
    await w.openLink("join");
    await w.failingRun(async () => {
      await w.takeOver();
      await w.reloadOpenTimeShard();
    });
    return w;
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
    checkRole(role);
    if (at !== undefined && (typeof at !== "number" || Number.isNaN(at)))
      throw new SchemaError(`resume: at must be a number, got ${at}`, "/at");
    const objects = new FencedObjects(store);
    const read = await readManifestVersioned(store);
    if (read === undefined) return ZarrStreamWriter.resumeUncommitted(store, role, region, opts, objects);
    const { manifest: m, tag } = read;
    if (m.schema === "earthsciio/output-manifest/v1" && role.kind !== "single") {
      throw new ProtocolError(
        `${store.url} is a v1 (Single-writer) store; resume it as single, not ${role.kind}`,
      );
    }
    const w = ZarrStreamWriter.reopen(store, m, tag, role, region, opts, objects);
    if (w.schema.time_mode !== "append" && at !== undefined) {
      throw new ProtocolError("resume of an indexed store truncates nothing: at must be undefined");
    }
    if (!opts.controlPlane) w.checkCallerSchema();
    let { keep, times } = await w.truncationPoint(at);
    let n = w.committed.nCommitted;
    const dropping = () => w.isOwner && keep < n;
    const replaces =
      dropping() && opts.controlPlane
        ? await ControlPlaneLink.runsHoldingFrom(store, opts.controlPlane, keep)
        : [];
    await w.openLink("resume", replaces);
    await w.failingRun(async () => {
      // Under a control plane the caller's schema goes through the resolved index first (row 5 names the diff).
      if (w.isOwner)
        await w.link?.ensureSchema(
          w.callerSchema() ?? w.schema,
          schemaFingerprint(w.callerSchema() ?? w.schema),
        );
      w.checkCallerSchema();
      // The lease is taken only once the open is known to be valid, so a refused open fences nobody.
      if (await w.takeOver()) {
        ({ keep, times } = await w.truncationPoint(at));
        n = w.committed.nCommitted;
      }
      if (w.isOwner) await w.readTimeArrays();
      if (w.schema.time_mode === "append") {
        await w.truncateTo(keep, times);
        if (dropping()) await w.link?.truncated(keep, n);
        await w.reloadOpenTimeShard();
      }
      if (w.isOwner) await w.link?.adoptCommitted(w.committedIndices(), w.committed.commitSeq);
    });
    return w;
  }

  private committedIndices(): number[] {
    const { entries, nCommitted } = this.committed;
    if (!entries) return Array.from({ length: nCommitted }, (_, i) => i);
    return entries.flatMap((e, i) => (e.committed ? [i] : []));
  }

  /** The caller's own schema (join/resume option), validated. */
  private callerSchema(): StreamSchema | undefined {
    return this.opts.schema === undefined
      ? undefined
      : validateStreamSchema(structuredClone(this.opts.schema));
  }

  /** join/resume with a schema: it must be the store's (the bindings whose open takes a schema check this). */
  private checkCallerSchema(): void {
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

  private async openLink(mode: "create" | "join" | "resume", replaces: string[] = []): Promise<void> {
    const cp = this.opts.controlPlane;
    if (cp === undefined) return;
    this.link = await ControlPlaneLink.open(
      this.store,
      cp,
      {
        isOwner: this.isOwner,
        nWriters: this.nWriters,
        append: this.schema.time_mode === "append",
        namedRegion: this.namedRegion,
      },
      mode,
      replaces,
    );
  }

  /** Runs `body`; on an exception the control-plane run ends run_failed and the claims are released. */
  private async failingRun<T>(body: () => Promise<T>): Promise<T> {
    try {
      return await body();
    } catch (err) {
      await this.link?.fail(err);
      throw err;
    }
  }

  /**
   * Ends this writer after an unrecoverable error: under a control plane the run ends run_failed and the
   * claims are released. Committed data is untouched; the store can be resumed.
   */
  async abort(error: unknown): Promise<void> {
    this.closed = true;
    await this.link?.fail(error);
  }

  private static reopen(
    store: Store,
    m: OutputManifest,
    tag: string | null,
    role: Role,
    region: Region,
    opts: WriterOptions,
    objects: FencedObjects,
  ): ZarrStreamWriter {
    let schema: StreamSchema;
    let version: 1 | 2;
    let nWriters = 1;
    if (m.schema === "earthsciio/output-manifest/v1") {
      schema = schemaFromManifestV1(m as OutputManifestV1);
      version = 1;
    } else {
      const v2 = m as OutputManifestV2;
      schema = schemaFromManifest(v2);
      version = 2;
      nWriters = v2.n_writers;
      const actual = schemaFingerprint(schema);
      if (actual !== v2.fingerprint) {
        throw new FingerprintMismatch(
          `${MANIFEST_KEY}: its schema hashes to ${actual}, it records ${v2.fingerprint}`,
          v2.fingerprint,
          actual,
        );
      }
      if (role.kind === "single" && nWriters !== 1)
        throw new ProtocolError(`a store with ${nWriters} writers cannot be resumed by a Single writer`);
      if (role.kind === "owner" && role.nWriters !== nWriters) {
        throw new ProtocolError(`the store has ${nWriters} writers, the owner says ${role.nWriters}`);
      }
      if (role.kind === "contributor" && role.id >= nWriters) {
        throw new ProtocolError(
          `contributor id ${role.id} is out of range: the store has writers 0..${nWriters - 1}`,
        );
      }
    }
    const fingerprint = schemaFingerprint(schema);
    const w = new ZarrStreamWriter({
      store,
      schema,
      fingerprint,
      role,
      region,
      version,
      nWriters,
      committed: stateFromManifest(m),
      opts,
      objects,
    });
    if (version === 2 && !sameMembers((m as OutputManifestV2).region_dims, w.regionDims)) {
      throw new ProtocolError(
        `the store's writers name region dims [${(m as OutputManifestV2).region_dims.join(", ")}]; region ${JSON.stringify(region)} names [${w.regionDims.join(", ")}]`,
      );
    }
    w.manifest = m;
    w.commits.tag = tag;
    return w;
  }

  /**
   * Takes this writer's lease, which fences every older handle of it (a preempted job that comes back),
   * then reads the manifest again. The owner also restamps it (compare-and-swap, created_at set to now):
   * an older owner's commit whose lease check passed before the takeover either lands first, and the
   * restamp sees it, or finds the manifest changed and is refused. Either way the view this handle goes
   * on from is the committed state. Returns whether the manifest changed since the handle was opened.
   */
  private async takeOver(): Promise<boolean> {
    await this.objects.takeLease(this.writerId, false);
    let changed = false;
    let refusals = 0;
    for (;;) {
      const read = await readManifestVersioned(this.store);
      if (read === undefined)
        throw new StoreError(`${MANIFEST_KEY} of ${this.store.url} vanished while opening`, MANIFEST_KEY);
      if (read.tag !== this.commits.tag) {
        if (read.manifest.schema !== this.manifest?.schema)
          throw new ProtocolError(`${MANIFEST_KEY} of ${this.store.url} changed version while opening`);
        this.adoptManifest(read.manifest, read.tag);
        changed = true;
      }
      if (!this.isOwner) return changed;
      const before = this.commits.tag;
      const write = this.manifestWrite({ ...this.committed, createdAt: utcSeconds(this.clock()) });
      if (!(await this.commits.tryWrite(write))) {
        // Only a commit already in flight when the lease changed hands can land now, and only once.
        if (++refusals === 3) throw this.commits.concurrentOwner();
        continue;
      }
      this.committed = write.state;
      this.manifest = write.manifest;
      // A store that versions by content (S3: identical bytes keep their ETag) fenced nothing if the
      // stamp did not change the bytes: stamp again in the next second.
      if (this.commits.tag !== before || this.opts.now !== undefined) return changed;
      await new Promise((resolve) => setTimeout(resolve, 1005 - (Date.now() % 1000)));
    }
  }

  private adoptManifest(m: OutputManifest, tag: string | null): void {
    this.committed = stateFromManifest(m);
    this.manifest = m;
    this.commits.tag = tag;
    const times = indexedTimes(this.schema);
    this.nextIndex = times ? 0 : this.committed.nCommitted;
    this.lastT = times ? null : this.committed.lastT;
  }

  private clock(): Date {
    return (this.opts.now ?? (() => new Date()))();
  }

  /** The owner's zarr.json of every time-axis array, validated, kept for shape rewrites. */
  private async readTimeArrays(): Promise<void> {
    await runLimited(
      this.plans
        .filter((p) => p.timeAxis >= 0)
        .map((p) => async () => {
          const key = zarrJsonKey(p.name);
          const bytes = await this.objects.read(key);
          if (bytes === undefined) throw new SchemaError(`array ${p.name}: ${key} is missing`, "", key);
          parseArrayZarrJson(parseJsonObject(bytes, key), key);
          this.zarrJson.set(p.name, bytes);
        }),
    );
  }

  /**
   * Resume of a store whose creator stopped before its first commit: there is no manifest (a v1 store
   * before its first flush, or a create cut short). With the caller's schema the store is laid out again
   * as create would, taking over whatever the earlier handle left.
   */
  private static async resumeUncommitted(
    store: Store,
    role: Role,
    region: Region,
    opts: WriterOptions,
    objects: FencedObjects,
  ): Promise<ZarrStreamWriter> {
    if ((await store.size(GROUP_KEY)) === undefined && (await store.size(leaseKey(0))) === undefined)
      throw new StoreError(`${store.url} holds no store: create it`, GROUP_KEY);
    if (role.kind === "contributor")
      throw new ProtocolError(
        `${store.url} has no ${MANIFEST_KEY} yet: the owner must create or resume it first`,
      );
    if (opts.schema === undefined) {
      throw new StoreError(
        `${store.url} has no ${MANIFEST_KEY}: nothing was committed; resume it with the schema (opts.schema) to start it again`,
        MANIFEST_KEY,
      );
    }
    const w = ZarrStreamWriter.fresh(store, opts.schema, role, region, opts, objects);
    await objects.takeLease(0, false);
    if ((await store.size(MANIFEST_KEY)) === undefined) {
      await w.openLink("create");
      // The manifest (a v1 store's too, with no records) is written create-only: the earlier handle's
      // first commit, if it was in flight when the lease changed hands, cannot land after it.
      const laidOut = await w.failingRun(async () => {
        await w.writeLayout(false);
        const write = w.manifestWrite(w.committed);
        if (!(await w.commits.tryWrite(write))) return false;
        w.manifest = write.manifest;
        return true;
      });
      if (laidOut) return w;
      await w.abort(new StoreExists(`${store.url} was committed to while resuming`, MANIFEST_KEY));
    }
    // Committed to meanwhile: open it as any committed store, repairing the shapes just laid out.
    return ZarrStreamWriter.resume(store, role, region, undefined, opts);
  }

  get isOwner(): boolean {
    return this.role.kind !== "contributor";
  }

  /** Number of committed records (append) or committed records in the writer's view (indexed). */
  get committedCount(): number {
    return this.committed.entries
      ? this.committed.entries.filter((e) => e.committed).length
      : this.committed.nCommitted;
  }

  private assertOpen(): void {
    this.objects.assertUnfenced();
    if (this.closed) throw new ProtocolError("the writer is closed");
  }

  /**
   * Whether this handle, holding its lease, may overwrite an object another write changed. Only when that
   * write cannot have been committed: the owner's manifest is still the one it last wrote or read; a
   * contributor's committed records are all ones it holds or tokened itself.
   */
  private async mayOverwrite(_key: string): Promise<boolean> {
    if (this.isOwner) return ((await this.objects.store.version(MANIFEST_KEY)) ?? null) === this.commits.tag;
    const fresh = stateFromManifest(await readOutputManifest(this.store));
    if (fresh.entries) return fresh.entries.every((e, i) => !e.committed || this.isCommittedInView(i));
    for (let i = this.committed.nCommitted; i < fresh.nCommitted; i++)
      if (!this.tokenedRecords.has(i)) return false;
    return true;
  }

  private assertOwner(what: string): void {
    if (!this.isOwner)
      throw new ProtocolError(`${what} is the owner's call; writer ${this.writerId} is a contributor`);
  }

  private get timeValues(): number[] | undefined {
    return indexedTimes(this.schema);
  }

  /** Seed §6.1: append record; t strictly increasing. Returns the record index. */
  async writeRecord(t: number, arrays: RecordArrays): Promise<number> {
    this.assertOpen();
    if (this.schema.time_mode !== "append")
      throw new ProtocolError("writeRecord is for append mode; an indexed store takes writeRecordAt");
    if (typeof t !== "number" || !Number.isFinite(t))
      throw new SchemaError(`t must be a finite number, got ${t}`, "/t");
    if (this.lastT !== null && !(t > this.lastT)) {
      throw new SchemaError(`t must be strictly increasing: ${t} after ${this.lastT}`, "/t");
    }
    const prepared = this.prepareArrays(arrays);
    this.throwBackgroundFailure();
    const index = this.nextIndex;
    if (this.isOwner) prepared.set(this.schema.time_dim, Float64Array.of(t));
    // State first: a second writeRecord issued before this one settles still gets the next index.
    this.nextIndex += 1;
    this.lastT = t;
    this.pending.records.set(index, t);
    await this.buffers.put(index, prepared);
    if (index % this.shardT === this.shardT - 1) {
      // A full time shard is encoded and written while the caller produces the next one; at most one is
      // in flight, so memory stays at two time shards of buffers.
      await this.settleWrites();
      this.inflight = this.buffers.write([Math.floor(index / this.shardT)], true);
      // Marked handled so a failure never crashes the process unobserved; settleWrites records it.
      this.inflight.catch(() => {});
    }
    return index;
  }

  /** Seed §6.2: indexed record at any index; t must be times[index] bitwise. */
  async writeRecordAt(index: number, t: number, arrays: RecordArrays): Promise<void> {
    this.assertOpen();
    const times = this.timeValues;
    if (times === undefined)
      throw new ProtocolError("writeRecordAt is for indexed mode; an append store takes writeRecord");
    if (!Number.isInteger(index) || index < 0 || index >= times.length) {
      throw new SchemaError(`record index ${index} is not an integer in [0, ${times.length})`, "/index");
    }
    if (!Object.is(t, times[index]))
      throw new SchemaError(`t ${t} is not times[${index}] = ${times[index]} (bitwise)`, "/t");
    const prepared = this.prepareArrays(arrays);
    await this.assertRecordWritable(index);
    const tsi = Math.floor(index / this.shardT);
    if (!this.buffers.has(tsi))
      await this.buffers.reload(tsi, (pos) => this.isCommittedInView(tsi * this.shardT + pos));
    await this.buffers.put(index, prepared);
    this.pending.records.set(index, t);
    const valid = Math.min(this.shardT, times.length - tsi * this.shardT);
    if (this.buffers.filledCount(tsi) === valid) {
      for (const key of await this.buffers.write([tsi], false)) this.pending.objects.add(key);
    }
  }

  /**
   * Waits for the background time-shard write. A failed one leaves its time shard open and dirty, so the
   * next flush writes it again; the failure is reported by the next writeRecord before it accepts anything.
   */
  private async settleWrites(): Promise<void> {
    const inflight = this.inflight;
    if (inflight === undefined) return;
    this.inflight = undefined;
    try {
      for (const key of await inflight) this.pending.objects.add(key);
    } catch (err) {
      this.backgroundFailure ??= { err };
    }
  }

  private throwBackgroundFailure(): void {
    const failure = this.backgroundFailure;
    if (failure === undefined) return;
    this.backgroundFailure = undefined;
    throw failure.err;
  }

  private isCommittedInView(index: number): boolean {
    return this.committed.entries?.[index]?.committed === true || this.tokenedRecords.has(index);
  }

  /** Seed §6.2 rewrite rule; a contributor re-reads the manifest before refusing. */
  private async assertRecordWritable(index: number): Promise<void> {
    if (!this.isCommittedInView(index)) return;
    if (!this.isOwner) await this.refreshView();
    if (this.isCommittedInView(index)) {
      throw new ProtocolError(
        `record ${index} is committed; the owner must invalidate([${index}]) before it is rewritten`,
      );
    }
  }

  private async assertStaticWritable(name: string): Promise<void> {
    const committed = () => this.committed.staticsCommitted.includes(name) || this.tokenedStatics.has(name);
    if (!committed()) return;
    if (!this.isOwner) await this.refreshView();
    if (committed())
      throw new ProtocolError(
        `static ${name} is committed; the owner must invalidateStatics(["${name}"]) first`,
      );
  }

  private async refreshView(): Promise<void> {
    const m = await readOutputManifest(this.store);
    this.committed = stateFromManifest(m);
    this.tokenedRecords.clear();
    this.tokenedStatics.clear();
  }

  /** Checks a write_record argument fully before anything is buffered. */
  private prepareArrays(arrays: RecordArrays): Map<string, TypedArray> {
    if (arrays === null || typeof arrays !== "object")
      throw new SchemaError("record arrays must be an object {variable: typed array}", "/arrays");
    const vars = new Map(this.plans.filter((p) => p.kind === "var").map((p) => [p.name, p]));
    for (const name of Object.keys(arrays)) {
      const plan = vars.get(name);
      if (!plan)
        throw new SchemaError(`unknown variable ${JSON.stringify(name)} in record arrays`, `/arrays/${name}`);
      if (!plan.supplies) {
        throw new ProtocolError(
          `variable ${name} is replicated: only the owner supplies it, not contributor ${this.writerId}`,
        );
      }
    }
    const out = new Map<string, TypedArray>();
    for (const plan of vars.values()) {
      if (!plan.supplies) continue;
      const a = (arrays as Record<string, TypedArray | undefined>)[plan.name];
      if (a === undefined)
        throw new SchemaError(`record arrays lack variable ${plan.name}`, `/arrays/${plan.name}`);
      checkSuppliedArray(plan, a);
      out.set(plan.name, a);
    }
    return out;
  }

  /** Seed §7 write_static: encoded and written immediately; committed with the next token. */
  async writeStatic(name: string, array: TypedArray): Promise<void> {
    this.assertOpen();
    const plan = this.plans.find((p) => p.kind === "static" && p.name === name);
    if (!plan) throw new SchemaError(`unknown static ${JSON.stringify(name)}`, `/statics/${name}`);
    if (!plan.supplies)
      throw new ProtocolError(
        `static ${name} is replicated: only the owner writes it, not contributor ${this.writerId}`,
      );
    checkSuppliedArray(plan, array);
    await this.assertStaticWritable(name);
    const { layout } = plan;
    const shardLen = layout.shardShape.reduce((p, n) => p * n, 1);
    for (const idx of plan.ownedShards) {
      const buf = allocTyped(plan.dtype, shardLen);
      const lo = idx.map((i, d) => i * layout.shardShape[d]!);
      const count = idx.map((_, d) => Math.min(lo[d]! + layout.shardShape[d]!, layout.shape[d]!) - lo[d]!);
      copyStrided(
        array,
        plan.suppliedFullShape,
        lo.map((x, d) => x - plan.suppliedStart[d]!),
        buf,
        layout.shardShape,
        lo.map(() => 0),
        count,
      );
      const key = shardKey(plan.name, idx);
      await this.objects.put(key, await encodeShard(layout, idx, buf));
      this.pending.objects.add(key);
    }
    this.pending.statics.add(name);
  }

  /** Seed §7 write_blob: a small writer-local payload, committed like records. */
  async writeBlob(scope: BlobScope, key: string, bytes: Uint8Array): Promise<void> {
    this.assertOpen();
    if (this.manifestVersion === 1)
      throw new ProtocolError("blobs need a v2 store: create it with role owner{nWriters: 1}");
    if (scope !== "static") {
      const r = scope?.record;
      const n = this.timeValues?.length;
      if (!Number.isInteger(r) || r < 0 || (n !== undefined && r >= n)) {
        throw new SchemaError(
          `blob scope ${JSON.stringify(scope)}: record must be an integer in range`,
          "/scope",
        );
      }
    }
    if (!(bytes instanceof Uint8Array)) throw new SchemaError("blob bytes must be a Uint8Array", "/bytes");
    if (scope !== "static" && this.schema.time_mode === "append" && scope.record >= this.nextIndex) {
      throw new ProtocolError(
        `blob for record ${scope.record}: that record is not written yet (next record index ${this.nextIndex})`,
      );
    }
    const objectKey = blobObjectKey(scope, this.writerId, key);
    await this.objects.put(objectKey, bytes);
    const entry: TokenBlob =
      scope === "static" ? { scope: "static", key } : { scope: "record", record: scope.record, key };
    this.pending.blobs.set(blobId(entry), entry);
    this.pending.objects.add(objectKey);
  }

  private hasPending(): boolean {
    return this.pending.records.size > 0 || this.pending.statics.size > 0 || this.pending.blobs.size > 0;
  }

  /** Seed §5.1 flush: PUT every dirty shard of the region and return the token. Single: also commits. */
  async flush(): Promise<CommitToken> {
    this.assertOpen();
    await this.settleCommits();
    await this.settleWrites();
    for (const key of await this.buffers.writeAll()) this.pending.objects.add(key);
    // Every dirty shard is written now, a failed background write's included.
    this.backgroundFailure = undefined;
    const token = this.pendingToken();
    // A Single writer's pending data stays pending until its commit lands, so a failed commit is retried
    // by the next flush instead of being dropped.
    if (this.role.kind === "single" && this.hasPending()) await this.commitVerified([token]);
    this.dropPending(token);
    if (!this.isOwner) {
      for (const r of token.records) this.tokenedRecords.add(r.index);
      for (const s of token.statics) this.tokenedStatics.add(s);
      if (this.committed.entries) this.buffers.releaseWritten();
    }
    return token;
  }

  private pendingToken(): CommitToken {
    const p = this.pending;
    return {
      schema: COMMIT_TOKEN_SCHEMA,
      writer: this.writerId,
      region: canonicalRegion(this.namedRegion),
      fingerprint: this.fingerprint,
      records: [...p.records].sort((a, b) => a[0] - b[0]).map(([index, t]) => ({ index, t })),
      statics: [...p.statics].sort(),
      blobs: [...p.blobs.values()].sort(compareTokenBlobs),
      objects: [...p.objects].sort(),
    };
  }

  /** Removes what `token` carries from the pending set (writes made since stay pending). */
  private dropPending(token: CommitToken): void {
    for (const r of token.records) this.pending.records.delete(r.index);
    for (const name of token.statics) this.pending.statics.delete(name);
    for (const b of token.blobs) this.pending.blobs.delete(blobId(b));
    for (const key of token.objects) this.pending.objects.delete(key);
  }

  /**
   * Settles a manifest write whose outcome was unknown (it threw): when it landed, its state becomes the
   * committed state and what it carried of this writer's own pending data is no longer pending.
   */
  private async settleCommits(): Promise<ManifestWrite | undefined> {
    if (!this.isOwner) return undefined;
    const landed = await this.commits.settle();
    if (landed === undefined) return undefined;
    this.committed = landed.state;
    this.manifest = landed.manifest;
    if (this.role.kind === "single" && landed.carried) for (const t of landed.carried) this.dropPending(t);
    return landed;
  }

  /** Seed §5.3 owner commit: verify every token, then shapes, then the manifest (the commit point). */
  async commit(tokens: CommitToken[]): Promise<CommitReceipt> {
    this.assertOpen();
    this.assertOwner("commit");
    if (!Array.isArray(tokens)) throw new SchemaError("commit takes an array of tokens", "/tokens");
    const landed = await this.settleCommits();
    // The same call retried after an unknown outcome that in fact landed: it succeeded.
    if (landed?.carried !== undefined && JSON.stringify(landed.carried) === JSON.stringify(tokens))
      return this.receipt();
    return this.commitVerified(tokens);
  }

  private receipt(): CommitReceipt {
    return {
      commit_seq: this.committed.commitSeq,
      n_committed: this.committedCount,
      manifest: this.manifest as OutputManifestV2,
    };
  }

  private async commitVerified(tokens: CommitToken[]): Promise<CommitReceipt> {
    const state = this.committed;
    const verified = verifyTokens(tokens, {
      schema: this.schema,
      fingerprint: this.fingerprint,
      nWriters: this.nWriters,
      nCommitted: state.nCommitted,
      lastT: state.lastT,
      regionDims: this.manifestVersion === 2 ? this.regionDims : undefined,
      isRecordCommitted: (i) => state.entries?.[i]?.committed === true,
      committedStatics: new Set(state.staticsCommitted),
      isStaticPartitioned: (name, regionDims) =>
        isPartitioned(this.schema.statics.find((s) => s.name === name)!.dims, regionDims),
    });
    const next = applyCommit(state, verified, this.shardT);
    checkBlobRecords(next, verified.blobs);
    await this.assertClaimsHeld();
    if (next.nCommitted !== state.nCommitted) {
      await this.commits.assertUnchanged();
      await writeTimeShapes(this.putObject, this.plans, next.nCommitted, this.zarrJson);
    }
    await this.writeManifest(next, tokens);
    await this.link?.committed({
      commitSeq: next.commitSeq,
      records: verified.records,
      arrays: this.schema.vars.map((v) => v.name),
      regionDims: verified.regionDims,
    });
    if (this.committed.entries) this.buffers.releaseWritten();
    return this.receipt();
  }

  private readonly putObject = (key: string, bytes: Uint8Array) => this.objects.put(key, bytes);

  /** Under a control plane: a writer whose claim was cleared or taken stops before it writes metadata. */
  private async assertClaimsHeld(): Promise<void> {
    try {
      await this.link?.assertClaimsHeld();
    } catch (err) {
      if (err instanceof ClaimLost) this.objects.fence(err.domain, `claim ${err.domain} was lost`);
      throw err;
    }
  }

  /**
   * Writes the manifest of `state` (the commit point); only then is `state` this writer's committed state.
   * `carried` are the tokens the commit carries, so a retry of the same call can be recognised.
   */
  private async writeManifest(
    state: CommittedState = this.committed,
    carried?: CommitToken[],
  ): Promise<OutputManifest> {
    const write = this.manifestWrite(state, carried);
    await this.assertClaimsHeld();
    await this.commits.write(write);
    this.committed = state;
    this.manifest = write.manifest;
    return write.manifest;
  }

  private manifestWrite(state: CommittedState, carried?: CommitToken[]): ManifestWrite {
    const id = {
      schema: this.schema,
      fingerprint: this.fingerprint,
      nWriters: this.nWriters,
      regionDims: this.regionDims,
      baseUrl: this.baseUrl,
    };
    const manifest = this.manifestVersion === 1 ? buildManifestV1(id, state) : buildManifestV2(id, state);
    return { bytes: serializeManifest(manifest), state, manifest, carried };
  }

  /** Seed §6.2: the owner marks records uncommitted (and their record blobs), bumping commit_seq. */
  async invalidate(indices: number[]): Promise<void> {
    this.assertOpen();
    this.assertOwner("invalidate");
    const entries = this.committed.entries;
    if (!entries)
      throw new ProtocolError("invalidate is for indexed stores: append records are never rewritten");
    for (const i of indices) {
      if (!Number.isInteger(i) || i < 0 || i >= entries.length)
        throw new SchemaError(`invalidate: index ${i} is not in [0, ${entries.length})`, "/indices");
    }
    await this.settleCommits();
    const next = invalidatedState(this.committed, indices);
    await this.writeManifest(next);
    await this.link?.invalidated(
      next.commitSeq,
      [...new Set(indices)].sort((a, b) => a - b),
    );
  }

  /** Seed §6.2 for statics: uncommits them so they may be written again. */
  async invalidateStatics(names: string[]): Promise<void> {
    this.assertOpen();
    this.assertOwner("invalidateStatics");
    for (const n of names) {
      if (!this.schema.statics.some((s) => s.name === n))
        throw new SchemaError(`invalidateStatics: unknown static ${JSON.stringify(n)}`, "/names");
    }
    await this.settleCommits();
    const next = structuredClone(this.committed);
    next.staticsCommitted = next.staticsCommitted.filter((s) => !names.includes(s));
    next.commitSeq += 1;
    await this.writeManifest(next);
  }

  /**
   * Seed §5.1 close. Single: flush, then rewrite the manifest at the same commit_seq. Owner: flush and
   * commit its own token with the others'. Contributor: refuses when written data was not flushed.
   */
  async close(tokens: CommitToken[] = []): Promise<OutputManifest | undefined> {
    this.assertOpen();
    let manifest: OutputManifest | undefined;
    try {
      manifest = await this.closeRole(tokens);
    } catch (err) {
      // A refused close (unflushed data, a token that does not verify) or a failed store call changes no
      // committed byte and may be retried; losing the store to another handle ends the run.
      const fencedOut =
        err instanceof Fenced || (err instanceof CommitError && err.reason === "concurrent-owner");
      if (fencedOut) {
        this.closed = true;
        await this.link?.fail(err);
      }
      throw err;
    }
    this.closed = true;
    await this.link?.complete();
    return manifest;
  }

  private async closeRole(tokens: CommitToken[]): Promise<OutputManifest | undefined> {
    if (this.role.kind === "contributor") {
      if (this.hasPending())
        throw new ProtocolError(
          `contributor ${this.writerId} has unflushed data: flush and deliver its token before close`,
        );
      return undefined;
    }
    if (this.role.kind === "single") {
      if (tokens.length > 0) throw new ProtocolError("a Single writer's close takes no tokens");
      await this.flush();
      return this.writeManifest();
    }
    // The owner's own token survives a refused commit, so close can be retried with corrected tokens.
    this.ownCloseToken ??= await this.flush();
    const receipt = await this.commit([this.ownCloseToken, ...tokens]);
    this.ownCloseToken = undefined;
    return receipt.manifest;
  }

  /** Append resume: how many committed records have t <= at (reads the time coordinate only). */
  private async truncationPoint(at: number | undefined): Promise<{ keep: number; times?: Float64Array }> {
    const n = this.committed.nCommitted;
    if (at === undefined || n === 0 || this.schema.time_mode !== "append") return { keep: n };
    const timePlan = this.plans.find((p) => p.kind === "time")!;
    const layout = await readArrayLayout(this.store, timePlan.name);
    const times = (await readArrayRegion(
      this.store,
      timePlan.name,
      { ...layout, shape: [Math.max(n, layout.shape[0]!)] },
      [[0, n]],
    )) as Float64Array;
    let keep = 0;
    while (keep < n && times[keep]! <= at) keep++;
    return { keep, times };
  }

  /** Append resume: the owner persists a truncation to `keep` records; every writer adopts it. */
  private async truncateTo(keep: number, times: Float64Array | undefined): Promise<void> {
    const n = this.committed.nCommitted;
    const timePlan = this.plans.find((p) => p.kind === "time")!;
    if (this.isOwner) {
      if (keep < n) {
        const next = truncatedState(this.committed, keep, times!, this.shardT, this.manifestVersion === 2);
        await this.commits.assertUnchanged();
        await writeTimeShapes(this.putObject, this.plans, keep, this.zarrJson);
        await this.writeManifest(next);
      } else {
        // A crash between the shape rewrite and the manifest leaves shapes ahead of the commit: repair them.
        const key = zarrJsonKey(timePlan.name);
        const layout = parseArrayZarrJson(parseJsonObject(this.zarrJson.get(timePlan.name)!, key), key);
        if (layout.shape[0] !== keep) await writeTimeShapes(this.putObject, this.plans, keep, this.zarrJson);
      }
    } else if (keep < n) {
      this.committed = truncatedState(this.committed, keep, times!, this.shardT, false);
    }
    this.nextIndex = keep;
    this.lastT = keep > 0 ? (times ? times[keep - 1]! : this.committed.lastT) : null;
  }

  /** Seed §5.4: an append store whose committed count ends inside a time shard reloads that shard. */
  private async reloadOpenTimeShard(): Promise<void> {
    if (this.schema.time_mode !== "append") return;
    const n = this.nextIndex;
    if (n % this.shardT === 0) return;
    await this.buffers.reload(Math.floor(n / this.shardT), (pos) => pos < n % this.shardT);
  }

  /** The manifest this writer last read or wrote. */
  get lastManifest(): OutputManifest | undefined {
    return this.manifest;
  }
}
