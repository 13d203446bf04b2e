import { ProtocolError } from "@zarr-stream/spec";
import type { Store } from "@zarr-stream/store";
import { storeAgeS } from "./claim-observer.js";
import {
  type Clock,
  isObject,
  numeric,
  parseDocument,
  type RunRecordDoc,
  TERMINAL_EVENTS,
} from "./documents.js";
import { eventId, runPrefix, runRecordKey, segmentKey } from "./layout.js";
import { envelopeJson, utf8 } from "./pyjson.js";
import { orphanRunRecord, type RunDocContext, runPayload, slotOf } from "./run-documents.js";
import { sealTornSegment } from "./torn-tail.js";
import { isTerminalStatus, type RunView, readRun } from "./wal-reader.js";
import { makeEvent, runRecordDocument } from "./wal-writer.js";

/** Seconds since the store last saw the run write (run.json or its newest segment), when it can say. */
async function runStoreAgeS(ctx: RunDocContext, view: RunView): Promise<number | undefined> {
  const keys = [runRecordKey(view.runId), ...view.segments.map((p) => segmentKey(view.runId, p))];
  const ages = (await Promise.all(keys.map((k) => storeAgeS(ctx.store, k)))).filter(
    (a): a is number => a !== undefined,
  );
  return ages.length > 0 ? Math.min(...ages) : undefined;
}

/** One run as the reader sees it now, or undefined when it has no files. */
export async function readOneRun(store: Store, clock: Clock, runId: string): Promise<RunView | undefined> {
  const keys = (await store.list(runPrefix(runId))).filter(
    (k) => !k.slice(runPrefix(runId).length).includes("/"),
  );
  return keys.length === 0 ? undefined : readRun(store, runId, keys, clock());
}

/**
 * run.json as it is now, with the version to replace it on (null: absent, or a store without versions);
 * `terminal` when its status already ends the run, whatever else in it does not read.
 */
async function currentRecord(
  store: Store,
  runId: string,
): Promise<{ version: string | null; terminal: string | undefined }> {
  const key = runRecordKey(runId);
  const got = store.getVersioned
    ? await store.getVersioned(key)
    : await store.get(key).then((bytes) => (bytes === undefined ? undefined : { bytes, version: null }));
  if (got === undefined) return { version: null, terminal: undefined };
  let status: unknown;
  try {
    status = parseDocument(got.bytes, key).status;
  } catch {
    status = undefined;
  }
  return { version: got.version, terminal: isTerminalStatus(status) ? status : undefined };
}

/**
 * Abandons a run another process wrote: a new segment (max+1, create-only) holding run_abandoned, then
 * run.json. A fresh run needs force; an orphan gets a run.json so it stops counting as live. A run whose
 * run.json turned terminal meanwhile (its writer finished) is never rewritten: run.json is replaced only
 * on the version read just before the abandon segment was written.
 */
export async function abandonStoredRun(
  ctx: RunDocContext & { clock: Clock },
  runId: string,
  reason: string,
  force: boolean,
): Promise<string> {
  const { store, clock } = ctx;
  const view = await readOneRun(store, clock, runId);
  if (!view) throw new ProtocolError(`run ${runId} does not exist`);
  if (view.state !== "live" && view.state !== "orphaned")
    throw new ProtocolError(`run ${runId} is already ${view.state}`);
  if (!view.stale && !force) {
    const age = view.updatedAt === undefined ? "never" : `${(clock() - view.updatedAt).toFixed(1)} s ago`;
    throw new ProtocolError(
      `run ${runId} is not stale (last heartbeat ${age}, threshold ${view.staleThresholdS} s); use force`,
    );
  }
  const written = force ? undefined : await runStoreAgeS(ctx, view);
  if (written !== undefined && written <= view.staleThresholdS) {
    // Its own timestamps say stale, but the store saw it write within the threshold: a skewed clock.
    throw new ProtocolError(
      `run ${runId} is not stale by the store's time (last written ${written.toFixed(1)} s ago, threshold ${view.staleThresholdS} s); use force`,
    );
  }
  // Sealed first, so the run reads the same to peers that do not accept a torn line before terminal events.
  if (view.tornTail) await sealTornSegment(store, view.tornTail.file);
  const before = await currentRecord(store, runId);
  if (before.terminal) throw new ProtocolError(`run ${runId} is already ${before.terminal}`);
  const now = clock();
  const part = view.segments.length > 0 ? view.segments.at(-1)! + 1 : 0;
  const id = eventId(runId, part, 0);
  const base = view.record ?? orphanRunRecord(ctx, view, now);
  const event = makeEvent(
    ctx.product,
    runId,
    id,
    "run_abandoned",
    now,
    runPayload(ctx, runId, "abandoned", clock(), { error: reason, ...slotOf(base) }),
  );
  if (!(await store.putIfAbsent(segmentKey(runId, part), utf8(`${envelopeJson(event)}\n`)))) {
    throw new ProtocolError(`run ${runId} wrote segment ${part} while being abandoned: it is alive`);
  }
  const record: RunRecordDoc = {
    ...base,
    status: "abandoned",
    parts: view.segments.length + 1,
    // A corrupt run's events could not be counted: its run.json's count goes on.
    events: (view.corrupt ? numeric(base.events) : view.events.length) + 1,
    updated_at: now,
    error: reason,
    completed_at: now,
  };
  const bytes = utf8(envelopeJson(runRecordDocument(record)));
  if (!store.putIfVersion) {
    await store.put(runRecordKey(runId), bytes);
    return id;
  }
  if ((await store.putIfVersion(runRecordKey(runId), bytes, before.version)) !== undefined) return id;
  const after = await currentRecord(store, runId);
  if (after.terminal) {
    // Its writer ended it between our check and now: its run.json decides, for us as for the reference.
    throw new ProtocolError(`run ${runId} became ${after.terminal} while being abandoned; left as it is`);
  }
  // A heartbeat landed: the run_abandoned segment is written, so run.json must say so too.
  await store.put(runRecordKey(runId), bytes);
  return id;
}

/**
 * Writes the run.json a writer killed after its terminal segment did not write: the status its WAL's
 * terminal event names, so the reference, which takes run state from run.json alone, sees the run ended
 * as we do (it would otherwise abandon a run whose data is complete). Only a run.json that still does not
 * end the run is replaced, on the version read. Returns false when there was nothing to repair.
 */
export async function repairRunRecord(
  ctx: RunDocContext & { clock: Clock },
  view: RunView,
): Promise<boolean> {
  const { store, clock } = ctx;
  if (!view.recordLags || view.completedAt === undefined) return false;
  const before = await currentRecord(store, view.runId);
  if (before.terminal) return false;
  const terminal = [...view.events].reverse().find((e) => TERMINAL_EVENTS.has(e.event_type));
  const run = terminal?.record.run;
  const error = isObject(run) && typeof run.error === "string" ? run.error : undefined;
  const base = view.record ?? orphanRunRecord(ctx, view, clock());
  const record: RunRecordDoc = {
    ...base,
    status: view.state,
    parts: view.segments.length,
    events: view.events.length,
    updated_at: view.completedAt,
    completed_at: view.completedAt,
  };
  if (error !== undefined) record.error = error;
  const bytes = utf8(envelopeJson(runRecordDocument(record)));
  if (!store.putIfVersion) {
    await store.put(runRecordKey(view.runId), bytes);
    return true;
  }
  return (await store.putIfVersion(runRecordKey(view.runId), bytes, before.version)) !== undefined;
}
