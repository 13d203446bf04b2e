import {
  type CommitToken,
  type ConformanceCase,
  type CorpusOp,
  type Region,
  type Role,
  SchemaError,
  ZarrStreamError,
} from "@zarr-stream/spec";
import { FsStore, type Store, snapshotStore } from "@zarr-stream/store";
import { type WriterOptions, ZarrStreamWriter } from "@zarr-stream/writer";
import { fromHex } from "./bytes.js";
import { indexedTimes, roleOf, streamSchemaOf } from "./corpus.js";
import { dumpStore } from "./dump.js";
import { ConformanceFailure, NotRunnable } from "./errors.js";
import { generated, recordArraysFor } from "./generate.js";
import type { ExternalContributor, ExternalOwner } from "./python-writers.js";

interface Handle {
  /** Ours, or (external) a contributor of another binding, or (owner) an owner of another binding. */
  writer?: ZarrStreamWriter;
  external?: ExternalContributor;
  owner?: ExternalOwner;
  /** The region as the op named it: its keys are the writer's region dims. */
  region: Region;
  role: Role;
}

interface CaseState {
  store: Store;
  handles: Map<string, Handle>;
  tokens: Map<string, CommitToken>;
  /** Every external writer started, ended when the case ends. */
  externals: { dispose(): Promise<void> }[];
}

export interface RunCaseOptions {
  /** Writer options for create/join/resume (tests pin the clock). */
  writer?: WriterOptions;
  /**
   * Handles whose join starts a contributor of another binding (e.g. Python) on the store's directory
   * instead of ours; every op of theirs goes to it, and their tokens to the owner.
   */
  external?: { handles: string[]; start: (storeRoot: string) => ExternalContributor };
  /**
   * Handles whose create starts an owner of another binding (e.g. Python) on the store's directory; every
   * op of theirs goes to it, with the tokens named in commit and close (ours among them, as JSON).
   */
  externalOwner?: { handles: string[]; start: (storeRoot: string) => ExternalOwner };
  /** Called with every token a flush returns (e.g. to validate the wire documents elsewhere). */
  onToken?: (token: CommitToken, writer: string) => void;
  /** Called with the error of every op refused as its expect_error required (to compare refusals). */
  onRefusal?: (error: Error, opIndex: number) => void;
}

/** The committed state as a reader sees it, for checking that a refused op changed nothing. */
async function committedState(store: Store): Promise<string> {
  if ((await store.size("output_manifest.json")) === undefined) return "<no manifest>";
  return JSON.stringify(await dumpStore(store, "state"));
}

async function storeBytes(store: Store): Promise<string> {
  const snap = await snapshotStore(store);
  return JSON.stringify([...snap].map(([k, v]) => [k, Buffer.from(v).toString("base64")]));
}

function matchesExpected(err: unknown, expected: string): boolean {
  if (expected === "Error") return err instanceof ZarrStreamError;
  return err instanceof Error && err.name === expected;
}

function handleOf(state: CaseState, op: CorpusOp): Handle {
  const h = state.handles.get(op.writer);
  if (!h) throw new SchemaError(`op ${op.op}: no open writer named ${JSON.stringify(op.writer)}`, "/writer");
  if (h.external && !EXTERNAL_OPS.has(op.op))
    throw new NotRunnable(
      `op ${op.op} of ${op.writer}: not supported by the ${h.external.binding} contributor`,
    );
  return h;
}

/** Ops an open contributor handle of another binding takes: every op of a contributor in the corpus. */
const EXTERNAL_OPS = new Set([
  "write_record",
  "write_record_at",
  "write_static",
  "write_blob",
  "flush",
  "close",
  "drop",
]);

/** The store directory an external writer opens. */
function storeRootOf(state: CaseState): string {
  if (!(state.store instanceof FsStore))
    throw new NotRunnable("an external writer needs a filesystem store (FsStore)");
  return state.store.root;
}

