import { createHash, randomUUID } from "node:crypto";
import { CommitError, type CommitToken } from "@zarr-stream/spec";
import type { Store } from "@zarr-stream/store";

/** Where each writer's lease lives: beside the Zarr hierarchy, in a folder no Zarr reader opens. */
export const LEASE_PREFIX = ".zarr-stream/leases/";
export const LEASE_SCHEMA = "zarr-stream/writer-lease/v1";

/**
 * How many sealed tokens a lease keeps, newest last. A token is committable while its seal is in the lease
 * of its writer: a contributor that runs more than this many flushes ahead of the owner's commits has its
 * oldest tokens refused (CommitError "stale-token"), and resumes.
 */
export const SEALS_KEPT = 256;

export function leaseKey(writer: number): string {
  return `${LEASE_PREFIX}writer-${writer}.json`;
}

/**
 * A writer's lease document. Only its version fences; `sealed` lists the digests of the tokens the handle
 * holding this lease flushed (fencing.md, "Sealed tokens"), so the owner commits a token only when the
 * live handle of its writer made it.
 */
export interface LeaseDoc {
  schema: typeof LEASE_SCHEMA;
  writer: number;
  epoch: number;
  acquired_at: string;
  nonce: string;
  sealed: string[];
  /** The launch of the handle holding it (RunRank.job), or null when it has none. */
  job: string | null;
}

/** A fresh lease for `writer`, one epoch past `previous` (the bytes it replaces, if any). */
export function newLease(writer: number, previous: Uint8Array | undefined, job: string | null): LeaseDoc {
  const epoch = previous === undefined ? 1 : (parseLease(previous)?.epoch ?? 0) + 1;
  // The nonce makes every lease body unique, so finding our own bytes there means our write landed.
  const acquired_at = new Date().toISOString();
  return { schema: LEASE_SCHEMA, writer, epoch, acquired_at, nonce: randomUUID(), sealed: [], job };
}

export function leaseBytes(doc: LeaseDoc): Uint8Array {
  return new TextEncoder().encode(`${JSON.stringify(doc)}\n`);
}

/**
 * The lease a store holds, or undefined for bytes that are not one (a torn or foreign file: it is taken
 * over, never a reason to refuse a store). A lease of the first format, without `sealed`, seals nothing.
 */
export function parseLease(bytes: Uint8Array): LeaseDoc | undefined {
  let doc: unknown;
  try {
    doc = JSON.parse(new TextDecoder().decode(bytes));
  } catch {
    return undefined;
  }
  if (doc === null || typeof doc !== "object") return undefined;
  const d = doc as Partial<LeaseDoc>;
  if (d.schema !== LEASE_SCHEMA || !Number.isSafeInteger(d.writer) || !Number.isSafeInteger(d.epoch))
    return undefined;
  const sealed = Array.isArray(d.sealed) ? d.sealed.filter((s) => typeof s === "string") : [];
  return {
    schema: LEASE_SCHEMA,
    writer: d.writer!,
    epoch: Math.max(0, d.epoch!),
    acquired_at: typeof d.acquired_at === "string" ? d.acquired_at : "",
    nonce: typeof d.nonce === "string" ? d.nonce : "",
    sealed,
    job: typeof d.job === "string" ? d.job : null,
  };
}

/**
 * The digest a lease seals a token by: SHA-256 over the token's JSON with sorted keys, so the token the
 * owner receives (parsed from the mailbox, or handed over in memory) digests as the one that was flushed.
 * -0 prints as 0 in both (JSON.stringify), like every other number.
 */
export function tokenDigest(token: CommitToken): string {
  return createHash("sha256").update(sortedJson(token)).digest("hex").slice(0, 32);
}

function sortedJson(value: unknown): string {
  return JSON.stringify(value, (_key, v) =>
    v !== null && typeof v === "object" && !Array.isArray(v)
      ? Object.fromEntries(
          Object.keys(v)
            .sort()
            .map((k) => [k, (v as Record<string, unknown>)[k]]),
        )
      : v,
  );
}

/** Why a contributor's token may not be committed now, or undefined when its writer's live handle sealed it. */
export type SealProblem = { writer: number; why: string };

/**
 * A writer's lease as the store holds it: none (a writer that takes no lease), or its bytes
 * parsed (`lease` undefined when they do not parse).
 */
export type StoredLease = { present: false } | { present: true; lease: LeaseDoc | undefined };

export async function storedLease(store: Store, writer: number): Promise<StoredLease> {
  const bytes = await store.get(leaseKey(writer));
  return bytes === undefined ? { present: false } : { present: true, lease: parseLease(bytes) };
}

/**
 * Whether the live handle of the token's writer, the one holding `stored`, sealed that token: flushed
 * exactly these records, statics, blobs and objects. A writer with no lease at all took none (a binding
 * without leases; the Python package's writers take them) and is fenced by the manifest only.
 */
export function sealProblemIn(stored: StoredLease, token: CommitToken): SealProblem | undefined {
  if (!stored.present) return undefined;
  const { lease } = stored;
  if (lease?.sealed.includes(tokenDigest(token))) return undefined;
  const holder =
    lease === undefined
      ? "its lease does not parse"
      : `its lease is at epoch ${lease.epoch}, taken ${lease.acquired_at}`;
  return {
    writer: token.writer,
    why: `writer ${token.writer}'s token (records [${token.records.map((r) => r.index).join(",")}]) was not flushed by the handle that holds writer ${token.writer}'s lease now (${holder}): a second process of writer ${token.writer} took over, or that handle resumed since`,
  };
}

/** sealProblemIn, on the lease the store holds now. */
export async function sealProblem(store: Store, token: CommitToken): Promise<SealProblem | undefined> {
  return sealProblemIn(await storedLease(store, token.writer), token);
}

/** Seed §5.3 with fencing.md's sealed tokens: refuses, before anything is written, a token no live handle made. */
export async function assertTokensSealed(store: Store, tokens: CommitToken[], owner: number): Promise<void> {
  const problems = await Promise.all(
    tokens.filter((t) => t.writer !== owner).map((t) => sealProblem(store, t)),
  );
  const found = problems.filter((p): p is SealProblem => p !== undefined);
  if (found.length > 0)
    throw new CommitError(
      found.map((p) => p.why).join("; "),
      "stale-token",
      found.map((p) => p.writer),
    );
}
