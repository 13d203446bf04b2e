import { createHash } from "node:crypto";
import { type JournalFormat, type JournalRowConfig, PublishConflict } from "@zarr-stream/spec";
import type { Store } from "@zarr-stream/store";
import { composeJournalAsync } from "./compose.js";
import { assertHeaderPrefix, mergeCsvHeaders, parseCsvHeaderLine } from "./csv-header.js";
import { JournalError } from "./errors.js";
import { assertCsvLineSafe } from "./part-check.js";
import type { JournalRegistry, RowPatch } from "./registry.js";
import { DEFAULT_MAX_PARTS, exactId, type JournalRow, outputIdentifierOf } from "./row.js";
import { firstLineOf, storePartSource } from "./sources.js";

/** Points of a publish a crash test can stop at. */
export type PublishStep = "planned" | "blob-written" | "registered";

export interface PublishOptions {
  registry: JournalRegistry;
  store: Store;
  /** The new part's bytes (CSV with its own header line, or NDJSON). */
  part: Uint8Array;
  /** Required for the first row; later rows must match the journal's format. */
  format?: JournalFormat;
  /** Compaction threshold; default: the current row's, else 64. 0 disables compaction. */
  maxParts?: number;
  /**
   * The run's own index. A retry after a crash passes the index it published under, so it gets the
   * earlier row back instead of appending its data twice. Default: the next index.
   */
  partIndex?: number;
  /** Watermark this state covers; default: the previous row's. */
  watermark?: number | bigint | null;
  /** Store prefix of part blobs (default "journal/"). */
  keyPrefix?: string;
  now?: () => Date;
  onStep?: (step: PublishStep) => void;
  /**
   * A caller with no run identity of its own (the CLI): a part whose bytes equal the current row's own
   * part is a retry of that row, not a new part. Off for callers that publish identical parts on purpose.
   */
  retryByContent?: boolean;
  /** How many times a publish whose head moved is planned again before PublishConflict (default 100). */
  maxAttempts?: number;
}

export interface PublishResult {
  row: JournalRow;
  /** False when the row was already registered (a retry). */
  created: boolean;
  /** The row's blob was composed from every live part (artefactParts = [itself]). */
  compacted: boolean;
  /** A retry with different bytes overwrote the blob and patched the row. */
  rewritten: boolean;
}

function md5Hex(bytes: Uint8Array): string {
  return createHash("md5").update(bytes).digest("hex");
}

function checkOptions(o: PublishOptions): void {
  if (!(o.part instanceof Uint8Array))
    throw new JournalError("publishPart: part must be a Uint8Array", "argument");
  if (o.format !== undefined && o.format !== "csv" && o.format !== "ndjson") {
    throw new JournalError(
      `publishPart: format must be "csv" or "ndjson", got ${JSON.stringify(o.format)}`,
      "format",
    );
  }
  for (const [name, v] of [
    ["maxParts", o.maxParts],
    ["partIndex", o.partIndex],
  ] as const) {
    if (v !== undefined && (!Number.isSafeInteger(v) || v < 0)) {
      throw new JournalError(`publishPart: ${name} must be a non-negative integer, got ${v}`, "argument");
    }
  }
  if (o.watermark != null && typeof o.watermark !== "bigint" && !Number.isFinite(o.watermark)) {
    throw new JournalError(
      `publishPart: watermark must be a finite number or null, got ${o.watermark}`,
      "argument",
    );
  }
  const prefix = o.keyPrefix ?? "journal/";
  if (prefix !== "" && !prefix.endsWith("/")) {
    throw new JournalError(
      `publishPart: keyPrefix ${JSON.stringify(prefix)} must be empty or end with "/"`,
      "argument",
    );
  }
}

interface Target {
  index: number;
  base: JournalRow | undefined;
  existing: JournalRow | undefined;
}

