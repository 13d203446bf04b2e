import { MANIFEST_KEY, readManifestVersioned } from "@zarr-stream/reader";
import {
  FingerprintMismatch,
  isOutputManifestV2,
  isPagedForm,
  OUTPUT_MANIFEST_V2_PAGED,
  type OutputManifest,
  type OutputManifestV1,
  type OutputManifestV2,
  ProtocolError,
  type Region,
  type Role,
  SchemaError,
  StoreError,
  StoreExists,
  type StreamSchema,
  schemaFingerprint,
  schemaFromManifest,
  validateStreamSchema,
} from "@zarr-stream/spec";
import type { Store } from "@zarr-stream/store";
import { committedIndices } from "./committed-state.js";
import { ControlPlaneLink } from "./control-plane-link.js";
import { FencedObjects } from "./fenced-objects.js";
import { indexedTimes } from "./indexed-times.js";
import { type CommittedState, stateFromManifest, utcSeconds } from "./manifest-doc.js";
import { RecordEntries } from "./record-entries.js";
import { checkRole } from "./roles.js";
import { schemaFromManifestV1 } from "./schema-v1.js";
import { GROUP_KEY } from "./store-layout.js";
import { WriterCore, type WriterOptions } from "./writer-core.js";
import { leaseKey } from "./writer-lease.js";

function storeExists(store: Store): StoreExists {
  return new StoreExists(`${store.url} already holds a store: open it with join or resume`, GROUP_KEY);
}

/** `manifestPages` as given: a value other than a boolean would choose a form by its truthiness. */
function manifestPagesOption(opts: WriterOptions): boolean | undefined {
  const v: unknown = opts.manifestPages;
  if (v !== undefined && typeof v !== "boolean")
    throw new SchemaError(`manifestPages must be true or false, got ${JSON.stringify(v)}`, "/manifestPages");
  return v;
}

function sameMembers(a: string[], b: string[]): boolean {
  return a.length === b.length && [...a].sort().every((x, i) => x === [...b].sort()[i]);
}

/** Seed §5.1 create (owner or Single): group, coordinates, array zarr.json, and a v2 manifest at commit_seq 0. */
export async function createCore(
  store: Store,
  schema: StreamSchema,
  role: Role,
  region: Region,
  opts: WriterOptions,
): Promise<WriterCore> {
  const w = fresh(store, schema, role, region, opts);
  if ((await store.size(GROUP_KEY)) !== undefined || (await store.size(MANIFEST_KEY)) !== undefined)
    throw storeExists(store);
  // The lease is the referee: of creators racing on one store, exactly one creates it.
  if (!(await w.objects.takeLease(0, true))) throw storeExists(store);
  await w.openLink("create");
  const owner = w.owner("create");
  await w.failingRun(() => owner.layOut());
  return w;
}

/** A handle on a store with nothing committed yet (no I/O): what create and a resume before any commit lay out. */
function fresh(
  store: Store,
  schema: StreamSchema,
  role: Role,
  region: Region,
  opts: WriterOptions,
  objects?: FencedObjects,
): WriterCore {
  const valid = validateStreamSchema(structuredClone(schema));
  checkRole(role);
  if (role.kind === "contributor")
    throw new ProtocolError("a contributor opens a store with join, not create");
  const times = indexedTimes(valid);
  const version = role.kind === "single" && !times && valid.statics.length === 0 ? 1 : 2;
  // Seed §8.1 pins v1 byte for byte, so only v2 has a paged form.
  const manifestPages = manifestPagesOption(opts) === true;
  if (version === 1 && manifestPages)
    throw new ProtocolError(
      "manifestPages needs a v2 store: a Single writer in append mode without statics writes v1, which is never paged (use Owner{1})",
    );
  const committed: CommittedState = {
    commitSeq: 0,
    nCommitted: 0,
    timeShards: [],
    lastT: null,
    ...(times
      ? { entries: RecordEntries.from(times.map((t) => ({ committed: false, t, generation: 0 }))) }
      : {}),
    staticsCommitted: [],
    blobs: [],
    createdAt: utcSeconds((opts.now ?? (() => new Date()))()),
  };
  return new WriterCore({
    store,
    schema: valid,
    fingerprint: schemaFingerprint(valid),
    role,
    region,
    version,
    manifestPages,
    nWriters: role.kind === "owner" ? role.nWriters : 1,
    committed,
    opts,
    objects,
  });
}

/** Seed §5.1 join (contributors): reads the v2 manifest, rebuilds and fingerprint-checks the schema. */
export async function joinCore(
  store: Store,
  role: Role,
  region: Region,
  opts: WriterOptions,
): Promise<WriterCore> {
  checkRole(role);
  if (role.kind !== "contributor")
    throw new ProtocolError(`join is for contributors; a ${role.kind} uses create or resume`);
  const objects = new FencedObjects(store, opts.job);
  const read = await readManifestVersioned(store);
  if (read === undefined)
    throw new ProtocolError(`${store.url} has no ${MANIFEST_KEY}: the owner must create the store first`);
  const { manifest: m, tag } = read;
  if (!isOutputManifestV2(m)) {
    throw new ProtocolError(
      `join needs an earthsciio/output-manifest/v2 store (or its paged form, ${OUTPUT_MANIFEST_V2_PAGED}); ${store.url} has ${m.schema}`,
    );
  }
  const w = reopen(store, m, tag, role, region, opts, objects);
  w.checkCallerSchema();
  // Claims first: a second process opening a claimed role fails fast without fencing the first.
  await w.openLink("join");
  await w.failingRun(async () => {
    await w.takeOver();
    await w.time.reloadOpen();
  });
  return w;
}

