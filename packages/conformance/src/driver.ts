import {
  type CommitToken,
  type ConformanceCase,
  type CorpusOp,
  type Region,
  type Role,
  SchemaError,
  ZarrStreamError,
} from "@zarr-stream/spec";
import { type Store, snapshotStore } from "@zarr-stream/store";
import { type WriterOptions, ZarrStreamWriter } from "@zarr-stream/writer";
import { fromHex } from "./bytes.js";
import { indexedTimes, roleOf, streamSchemaOf } from "./corpus.js";
import { dumpStore } from "./dump.js";
import { ConformanceFailure } from "./errors.js";
import { generated, recordArraysFor } from "./generate.js";

interface Handle {
  writer: ZarrStreamWriter;
  /** The region as the op named it: its keys are the writer's region dims. */
  region: Region;
  role: Role;
}

interface CaseState {
  store: Store;
  handles: Map<string, Handle>;
  tokens: Map<string, CommitToken>;
}

export interface RunCaseOptions {
  /** Writer options for create/join/resume (tests pin the clock). */
  writer?: WriterOptions;
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
  return h;
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
      const writer =
        op.op === "create"
          ? await ZarrStreamWriter.create(state.store, streamSchemaOf(schema), role, region, opts.writer)
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
      await h.writer.writeRecord(
        op.t,
        recordArraysFor(schema, op.r, h.region, h.role.kind !== "contributor", op.vars),
      );
      return;
    }
    case "write_record_at": {
      const h = handleOf(state, op);
      const t = op.t ?? indexedTimes(schema)?.[op.index] ?? Number.NaN;
      await h.writer.writeRecordAt(
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
      await h.writer.writeStatic(op.name, generated(schema, s, 0, h.region));
      return;
    }
    case "write_blob":
      await handleOf(state, op).writer.writeBlob(op.scope, op.key, fromHex(op.hex));
      return;
    case "flush": {
      const token = await handleOf(state, op).writer.flush();
      if (op.token !== undefined) state.tokens.set(op.token, token);
      return;
    }
    case "commit":
      await handleOf(state, op).writer.commit(tokensOf(state, op.tokens));
      return;
    case "invalidate":
      await handleOf(state, op).writer.invalidate(op.indices);
      return;
    case "invalidate_statics":
      await handleOf(state, op).writer.invalidateStatics(op.names);
      return;
    case "close":
      await handleOf(state, op).writer.close(tokensOf(state, op.tokens ?? []));
      return;
    case "drop":
      // A crash: the handle is forgotten without close, its unflushed buffers lost.
      handleOf(state, op);
      state.handles.delete(op.writer);
      return;
  }
}

/**
 * Runs one case's ops in order against `store` (fresh: the case creates it). An op without expect_error
 * must succeed. An op with expect_error must fail with that error and leave the committed state as a
 * reader sees it unchanged; a refused create/join/resume must leave every byte of the store unchanged
 * (seed §4: alignment is checked before any I/O). Throws ConformanceFailure naming the case and op.
 */
export async function runCase(c: ConformanceCase, store: Store, opts: RunCaseOptions = {}): Promise<void> {
  const state: CaseState = { store, handles: new Map(), tokens: new Map() };
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
