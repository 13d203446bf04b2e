import { type JournalFormat, type JournalRowConfig, PublishConflict } from "@zarr-stream/spec";
import type { Store } from "@zarr-stream/store";
import { type BlobDigest, digestOf, md5Hex, writeBlob } from "./blob-io.js";
import { composeJournalBlocks } from "./compose.js";
import { assertHeaderPrefix, mergeCsvHeaders } from "./csv-header.js";
import { DuplicatePublish, JournalError } from "./errors.js";
import { checkMergedHeader, type StoredPart, storedPart } from "./part-rules.js";
import type { JournalRegistry, RowPatch } from "./registry.js";
import {
  DEFAULT_MAX_PARTS,
  exactId,
  isCompactionRow,
  type JournalRow,
  outputIdentifierOf,
  partIdentity,
} from "./row.js";
import { type PartSource, storePartSource } from "./sources.js";

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
  /** Called at each step and awaited: crash tests stop the process there, race tests hold it. */
  onStep?: (step: PublishStep) => void | Promise<void>;
  /**
   * A caller with no run identity of its own (the CLI): a part whose stored bytes equal the part the
   * current row's run published (its deltaMd5, compaction rows included) is a retry of that row, not a
   * new part. A concurrent publisher of equal bytes that wins the race makes this call a
   * DuplicatePublish. Off for callers that publish identical parts on purpose.
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
  /** A retry overwrote the row's blob (different bytes, or a blob a crashed retry left wrong). */
  rewritten: boolean;
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

/**
 * Which index this run publishes under and the row it builds on. A retry under a registered index builds
 * on the row before it, when that row is still there (planning needs it; returning the row does not).
 */
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
  return { index: partIndex, base, existing };
}

interface Plan {
  /** The row without its blob's digests, which a compaction knows only once it has written the blob. */
  draft: Omit<JournalRowConfig, "partMd5" | "partSize">;
  /** The blob: the stored part, or a compaction's composite, composed again each time it is read. */
  body: PartSource;
  compacted: boolean;
}

function withBlob(plan: Plan, partKey: string, blob: BlobDigest): JournalRowConfig {
  const { draft } = plan;
  const artefactParts =
    partKey === draft.partKey ? draft.artefactParts : [...draft.artefactParts.slice(0, -1), partKey];
  return { ...draft, partKey, artefactParts, partMd5: blob.md5, partSize: blob.size };
}

function journalFormat(o: PublishOptions, t: Target): JournalFormat {
  const known = (t.base ?? t.existing)?.config.journalFormat;
  const format = o.format ?? known;
  if (format === undefined) throw new JournalError("publishPart: the first part needs a format", "format");
  if (known !== undefined && known !== format) {
    throw new JournalError(`publishPart: journal is ${known}, part is ${format}`, "format");
  }
  return format;
}

