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

const writersOf = (tokens: CommitToken[]) => tokens.map((t) => t.writer);

function recordSetText(records: TokenRecord[]): string {
  return records.length === 0 ? "none" : records.map((r) => `${r.index}@${r.t}`).join(",");
}

/** Every token is a valid commit token (seed §5.2). */
function parseTokens(raw: unknown[]): CommitToken[] {
  return raw.map((t, i) => {
    try {
      return validateCommitToken(t);
    } catch (err) {
      throw new CommitError(`token ${i} is not a valid commit token: ${(err as Error).message}`, "writers");
    }
  });
}

/** Rule 1: exactly one token per writer id 0..n_writers-1. Returns them in writer order. */
function oneTokenPerWriter(tokens: CommitToken[], nWriters: number): CommitToken[] {
  const byWriter = new Map<number, CommitToken>();
  for (const t of tokens) {
    if (byWriter.has(t.writer))
      throw new CommitError(`two tokens from writer ${t.writer}`, "writers", [t.writer]);
    if (!(Number.isInteger(t.writer) && t.writer >= 0 && t.writer < nWriters)) {
      throw new CommitError(
        `token from writer ${t.writer}, but the store has writers 0..${nWriters - 1}`,
        "writers",
        [t.writer],
      );
    }
    byWriter.set(t.writer, t);
  }
  const missing = Array.from({ length: nWriters }, (_, i) => i).filter((i) => !byWriter.has(i));
  if (missing.length > 0)
    throw new CommitError(`no token from writer(s) ${missing.join(", ")}`, "writers", missing);
  return [...byWriter.values()].sort((a, b) => a.writer - b.writer);
}

/** Rule 2: every token's fingerprint is the owner's. */
function sameFingerprint(ordered: CommitToken[], fingerprint: string): void {
  for (const t of ordered) {
    if (t.fingerprint !== fingerprint) {
      throw new CommitError(
        `writer ${t.writer} has fingerprint ${t.fingerprint}, the owner has ${fingerprint}`,
        "fingerprint",
        [t.writer],
      );
    }
  }
}

/**
 * Rule 3: every token names the owner's region dims (and, in v2, the manifest's), each region is aligned,
 * and together they tile the domain. Returns the region dims, sorted.
 */
function regionsTileDomain(ordered: CommitToken[], ctx: CommitContext): string[] {
  const owner = ordered[0]!;
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
      writersOf(ordered),
    );
  }
  checkTiling(
    ordered.map((t) => ({ writer: t.writer, region: t.region })),
    ctx.schema.dims,
    regionDims,
  );
  return regionDims;
}

/**
 * Rule 4, first part: every token carries the owner's record indices with bitwise-equal t. A mismatch
 * whose tokens' records are all committed already is named as such: the usual cause is a token kept
 * across a commit that landed unheard of (a lost acknowledgement, then a resume), which is spent.
 */
function sameRecords(ordered: CommitToken[], ctx: CommitContext): TokenRecord[] {
  const owner = ordered[0]!;
  const committed = (r: TokenRecord) =>
    ctx.schema.time_mode === "append" ? r.index < ctx.nCommitted : ctx.isRecordCommitted(r.index);
  for (const t of ordered) {
    const same =
      t.records.length === owner.records.length &&
      t.records.every((r, i) => r.index === owner.records[i]!.index && sameBits(r.t, owner.records[i]!.t));
    if (!same) {
      const spent = [t, owner]
        .filter((k) => k.records.length > 0 && k.records.every(committed))
        .map((k) => `writer ${k.writer}'s records are committed already (its token is spent)`);
      throw new CommitError(
        `writer ${t.writer} carries records [${recordSetText(t.records)}], writer ${owner.writer} carries [${recordSetText(owner.records)}]${spent.length > 0 ? `; ${spent.join("; ")}` : ""}`,
        "records",
        [owner.writer, t.writer],
      );
    }
  }
  return owner.records.map((r) => ({ ...r }));
}

/** Rule 4, append mode: the records continue the committed prefix, t increasing strictly. */
function recordsContinuePrefix(records: TokenRecord[], ordered: CommitToken[], ctx: CommitContext): void {
  records.forEach((r, k) => {
    if (r.index !== ctx.nCommitted + k) {
      throw new CommitError(
        `records must continue the committed prefix: expected index ${ctx.nCommitted + k}, got ${r.index}`,
        "records",
        writersOf(ordered),
      );
    }
    const before = k === 0 ? ctx.lastT : records[k - 1]!.t;
    if (before !== null && !(r.t > before)) {
      throw new CommitError(
        `append t must increase strictly: record ${r.index} has t ${r.t} after ${before}`,
        "records",
        writersOf(ordered),
      );
    }
  });
}

/** Rule 4, indexed mode: each t is times[index] bitwise, and no record is committed now. */
function recordsOnTimeAxis(records: TokenRecord[], owner: number, times: number[], ctx: CommitContext): void {
  for (const r of records) {
    if (!(r.index < times.length) || !sameBits(r.t, times[r.index]!)) {
      throw new CommitError(
        `record ${r.index}: t ${r.t} is not times[${r.index}] = ${times[r.index]}`,
        "records",
        [owner],
      );
    }
    if (ctx.isRecordCommitted(r.index)) {
      throw new CommitError(`record ${r.index} is already committed (invalidate it first)`, "records", [
        owner,
      ]);
    }
  }
}

/**
 * Rule 5: every static is known and not committed now; a partitioned static comes from every writer, a
 * replicated one from the owner only. Returns the statics committed, sorted.
 */
function staticsFromTheirWriters(ordered: CommitToken[], regionDims: string[], ctx: CommitContext): string[] {
  const owner = ordered[0]!;
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
  return [...statics].sort();
}

/** Every writer's blobs as manifest entries, in manifest order. */
function manifestBlobs(ordered: CommitToken[]): ManifestBlob[] {
  const blobs: ManifestBlob[] = ordered.flatMap((t) =>
    t.blobs.map(
      (b): ManifestBlob =>
        b.scope === "static"
          ? { scope: "static", writer: t.writer, key: b.key }
          : { scope: "record", record: b.record!, writer: t.writer, key: b.key },
    ),
  );
  return blobs.sort(compareBlobs);
}

/**
 * Seed §5.3: every check of a commit, done before anything is written. Throws CommitError naming the
 * reason and the writers involved; returns what the commit adds.
 */
export function verifyTokens(raw: unknown[], ctx: CommitContext): VerifiedCommit {
  const ordered = oneTokenPerWriter(parseTokens(raw), ctx.nWriters);
  sameFingerprint(ordered, ctx.fingerprint);
  const regionDims = regionsTileDomain(ordered, ctx);
  const records = sameRecords(ordered, ctx);
  const timeMode = ctx.schema.time_mode;
  if (timeMode === "append") recordsContinuePrefix(records, ordered, ctx);
  else recordsOnTimeAxis(records, ordered[0]!.writer, timeMode.indexed.times, ctx);
  const statics = staticsFromTheirWriters(ordered, regionDims, ctx);
  return { records, statics, blobs: manifestBlobs(ordered), regionDims };
}
