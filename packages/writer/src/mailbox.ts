import {
  type CommitToken,
  ProtocolError,
  SchemaError,
  validateCommitToken,
  ZarrStreamError,
} from "@zarr-stream/spec";
import { canFence, type Store } from "@zarr-stream/store";
import { receiptKey } from "./commit-ledger.js";
import { sameBytes } from "./fenced-objects.js";
import { type SealProblem, sealProblem, sealProblemIn, storedLease, tokenDigest } from "./writer-lease.js";

/**
 * Token exchange through the store itself, for writers in separate processes or machines that share
 * nothing but the store URL. Any launcher starts N processes (a shell loop, `mpirun`, a Kubernetes
 * indexed Job with `JOB_COMPLETION_INDEX` as the id); process 0 calls `ZarrStreamWriter.create` as owner,
 * the others `join` as contributors once the manifest exists (or `resume` after a restart), each with
 * its own region.
 *
 * Round rule: each writer, the owner too, posts the token of its k-th flush since it opened the store to
 * round `c0 + k`, where c0 is the commit_seq of the manifest it read at create/join/resume
 * (`writer.lastManifest.commit_seq`); the round is the commit_seq the commit of those tokens produces.
 * The owner waits for all of a round (`collectTokens`), commits, then `clearRound`s it. Only a token that
 * the live handle of its writer sealed counts (fencing.md, "Sealed tokens"): a token posted by a handle
 * that another process of the same writer id has since taken over is stale, the owner waits past it, and
 * the live handle's post replaces it.
 */
const ROOT = "_tokens";

/** The owner's wait for a round ended with tokens still missing; `missing` names their writer ids. */
export class MailboxTimeout extends ZarrStreamError {
  override name = "MailboxTimeout";
  constructor(
    message: string,
    readonly round: number,
    readonly missing: number[],
    /** Why a token that is there does not count (stale posts), one sentence each. */
    readonly notes: string[] = [],
  ) {
    super(message);
  }
}

/** The message of a MailboxTimeout for `round` after `waitedMs`. */
export function missingTokens(round: number, missing: number[], waitedMs: number, notes: string[]): string {
  const s = missing.length > 1 ? "s" : "";
  return `round ${round}: no token from writer${s} ${missing.join(", ")} after ${waitedMs} ms${notes.map((n) => `; ${n}`).join("")}`;
}

function checkRound(round: number): void {
  if (!Number.isSafeInteger(round) || round < 1) {
    throw new SchemaError(`mailbox round must be an integer >= 1 (commit_seq + 1), got ${round}`, "/round");
  }
}

function checkWriter(writer: number, pointer: string): void {
  if (!Number.isSafeInteger(writer) || writer < 0) {
    throw new SchemaError(`writer id must be an integer >= 0, got ${writer}`, pointer);
  }
}

/** `_tokens/<round>/<writer>.json`. */
export function mailboxKey(round: number, writer: number): string {
  checkRound(round);
  checkWriter(writer, "/writer");
  return `${ROOT}/${round}/${writer}.json`;
}

/**
 * Posts a writer's token for a round, create-only: a second post of another token for the same round and
 * writer is a ProtocolError. The same token found there is an earlier post whose acknowledgement was lost.
 * A token there that its writer's live handle did not seal (a handle since taken over posted it) is
 * replaced, compare-and-swap, by this one when this one is sealed.
 */
export async function postToken(store: Store, round: number, token: CommitToken): Promise<void> {
  const valid = validateCommitToken(structuredClone(token));
  const key = mailboxKey(round, valid.writer);
  const bytes = new TextEncoder().encode(JSON.stringify(valid));
  for (let attempt = 0; !(await store.putIfAbsent(key, bytes)); attempt++) {
    const there = canFence(store) ? await store.getVersioned(key) : undefined;
    const thereBytes = there?.bytes ?? (await store.get(key));
    if (thereBytes === undefined) continue;
    if (sameBytes(thereBytes, bytes)) return;
    // Both tokens are the same writer's: one read of its lease judges them.
    const lease = there !== undefined && attempt < 3 ? await storedLease(store, valid.writer) : undefined;
    const stale =
      lease !== undefined &&
      sealProblemIn(lease, valid) === undefined &&
      sealProblemIn(lease, parseToken(thereBytes, key, valid.writer)) !== undefined;
    if (!stale)
      throw new ProtocolError(
        `writer ${valid.writer} already posted a token for round ${round} (${key}): a round takes one token per writer`,
      );
    if ((await store.putIfVersion!(key, bytes, there!.version)) !== undefined) return;
  }
}

export interface CollectOptions {
  /** Give up with MailboxTimeout after this long (default 60 s). */
  timeoutMs?: number;
  /** Pause between looks at the mailbox (default 100 ms). */
  pollMs?: number;
  signal?: AbortSignal;
}

/**
 * Waits until writers 0..nWriters-1 have all posted for the round and returns their tokens in writer
 * order, each validated (shape, sorted lists, and its writer id matching its key). A token for a writer
 * id outside the run is a ProtocolError.
 */