function planRow(
  o: PublishOptions,
  t: Target,
  format: JournalFormat,
  part: StoredPart,
  maxParts: number,
  createdAtUtc: string,
): Plan {
  const base = t.base?.config;
  const where = outputIdentifierOf(t.index);
  let csvHeaders: string[] = [];
  if (format === "csv") {
    csvHeaders = mergeCsvHeaders(base?.csvHeaders ?? [], part.header);
    assertHeaderPrefix(part.header, csvHeaders, where);
    checkMergedHeader(csvHeaders, where);
  }
  const compacted = base !== undefined && maxParts > 0 && base.partCount >= maxParts;
  const ext = format === "csv" ? "csv" : "ndjson";
  const partKey = `${o.keyPrefix ?? "journal/"}${where}.${ext}`;
  const store = o.store;
  // A compaction's composite is streamed into the store (composeJournalBlocks), never held whole; its
  // reads and blocks are lent, since every consumer of a body copies or writes a chunk before the next.
  const body: PartSource = compacted
    ? () =>
        composeJournalBlocks(
          [
            ...base.artefactParts.map((k) => storePartSource(store, k, undefined, { lend: true })),
            part.bytes,
          ],
          { format, csvHeaders, reuseBuffers: true },
        )
    : part.bytes;
  const artefactParts = compacted || !base ? [partKey] : [...base.artefactParts, partKey];
  const draft = {
    outputIdentifier: where,
    journalFormat: format,
    partIndex: t.index,
    partKey,
    deltaMd5: md5Hex(part.bytes),
    csvHeaders,
    csvHeaderCount: csvHeaders.length,
    artefactParts,
    partCount: artefactParts.length,
    maxParts,
    journalCompactionCount: (base?.journalCompactionCount ?? 0) + (compacted ? 1 : 0),
    watermark:
      o.watermark != null ? exactId(o.watermark) : o.watermark === null ? null : (base?.watermark ?? null),
    artefactState: "live" as const,
    retentionEligible: false,
    supersededAtUtc: null,
    supersededReason: null,
    supersededByOutputId: null,
    createdAtUtc,
  };
  return { draft, body, compacted };
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

/** `journal/journal-p000007.csv` → `journal/journal-p000007-<md5 prefix>.csv`. */
export function keyWithMd5(partKey: string, md5: string): string {
  const dot = partKey.lastIndexOf(".");
  return `${partKey.slice(0, dot)}-${md5.slice(0, 16)}${partKey.slice(dot)}`;
}

/**
 * Where the new row's blob goes: its plain key when free or already holding these bytes (a crashed
 * attempt's orphan), else a key named by its md5, so a concurrent publisher planning the same index
 * never overwrites the blob a registered row points at. A blob left at the plain key by a crashed
 * attempt with other bytes is an orphan that pruneJournal removes once the journal has passed its index.
 * A compaction is composed again only when the plain key is taken.
 */
async function placeBlob(store: Store, plan: Plan): Promise<JournalRowConfig> {
  const { partKey } = plan.draft;
  const written = await writeBlob(store, partKey, plan.body, true);
  if (written) return withBlob(plan, partKey, written);
  const ours = await digestOf(plan.body);
  const there = await digestOf(storePartSource(store, partKey, undefined, { lend: true }));
  if (there.md5 === ours.md5 && there.size === ours.size) return withBlob(plan, partKey, ours);
  const unique = keyWithMd5(partKey, ours.md5);
  const blob = (await writeBlob(store, unique, plan.body, false))!;
  if (blob.md5 !== ours.md5) {
    // A part under compaction was rewritten between the two compositions: plan again on what is there now.
    throw new PublishConflict(`${plan.draft.outputIdentifier}: the composite changed while it was written`);
  }
  return withBlob(plan, unique, blob);
}

function conflictDelay(attempt: number): Promise<void> {
  const ms = Math.min(200, 2 ** Math.min(attempt, 7)) * (0.5 + Math.random());
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * Seed 004 producer: publishes ONE row whose blob is the new part and whose configuration is the
 * cumulative head, so a crash at any point leaves the newest row a complete state. The part is checked
 * and put in stored form (storedPart: PartRefused otherwise) before anything is uploaded; the blob is
 * written before the row is registered (an orphan blob is harmless; a row without its blob is not), and
 * a compaction streams the composite into the store and registers the compacted row and supersedes every
 * earlier row in one transaction.
 *
 * Registration is a compare-and-swap on the head row: a publisher whose head moved meanwhile plans again
 * on the new head (up to `maxAttempts` times, then PublishConflict), so two publishers of equal bytes
 * each get their own row. A retry is recognised by the part's own identity (deltaMd5) and its index:
 * with its partIndex it gets that row back as registered, compaction decision included; with
 * retryByContent, a part equal to the current row's is that row.
 */
export async function publishPart(o: PublishOptions): Promise<PublishResult> {
  checkOptions(o);
  const attempts = o.maxAttempts ?? 100;
  // The stored form depends on the part and the journal's format only, so a re-planned attempt reuses it.
  let stored: { format: JournalFormat; part: StoredPart; identity: string } | undefined;
  const storedAs = (format: JournalFormat, where: string) => {
    if (stored?.format !== format) {
      const part = storedPart(o.part, format, where);
      stored = { format, part, identity: md5Hex(part.bytes) };
    }
    return stored;
  };
  for (let attempt = 1; ; attempt++) {
    try {
      return await publishOnce(o, attempt, storedAs);
    } catch (e) {
      if (!(e instanceof PublishConflict) || e instanceof DuplicatePublish || attempt >= attempts) throw e;
      await conflictDelay(attempt);
    }
  }
}

async function publishOnce(
  o: PublishOptions,
  attempt: number,
  storedAs: (format: JournalFormat, where: string) => { part: StoredPart; identity: string },
): Promise<PublishResult> {
  const now = (o.now ?? (() => new Date()))().toISOString();
  const target = await resolveTarget(o.registry, o.partIndex);
  const format = journalFormat(o, target);
  const { part, identity } = storedAs(format, outputIdentifierOf(target.index));
  if (target.existing) return redo(o, target, target.existing, format, part, identity);
  const base = target.base;
  if (o.retryByContent && o.partIndex === undefined && base && partIdentity(base.config) === identity) {
    if (attempt > 1) {
      // The head this call first planned on was another; equal bytes landed since, from a run that
      // cannot be told from this one.
      throw new DuplicatePublish(
        `${base.config.outputIdentifier} with the same bytes was registered by a concurrent publisher while this one planned; nothing was published`,
        base.config.outputIdentifier,
      );
    }
    // The part the current row's run published is exactly this one: a retry of a publish that landed.
    return { row: base, created: false, compacted: isCompactionRow(base.config), rewritten: false };
  }
  const maxParts = o.maxParts ?? base?.config.maxParts ?? DEFAULT_MAX_PARTS;
  const plan = planRow(o, target, format, part, maxParts, now);
  await o.onStep?.("planned");
  const config = await placeBlob(o.store, plan);
  await o.onStep?.("blob-written");
  const patches = plan.compacted ? await supersessionPatches(o.registry, config.outputIdentifier, now) : [];
  const { row, created } = await o.registry.register(config, patches, base?.id ?? null);
  if (!created) {
    // The compare-and-swap held, yet the index is taken: the registry is not what this plan read.
    throw new PublishConflict(`${config.outputIdentifier} was registered by another publisher`);
  }
  await o.onStep?.("registered");
  return { row, created, compacted: plan.compacted, rewritten: false };
}

/**
 * A retry under an index already registered. The same part (by deltaMd5) gets the row back as it was
 * registered, whatever maxParts says now, its blob repaired if a crashed retry left other bytes there;
 * other bytes rewrite the row, which must still be the current output, under the compaction decision it
 * was registered with (its own maxParts), so the rows before it stay as that decision left them.
 */
async function redo(
  o: PublishOptions,
  target: Target,
  existing: JournalRow,
  format: JournalFormat,
  part: StoredPart,
  identity: string,
): Promise<PublishResult> {
  const was = existing.config;
  const compacted = isCompactionRow(was);
  const plan = () => {
    if (was.partIndex > 0 && !target.base) {
      throw new JournalError(
        `publishPart: cannot redo ${was.outputIdentifier}: its base row was pruned`,
        "part-index",
      );
    }
    return planRow(o, target, format, part, was.maxParts, was.createdAtUtc);
  };
  if (partIdentity(was) === identity) {
    const stored = await digestOf(storePartSource(o.store, was.partKey, undefined, { lend: true })).catch(
      () => undefined,
    );
    if (stored?.md5 === was.partMd5) return { row: existing, created: false, compacted, rewritten: false };
    await o.onStep?.("planned");
    const blob = (await writeBlob(o.store, was.partKey, plan().body, false))!;
    await o.onStep?.("blob-written");
    if (blob.md5 === was.partMd5) return { row: existing, created: false, compacted, rewritten: true };
    // The parts under the compaction were rewritten since: the row now names the composite it points at.
    const patch = { partMd5: blob.md5, partSize: blob.size };
    await o.registry.patch([{ outputIdentifier: was.outputIdentifier, patch }]);
    await o.onStep?.("registered");
    return {
      row: { id: existing.id, config: { ...was, ...patch } },
      created: false,
      compacted,
      rewritten: true,
    };
  }
  const current = await o.registry.current();
  if (current?.id !== existing.id) {
    throw new JournalError(
      `publishPart: ${was.outputIdentifier} has different bytes but is no longer the current output`,
      "part-index",
    );
  }
  const p = plan();
  await o.onStep?.("planned");
  const blob = (await writeBlob(o.store, was.partKey, p.body, false))!;
  await o.onStep?.("blob-written");
  const config = withBlob(p, was.partKey, blob);
  const { outputIdentifier: _id, ...patch } = config;
  await o.registry.patch([{ outputIdentifier: was.outputIdentifier, patch }]);
  await o.onStep?.("registered");
  return { row: { id: existing.id, config }, created: false, compacted: p.compacted, rewritten: true };
}