/**
 * Seed §7 resume after preemption. Append mode keeps the committed records with t <= at (all when at is
 * undefined); when that drops records the owner rewrites shapes and manifest. Every writer reloads its
 * region of the open time shard so later flushes rewrite whole shards.
 */
export async function resumeCore(
  store: Store,
  role: Role,
  region: Region,
  at: number | undefined,
  opts: WriterOptions,
): Promise<WriterCore> {
  checkRole(role);
  if (at !== undefined && (typeof at !== "number" || Number.isNaN(at)))
    throw new SchemaError(`resume: at must be a number, got ${at}`, "/at");
  const objects = new FencedObjects(store, opts.job);
  const read = await readManifestVersioned(store);
  if (read === undefined) return resumeUncommitted(store, role, region, opts, objects);
  const { manifest: m, tag } = read;
  if (m.schema === "earthsciio/output-manifest/v1" && role.kind !== "single") {
    throw new ProtocolError(
      `${store.url} is a v1 (Single-writer) store; resume it as single, not ${role.kind}`,
    );
  }
  const w = reopen(store, m, tag, role, region, opts, objects);
  w.time.checkResumeAt(at);
  if (!opts.controlPlane) w.checkCallerSchema();
  let point = await w.time.truncationPoint(at);
  const owner = w.duties.commits;
  const replaces =
    owner && point.keep < w.view.state.nCommitted && opts.controlPlane
      ? await ControlPlaneLink.runsHoldingFrom(store, opts.controlPlane, point.keep)
      : [];
  await w.openLink("resume", replaces);
  await w.failingRun(async () => {
    // Under a control plane the caller's schema goes through the resolved index first (row 5 names the diff).
    if (owner && w.link) {
      const schema = w.callerSchema() ?? w.schema;
      await w.link.ensureSchema(schema, schemaFingerprint(schema));
    }
    w.checkCallerSchema();
    // The lease is taken only once the open is known to be valid, so a refused open fences nobody.
    if (await w.takeOver()) point = await w.time.truncationPoint(at);
    if (owner) await owner.readLayout();
    await w.time.resume(point, owner && ((p) => owner.truncate(p)));
    if (owner) await owner.finishResume();
    if (owner) await w.link?.adoptCommitted(committedIndices(w.view.state), w.view.state.commitSeq);
  });
  return w;
}

/**
 * Resume of a store whose creator stopped before its first commit: there is no manifest (a v1 store
 * before its first flush, or a create cut short). With the caller's schema the store is laid out again
 * as create would, taking over whatever the earlier handle left.
 */
async function resumeUncommitted(
  store: Store,
  role: Role,
  region: Region,
  opts: WriterOptions,
  objects: FencedObjects,
): Promise<WriterCore> {
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
  const w = fresh(store, opts.schema, role, region, opts, objects);
  await objects.takeLease(0, false);
  if ((await store.size(MANIFEST_KEY)) === undefined) {
    await w.openLink("create");
    const owner = w.owner("resume");
    // The manifest (a v1 store's too, with no records) is written create-only: the earlier handle's
    // first commit, if it was in flight when the lease changed hands, cannot land after it.
    const laidOut = await w.failingRun(async () => {
      await owner.layOut(false);
      return owner.createManifest();
    });
    if (laidOut) return w;
    await w.abort(new StoreExists(`${store.url} was committed to while resuming`, MANIFEST_KEY));
  }
  // Committed to meanwhile: open it as any committed store, repairing the shapes just laid out.
  return resumeCore(store, role, region, undefined, opts);
}

/** A store's schema and writer count as its manifest records them, checked against the opening role. */
function storeIdentity(
  m: OutputManifest,
  role: Role,
): { schema: StreamSchema; version: 1 | 2; nWriters: number } {
  if (m.schema === "earthsciio/output-manifest/v1")
    return { schema: schemaFromManifestV1(m as OutputManifestV1), version: 1, nWriters: 1 };
  const v2 = m as OutputManifestV2;
  const schema = schemaFromManifest(v2);
  const nWriters = v2.n_writers;
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
  return { schema, version: 2, nWriters };
}

/**
 * A store keeps the manifest form it has (docs/manifest-pages.md): an explicit `manifestPages` that
 * contradicts it is refused rather than ignored or acted on, since changing form is an operation of its
 * own (`zstream manifest pages on|off`).
 */
function storeForm(store: Store, m: OutputManifest, opts: WriterOptions): boolean {
  const paged = isPagedForm(m);
  const asked = manifestPagesOption(opts);
  if (asked !== undefined && asked !== paged)
    throw new ProtocolError(
      `${store.url} keeps its manifest ${paged ? "paged" : "unpaged"} (${m.schema}); manifestPages: ${asked} asks for the other form: leave the option out, or change the store's form first with zstream manifest pages ${asked ? "on" : "off"}`,
    );
  return paged;
}

/** A handle on a committed store, from the manifest read at `tag` (no I/O). */
function reopen(
  store: Store,
  m: OutputManifest,
  tag: string | null,
  role: Role,
  region: Region,
  opts: WriterOptions,
  objects: FencedObjects,
): WriterCore {
  const { schema, version, nWriters } = storeIdentity(m, role);
  const w = new WriterCore({
    store,
    schema,
    fingerprint: schemaFingerprint(schema),
    role,
    region,
    version,
    manifestPages: storeForm(store, m, opts),
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
  w.view.manifest = m;
  w.commits.adoptRead(m, tag);
  return w;
}