export async function collectTokens(
  store: Store,
  round: number,
  nWriters: number,
  opts: CollectOptions = {},
): Promise<CommitToken[]> {
  checkRound(round);
  if (!Number.isSafeInteger(nWriters) || nWriters < 1) {
    throw new SchemaError(`nWriters must be an integer >= 1, got ${nWriters}`, "/nWriters");
  }
  const timeoutMs = opts.timeoutMs ?? 60_000;
  const pollMs = opts.pollMs ?? 100;
  for (const [name, v] of [
    ["timeoutMs", timeoutMs],
    ["pollMs", pollMs],
  ] as const) {
    if (!Number.isFinite(v) || v < 0)
      throw new SchemaError(`${name} must be a number >= 0, got ${v}`, `/${name}`);
  }
  const deadline = Date.now() + timeoutMs;
  const tokens = new Map<number, CommitToken>();
  /** Posted tokens that no live handle sealed, by writer: looked at again until the live handle's post. */
  const stale = new Map<number, SealProblem>();
  const dir = `${ROOT}/${round}/`;
  for (;;) {
    opts.signal?.throwIfAborted();
    for (const key of await store.list(dir)) {
      const writer = writerOfKey(key, dir);
      if (writer === undefined || tokens.has(writer)) continue;
      if (writer >= nWriters) {
        throw new ProtocolError(
          `${key}: writer ${writer} is not one of this run's writers 0..${nWriters - 1}`,
        );
      }
      const token = await readToken(store, key, writer);
      const problem = writer === 0 ? undefined : await sealProblem(store, token);
      if (problem === undefined) {
        tokens.set(writer, token);
        stale.delete(writer);
      } else stale.set(writer, problem);
    }
    if (tokens.size === nWriters) return [...tokens.keys()].sort((a, b) => a - b).map((w) => tokens.get(w)!);
    const left = deadline - Date.now();
    if (left <= 0) {
      const missing = Array.from({ length: nWriters }, (_, w) => w).filter((w) => !tokens.has(w));
      const notes = [...stale.values()].map(
        (p) => `the token posted for writer ${p.writer} is stale: ${p.why}`,
      );
      throw new MailboxTimeout(missingTokens(round, missing, timeoutMs, notes), round, missing, notes);
    }
    await pause(Math.min(pollMs, left), opts.signal);
  }
}

/** Deletes every token of the round (the owner, after the round is committed). */
/**
 * Deletes a committed round's tokens. `leftover`: the commit landed in an earlier call that then failed
 * (its answer lost, or the owner stopped), before it deleted the flush receipts of its tokens; they are
 * deleted here first, read from the tokens, as that commit would have (their checksums are in its ledger).
 */
export async function clearRound(store: Store, round: number, leftover = false): Promise<void> {
  checkRound(round);
  await clearTokens(store, await store.list(`${ROOT}/${round}/`), leftover);
}

/**
 * Deletes the tokens of every round up to `committedSeq`, and the receipts they left: those rounds are
 * committed, and an owner stopped between its commit and its clearRound leaves theirs behind.
 */
export async function clearCommittedRounds(store: Store, committedSeq: number): Promise<void> {
  const keys = (await store.list(`${ROOT}/`)).filter((key) => {
    const m = /^([1-9][0-9]{0,14})\//.exec(key.slice(ROOT.length + 1));
    return m !== null && Number(m[1]) <= committedSeq;
  });
  await clearTokens(store, keys, true);
}

async function clearTokens(store: Store, keys: string[], withReceipts: boolean): Promise<void> {
  for (const key of keys) {
    const writer = withReceipts ? writerOfKey(key, key.slice(0, key.lastIndexOf("/") + 1)) : undefined;
    const bytes = writer === undefined ? undefined : await store.get(key);
    if (bytes !== undefined) {
      let token: CommitToken | undefined;
      try {
        token = parseToken(bytes, key, writer!);
      } catch {
        // Not a token this project posted: it has no receipt to find.
      }
      if (token !== undefined && token.objects.length > 0)
        await store.delete(receiptKey(token.writer, tokenDigest(token)));
    }
    await store.delete(key);
  }
}

/** Writer id of `_tokens/<round>/<id>.json`; other names (a stray upload, a deeper key) are not tokens. */
function writerOfKey(key: string, dir: string): number | undefined {
  const m = /^(0|[1-9][0-9]{0,8})\.json$/.exec(key.slice(dir.length));
  return m === null ? undefined : Number(m[1]);
}

async function readToken(store: Store, key: string, writer: number): Promise<CommitToken> {
  const bytes = await store.get(key);
  if (bytes === undefined) throw new ProtocolError(`${key} was listed, then vanished before it was read`);
  return parseToken(bytes, key, writer);
}

function parseToken(bytes: Uint8Array, key: string, writer: number): CommitToken {
  let doc: unknown;
  try {
    doc = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes));
  } catch (cause) {
    throw new SchemaError(`${key} is not UTF-8 JSON: ${String(cause)}`, "", key);
  }
  let token: CommitToken;
  try {
    token = validateCommitToken(doc);
  } catch (err) {
    if (err instanceof SchemaError) throw new SchemaError(`${key}: ${err.message}`, err.pointer, key);
    throw err;
  }
  if (token.writer !== writer) {
    throw new SchemaError(`${key} holds a token of writer ${token.writer}`, "/writer", key);
  }
  return token;
}

function pause(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(done, ms);
    function done() {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }
    function onAbort() {
      clearTimeout(timer);
      reject(signal?.reason);
    }
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