/** Which index this run publishes under and the row it builds on. */
async function resolveTarget(registry: JournalRegistry, partIndex: number | undefined): Promise<Target> {
  const current = await registry.current();
  const next = current ? current.config.partIndex + 1 : 0;
  if (partIndex === undefined || partIndex === next)
    return { index: next, base: current, existing: undefined };
  const existing = await registry.find(outputIdentifierOf(partIndex));
  if (!existing) {
    throw new JournalError(
      `publishPart: partIndex ${partIndex} is neither registered nor the next index ${next}`,
      "part-index",
    );
  }
  const base = partIndex === 0 ? undefined : await registry.find(outputIdentifierOf(partIndex - 1));
  if (partIndex > 0 && !base) {
    throw new JournalError(
      `publishPart: cannot redo ${existing.config.outputIdentifier}: its base row was pruned`,
      "part-index",
    );
  }
  return { index: partIndex, base, existing };
}

interface Plan {
  config: JournalRowConfig;
  blob: Uint8Array;
  compacted: boolean;
}

async function planRow(o: PublishOptions, t: Target, createdAtUtc: string): Promise<Plan> {
  const base = t.base?.config;
  const format = o.format ?? base?.journalFormat ?? t.existing?.config.journalFormat;
  if (format === undefined) throw new JournalError("publishPart: the first part needs a format", "format");
  if (base && base.journalFormat !== format) {
    throw new JournalError(`publishPart: journal is ${base.journalFormat}, part is ${format}`, "format");
  }
  const where = outputIdentifierOf(t.index);
  let csvHeaders: string[] = [];
  if (format === "csv") {
    assertCsvLineSafe(o.part, where);
    const header = parseCsvHeaderLine(Buffer.from(firstLineOf(o.part).line).toString("utf8"));
    csvHeaders = mergeCsvHeaders(base?.csvHeaders ?? [], header);
    assertHeaderPrefix(header, csvHeaders, where);
  }
  const maxParts = o.maxParts ?? base?.maxParts ?? DEFAULT_MAX_PARTS;
  const compacted = base !== undefined && maxParts > 0 && base.partCount >= maxParts;
  const ext = format === "csv" ? "csv" : "ndjson";
  const partKey = `${o.keyPrefix ?? "journal/"}${where}.${ext}`;
  const blob = compacted
    ? await composeJournalAsync([...base.artefactParts.map((k) => storePartSource(o.store, k)), o.part], {
        format,
        csvHeaders,
      })
    : o.part;
  const artefactParts = compacted || !base ? [partKey] : [...base.artefactParts, partKey];
  const config: JournalRowConfig = {
    outputIdentifier: where,
    journalFormat: format,
    partIndex: t.index,
    partKey,
    partSize: blob.length,
    partMd5: md5Hex(blob),
    csvHeaders,
    csvHeaderCount: csvHeaders.length,
    artefactParts,
    partCount: artefactParts.length,
    maxParts,
    journalCompactionCount: (base?.journalCompactionCount ?? 0) + (compacted ? 1 : 0),
    watermark:
      o.watermark != null ? exactId(o.watermark) : o.watermark === null ? null : (base?.watermark ?? null),
    artefactState: "live",
    retentionEligible: false,
    supersededAtUtc: null,
    supersededReason: null,
    supersededByOutputId: null,
    createdAtUtc,
  };
  return { config, blob, compacted };
}

/** Compaction supersedes every row still live before the new one. */
async function supersessionPatches(registry: JournalRegistry, by: string, at: string): Promise<RowPatch[]> {
  return (await registry.rows())
    .filter((r) => r.config.outputIdentifier !== by && r.config.artefactState === "live")
    .map((r) => ({
      outputIdentifier: r.config.outputIdentifier,
      patch: {
        artefactState: "superseded",
        retentionEligible: true,
        supersededAtUtc: at,
        supersededReason: "journal-compaction",
        supersededByOutputId: by,
      },
    }));
}

/**
 * Where the new row's blob goes: its plain key when free or already holding these bytes (a crashed
 * attempt's orphan), else a key named by its md5, so a concurrent publisher planning the same index
 * never overwrites the blob a registered row points at.
 */