async function createExternalOwner(
  c: ConformanceCase,
  state: CaseState,
  op: CorpusOp & { op: "create" | "join" | "resume" },
  role: Role,
  region: Region,
  start: (storeRoot: string) => ExternalOwner,
): Promise<void> {
  // Resume, close-and-reopen and the Single role (a v1 store) are not part of an external owner here, nor
  // the paged manifest form (zarr-stream's extension): a case needing them is not run with one.
  if (op.op !== "create" || role.kind !== "owner")
    throw new NotRunnable(`op ${op.op} of ${op.writer}: an external owner only creates, as owner{n}`);
  if (op.manifest_pages === true)
    throw new NotRunnable(`op create of ${op.writer}: an external owner writes the seed's manifest form`);
  const owner = start(storeRootOf(state));
  state.externals.push(owner);
  await owner.create(c.schema, role.nWriters, region);
  state.handles.set(op.writer, { owner, region, role });
}

async function joinExternal(
  c: ConformanceCase,
  state: CaseState,
  op: CorpusOp & { op: "create" | "join" | "resume" },
  role: Role,
  region: Region,
  start: (storeRoot: string) => ExternalContributor,
): Promise<void> {
  // A contributor's resume is its join (seed §5.4 and §7: it reads the manifest and reloads the open time
  // shard either way); an external writer's join takes its lease anew, as a resume does (or, in a binding
  // without leases, takes none), so a new process joining is its resume.
  if (op.op === "create" || role.kind !== "contributor")
    throw new NotRunnable(
      `op ${op.op} of ${op.writer}: an external writer only joins (or resumes) as a contributor`,
    );
  const external = start(storeRootOf(state));
  state.externals.push(external);
  const seeds = Object.fromEntries([...c.schema.vars, ...c.schema.statics].map((v) => [v.name, v.seed]));
  await external.join(role.id, region, seeds);
  state.handles.set(op.writer, { external, region, role });
}

function ours(h: Handle): ZarrStreamWriter {
  if (!h.writer) throw new NotRunnable(`not supported by the ${(h.external ?? h.owner)?.binding} writer`);
  return h.writer;
}

function tokensOf(state: CaseState, names: string[]): CommitToken[] {
  return names.map((n) => {
    const t = state.tokens.get(n);
    if (!t)
      throw new SchemaError(
        `no token named ${JSON.stringify(n)} (flush with "token": ${JSON.stringify(n)} first)`,
        "/tokens",
      );
    return t;
  });
}

