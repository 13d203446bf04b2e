import { ProtocolError } from "@zarr-stream/spec";
import { storeAgeS } from "./claim-observer.js";
import type { Clock, RunRecordDoc } from "./documents.js";
import { eventId, runRecordKey, segmentKey } from "./layout.js";
import { envelopeJson, utf8 } from "./pyjson.js";
import { orphanRunRecord, type RunDocContext, runPayload, slotOf } from "./run-documents.js";
import { sealTornSegment } from "./torn-tail.js";
import { type RunView, readRuns } from "./wal-reader.js";
import { makeEvent, runRecordDocument } from "./wal-writer.js";

/** Seconds since the store last saw the run write (run.json or its newest segment), when it can say. */
async function runStoreAgeS(ctx: RunDocContext, view: RunView): Promise<number | undefined> {
  const keys = [runRecordKey(view.runId), ...view.segments.map((p) => segmentKey(view.runId, p))];
  const ages = (await Promise.all(keys.map((k) => storeAgeS(ctx.store, k)))).filter(
    (a): a is number => a !== undefined,
  );
  return ages.length > 0 ? Math.min(...ages) : undefined;
}

/**
 * Abandons a run another process wrote: a new segment (max+1, create-only) holding run_abandoned, then
 * run.json. A fresh run needs force; an orphan gets a run.json so it stops counting as live.
 */
export async function abandonStoredRun(
  ctx: RunDocContext & { clock: Clock },
  runId: string,
  reason: string,
  force: boolean,
): Promise<string> {
  const { store, clock } = ctx;
  const view = (await readRuns(store, clock)).find((r) => r.runId === runId);
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
    events: view.events.length + 1,
    updated_at: now,
    error: reason,
    completed_at: now,
  };
  await store.put(runRecordKey(runId), utf8(envelopeJson(runRecordDocument(record))));
  return id;
}