async function placeBlob(store: Store, plan: Plan): Promise<JournalRowConfig> {
  const { partKey, partMd5 } = plan.config;
  if (await store.putIfAbsent(partKey, plan.blob)) return plan.config;
  const there = await store.get(partKey);
  if (there !== undefined && md5Hex(there) === partMd5) return plan.config;
  const dot = partKey.lastIndexOf(".");
  const unique = `${partKey.slice(0, dot)}-${partMd5.slice(0, 16)}${partKey.slice(dot)}`;
  await store.put(unique, plan.blob);
  const artefactParts = [...plan.config.artefactParts.slice(0, -1), unique];
  return { ...plan.config, partKey: unique, artefactParts };
}

function conflictDelay(attempt: number): Promise<void> {
  const ms = Math.min(200, 2 ** Math.min(attempt, 7)) * (0.5 + Math.random());
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * Seed 004 producer: publishes ONE row whose blob is the new part and whose configuration is the
 * cumulative head, so a crash at any point leaves the newest row a complete state. The blob is written
 * before the row is registered (an orphan blob is harmless; a row without its blob is not), and a
 * compaction registers the compacted row and supersedes every earlier row in one transaction.
 *
 * Registration is a compare-and-swap on the head row: a publisher whose head moved meanwhile plans again
 * on the new head (up to `maxAttempts` times, then PublishConflict). A retry is idempotent: with its
 * partIndex it gets that row back; with retryByContent, a part equal to the current row's own is that row.
 */
export async function publishPart(o: PublishOptions): Promise<PublishResult> {
  checkOptions(o);
  const attempts = o.maxAttempts ?? 100;
  for (let attempt = 1; ; attempt++) {
    try {
      return await publishOnce(o);
    } catch (e) {
      if (!(e instanceof PublishConflict) || attempt >= attempts) throw e;
      await conflictDelay(attempt);
    }
  }
}

async function publishOnce(o: PublishOptions): Promise<PublishResult> {
  const now = (o.now ?? (() => new Date()))().toISOString();
  const target = await resolveTarget(o.registry, o.partIndex);
  const existing = target.existing;
  if (
    o.retryByContent &&
    !existing &&
    o.partIndex === undefined &&
    target.base?.config.partMd5 === md5Hex(o.part)
  ) {
    // The current row's own blob is exactly this part: a retry of a publish that already landed.
    return { row: target.base, created: false, compacted: false, rewritten: false };
  }
  const plan = await planRow(o, target, existing?.config.createdAtUtc ?? now);
  o.onStep?.("planned");
  if (existing && existing.config.partMd5 === plan.config.partMd5) {
    // Same bytes as registered; the blob may still hold a crashed retry's different bytes, so check it.
    const stored = await o.store.get(existing.config.partKey);
    if (stored !== undefined && md5Hex(stored) === plan.config.partMd5) {
      return { row: existing, created: false, compacted: plan.compacted, rewritten: false };
    }
    await o.store.put(existing.config.partKey, plan.blob);
    return { row: existing, created: false, compacted: plan.compacted, rewritten: true };
  }
  const current = await o.registry.current();
  if (existing && current?.id !== existing.id) {
    throw new JournalError(
      `publishPart: ${existing.config.outputIdentifier} has different bytes but is no longer the current output`,
      "part-index",
    );
  }
  if (existing) {
    await o.store.put(plan.config.partKey, plan.blob);
    o.onStep?.("blob-written");
    const { outputIdentifier: _id, ...patch } = plan.config;
    await o.registry.patch([{ outputIdentifier: existing.config.outputIdentifier, patch }]);
    o.onStep?.("registered");
    const row = { id: existing.id, config: plan.config };
    return { row, created: false, compacted: plan.compacted, rewritten: true };
  }
  const config = await placeBlob(o.store, plan);
  o.onStep?.("blob-written");
  const patches = plan.compacted ? await supersessionPatches(o.registry, config.outputIdentifier, now) : [];
  const { row, created } = await o.registry.register(config, patches, target.base?.id ?? null);
  if (!created && row.config.partMd5 !== config.partMd5) {
    // Another publisher registered this index first with other bytes: plan again on the new head.
    throw new PublishConflict(`${config.outputIdentifier} was registered by another publisher`);
  }
  o.onStep?.("registered");
  return { row, created, compacted: plan.compacted, rewritten: false };
}
