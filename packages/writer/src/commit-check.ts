import {
  CommitError,
  type CommitToken,
  checkRegionAligned,
  checkTiling,
  type ManifestBlob,
  type StreamSchema,
  type TokenRecord,
  validateCommitToken,
  ZarrStreamError,
} from "@zarr-stream/spec";
import { compareBlobs } from "./manifest-doc.js";

export interface CommitContext {
  schema: StreamSchema;
  fingerprint: string;
  nWriters: number;
  /** Append mode: the committed record count and the t of the last committed record. */
  nCommitted: number;
  lastT: number | null;
  /** The region dims the manifest records (v2); every token must name exactly these. */
  regionDims?: string[];
  isRecordCommitted: (index: number) => boolean;
  committedStatics: ReadonlySet<string>;
  /** Statics whose dims include a region dim of the store (seed §4). */
  isStaticPartitioned: (name: string, regionDims: string[]) => boolean;
}

/** What a verified set of tokens commits. */
export interface VerifiedCommit {
  records: TokenRecord[];
  statics: string[];
  blobs: ManifestBlob[];
  regionDims: string[];
}

const sameBits = (a: number, b: number) => Object.is(a, b);

function recordSetText(records: TokenRecord[]): string {
  return records.length === 0 ? "none" : records.map((r) => `${r.index}@${r.t}`).join(",");
}

/**
 * Seed §5.3: every check of a commit, done before anything is written. Throws CommitError naming the
 * reason and the writers involved; returns what the commit adds.
 */