async function execute(
  c: ConformanceCase,
  state: CaseState,
  op: CorpusOp,
  opts: RunCaseOptions,
): Promise<void> {
  const schema = c.schema;
  switch (op.op) {
    case "create":
    case "join":
    case "resume": {
      const role = roleOf(op.role);
      const region = op.region ?? {};
      if (opts.external?.handles.includes(op.writer)) {
        await joinExternal(c, state, op, role, region, opts.external.start);
        return;
      }
      if (opts.externalOwner?.handles.includes(op.writer)) {
        await createExternalOwner(c, state, op, role, region, opts.externalOwner.start);
        return;
      }
      const writer =
        op.op === "create"
          ? await ZarrStreamWriter.create(
              state.store,
              streamSchemaOf(schema),
              role,
              region,
              op.manifest_pages === undefined
                ? opts.writer
                : { ...opts.writer, manifestPages: op.manifest_pages },
            )
          : op.op === "join"
            ? await ZarrStreamWriter.join(state.store, role, region, opts.writer)
            : await ZarrStreamWriter.resume(
                state.store,
                role,
                region,
                (op as { at?: number | null }).at ?? undefined,
                opts.writer,
              );
      state.handles.set(op.writer, { writer, region, role });
      return;
    }
    case "write_record": {
      const h = handleOf(state, op);
      const external = h.external ?? h.owner;
      if (external) {
        await external.writeRecord(op.t, op.r, op.vars);
        return;
      }
      await ours(h).writeRecord(
        op.t,
        recordArraysFor(schema, op.r, h.region, h.role.kind !== "contributor", op.vars),
      );
      return;
    }
    case "write_record_at": {
      const h = handleOf(state, op);
      const t = op.t ?? indexedTimes(schema)?.[op.index] ?? Number.NaN;
      const external = h.external ?? h.owner;
      if (external) {
        await external.writeRecordAt(op.index, t, op.r, op.vars);
        return;
      }
      await ours(h).writeRecordAt(
        op.index,
        t,
        recordArraysFor(schema, op.r, h.region, h.role.kind !== "contributor", op.vars),
      );
      return;
    }
    case "write_static": {
      const h = handleOf(state, op);
      const s = schema.statics.find((x) => x.name === op.name);
      if (!s) throw new SchemaError(`write_static: unknown static ${JSON.stringify(op.name)}`, "/name");
      const external = h.external ?? h.owner;
      if (external) {
        await external.writeStatic(op.name);
        return;
      }
      await ours(h).writeStatic(op.name, generated(schema, s, 0, h.region));
      return;
    }
    case "write_blob": {
      const h = handleOf(state, op);
      await (h.external ?? h.owner ?? ours(h)).writeBlob(op.scope, op.key, fromHex(op.hex));
      return;
    }
    case "flush": {
      const h = handleOf(state, op);
      const token = await (h.external ?? h.owner ?? ours(h)).flush();
      opts.onToken?.(token, op.writer);
      if (op.token !== undefined) state.tokens.set(op.token, token);
      return;
    }
    case "commit": {
      const h = handleOf(state, op);
      await (h.owner ?? ours(h)).commit(tokensOf(state, op.tokens));
      return;
    }
    case "invalidate": {
      const h = handleOf(state, op);
      await (h.owner ?? ours(h)).invalidate(op.indices);
      return;
    }
    case "invalidate_statics": {
      const h = handleOf(state, op);
      await (h.owner ?? ours(h)).invalidateStatics(op.names);
      return;
    }
    case "close": {
      const h = handleOf(state, op);
      if (h.external) await h.external.close();
      else await (h.owner ?? ours(h)).close(tokensOf(state, op.tokens ?? []));
      return;
    }
    case "drop": {
      // A crash: the handle is forgotten without close, its unflushed buffers lost.
      const h = handleOf(state, op);
      await (h.external ?? h.owner)?.dispose();
      state.handles.delete(op.writer);
      return;
    }
  }
}

/**
 * Runs one case's ops in order against `store` (fresh: the case creates it). An op without expect_error
 * must succeed. An op with expect_error must fail with that error and leave the committed state as a
 * reader sees it unchanged; a refused create/join/resume must leave every byte of the store unchanged
 * (seed §4: alignment is checked before any I/O). Throws ConformanceFailure naming the case and op.
 */
export async function runCase(c: ConformanceCase, store: Store, opts: RunCaseOptions = {}): Promise<void> {
  const state: CaseState = { store, handles: new Map(), tokens: new Map(), externals: [] };
  try {
    await runOps(c, state, opts);
  } finally {
    await Promise.all(state.externals.map((e) => e.dispose()));
  }
}

async function runOps(c: ConformanceCase, state: CaseState, opts: RunCaseOptions): Promise<void> {
  const store = state.store;
  for (const [i, op] of c.ops.entries()) {
    const where = `case ${c.name}: op ${i} (${op.op} ${op.writer})`;
    if (op.expect_error === undefined) {
      try {
        await execute(c, state, op, opts);
      } catch (err) {
        const e = err as Error;
        throw new ConformanceFailure(`${where} failed: ${e.name}: ${e.message}`, c.name, i);
      }
      continue;
    }
    const opens = op.op === "create" || op.op === "join" || op.op === "resume";
    const before = opens ? await storeBytes(store) : await committedState(store);
    let error: unknown;
    try {
      await execute(c, state, op, opts);
    } catch (err) {
      error = err;
    }
    if (error === undefined)
      throw new ConformanceFailure(`${where} succeeded, expected ${op.expect_error}`, c.name, i);
    if (!matchesExpected(error, op.expect_error)) {
      const e = error as Error;
      throw new ConformanceFailure(
        `${where} failed with ${e.name}: ${e.message}; expected ${op.expect_error}`,
        c.name,
        i,
      );
    }
    opts.onRefusal?.(error as Error, i);
    const after = opens ? await storeBytes(store) : await committedState(store);
    if (after !== before) {
      throw new ConformanceFailure(
        `${where} failed as expected but changed the ${opens ? "store" : "committed state"}`,
        c.name,
        i,
      );
    }
  }
}