export function verifyTokens(raw: unknown[], ctx: CommitContext): VerifiedCommit {
  const tokens: CommitToken[] = raw.map((t, i) => {
    try {
      return validateCommitToken(t);
    } catch (err) {
      throw new CommitError(`token ${i} is not a valid commit token: ${(err as Error).message}`, "writers");
    }
  });
  // 1. exactly one token per writer id
  const byWriter = new Map<number, CommitToken>();
  for (const t of tokens) {
    if (byWriter.has(t.writer))
      throw new CommitError(`two tokens from writer ${t.writer}`, "writers", [t.writer]);
    if (!(Number.isInteger(t.writer) && t.writer >= 0 && t.writer < ctx.nWriters)) {
      throw new CommitError(
        `token from writer ${t.writer}, but the store has writers 0..${ctx.nWriters - 1}`,
        "writers",
        [t.writer],
      );
    }
    byWriter.set(t.writer, t);
  }
  const missing = Array.from({ length: ctx.nWriters }, (_, i) => i).filter((i) => !byWriter.has(i));
  if (missing.length > 0)
    throw new CommitError(`no token from writer(s) ${missing.join(", ")}`, "writers", missing);
  const ordered = [...byWriter.values()].sort((a, b) => a.writer - b.writer);
  const owner = ordered[0]!;
  // 2. fingerprints
  for (const t of ordered) {
    if (t.fingerprint !== ctx.fingerprint) {
      throw new CommitError(
        `writer ${t.writer} has fingerprint ${t.fingerprint}, the owner has ${ctx.fingerprint}`,
        "fingerprint",
        [t.writer],
      );
    }
  }
  // 3. region dims, alignment, disjointness and coverage
  const dimsKey = (t: CommitToken) => Object.keys(t.region).sort().join(",");
  for (const t of ordered) {
    if (dimsKey(t) !== dimsKey(owner)) {
      throw new CommitError(
        `writer ${t.writer} names region dims [${dimsKey(t)}], writer ${owner.writer} names [${dimsKey(owner)}]`,
        "region-dims",
        [owner.writer, t.writer],
      );
    }
    try {
      checkRegionAligned(t.region, ctx.schema.dims, ctx.schema.shard_shape);
    } catch (err) {
      if (err instanceof ZarrStreamError) {
        throw new CommitError(`writer ${t.writer}: ${err.message}`, "alignment", [t.writer]);
      }
      throw err;
    }
  }
  const regionDims = Object.keys(owner.region).sort();
  if (ctx.regionDims !== undefined && regionDims.join(",") !== [...ctx.regionDims].sort().join(",")) {
    throw new CommitError(
      `the tokens name region dims [${regionDims.join(",")}], the store's manifest names [${[...ctx.regionDims].sort().join(",")}]`,
      "region-dims",
      ordered.map((t) => t.writer),
    );
  }
  checkTiling(
    ordered.map((t) => ({ writer: t.writer, region: t.region })),
    ctx.schema.dims,
    regionDims,
  );
  // 4. identical record sets with bitwise-equal t
  for (const t of ordered) {
    const same =
      t.records.length === owner.records.length &&
      t.records.every((r, i) => r.index === owner.records[i]!.index && sameBits(r.t, owner.records[i]!.t));
    if (!same) {
      throw new CommitError(
        `writer ${t.writer} carries records [${recordSetText(t.records)}], writer ${owner.writer} carries [${recordSetText(owner.records)}]`,
        "records",
        [owner.writer, t.writer],
      );
    }
  }
  const records = owner.records.map((r) => ({ ...r }));
  if (ctx.schema.time_mode === "append") {
    records.forEach((r, k) => {
      if (r.index !== ctx.nCommitted + k) {
        throw new CommitError(
          `records must continue the committed prefix: expected index ${ctx.nCommitted + k}, got ${r.index}`,
          "records",
          ordered.map((t) => t.writer),
        );
      }
      const before = k === 0 ? ctx.lastT : records[k - 1]!.t;
      if (before !== null && !(r.t > before)) {
        throw new CommitError(
          `append t must increase strictly: record ${r.index} has t ${r.t} after ${before}`,
          "records",
          ordered.map((t) => t.writer),
        );
      }
    });
  } else {
    const times = ctx.schema.time_mode.indexed.times;
    for (const r of records) {
      if (!(r.index < times.length) || !sameBits(r.t, times[r.index]!)) {
        throw new CommitError(
          `record ${r.index}: t ${r.t} is not times[${r.index}] = ${times[r.index]}`,
          "records",
          [owner.writer],
        );
      }
      if (ctx.isRecordCommitted(r.index)) {
        throw new CommitError(`record ${r.index} is already committed (invalidate it first)`, "records", [
          owner.writer,
        ]);
      }
    }
  }
  // 5. statics
  const statics = new Set<string>();
  for (const t of ordered) {
    for (const name of t.statics) {
      if (!ctx.schema.statics.some((s) => s.name === name)) {
        throw new CommitError(
          `writer ${t.writer} commits unknown static ${JSON.stringify(name)}`,
          "statics",
          [t.writer],
        );
      }
      if (ctx.committedStatics.has(name)) {
        throw new CommitError(`static ${name} is already committed (invalidate_statics first)`, "statics", [
          t.writer,
        ]);
      }
      statics.add(name);
    }
  }
  for (const name of statics) {
    if (ctx.isStaticPartitioned(name, regionDims)) {
      const lacking = ordered.filter((t) => !t.statics.includes(name)).map((t) => t.writer);
      if (lacking.length > 0) {
        throw new CommitError(
          `partitioned static ${name} is missing from writer(s) ${lacking.join(", ")}`,
          "statics",
          lacking,
        );
      }
    } else {
      const others = ordered
        .filter((t) => t.writer !== owner.writer && t.statics.includes(name))
        .map((t) => t.writer);
      if (others.length > 0) {
        throw new CommitError(
          `replicated static ${name} may come only from the owner, not writer(s) ${others.join(", ")}`,
          "statics",
          others,
        );
      }
    }
  }
  const blobs: ManifestBlob[] = [];
  for (const t of ordered) {
    for (const b of t.blobs) {
      const entry: ManifestBlob =
        b.scope === "static"
          ? { scope: "static", writer: t.writer, key: b.key }
          : { scope: "record", record: b.record!, writer: t.writer, key: b.key };
      blobs.push(entry);
    }
  }
  return { records, statics: [...statics].sort(), blobs: blobs.sort(compareBlobs), regionDims };
}
