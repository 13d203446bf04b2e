import { type OutputManifest, ProtocolError } from "@zarr-stream/spec";
import type { Store } from "@zarr-stream/store";
import { storedLease } from "./writer-lease.js";

/**
 * The owner's commit intent (fencing.md, "A takeover during a commit"). A commit checks that every
 * contributor token is sealed by its writer's live handle (one read of each lease), then writes the
 * manifest; a second process of a contributor can take that writer's lease between the two, and the
 * commit then publishes the older handle's records after the newer one has read the committed state.
 * The owner therefore writes this intent before it reads the leases, and a contributor that has just
 * taken its lease waits until no intent is in flight before it reads the committed state:
 *
 *   owner:       put intent(R) -> read leases -> ... -> put manifest(R)
 *   contributor: put lease     -> wait for intent(R) settled -> read manifest
 *
 * If the owner's lease read saw the older handle's seal, it came before the takeover's lease write, so
 * the intent came before it too and the contributor sees it; if it did not, the commit is refused
 * (`stale-token`) and the owner withdraws its intent. Either way the contributor goes on from a committed
 * state that no late commit changes.
 */
/** A manifest's commit_seq (0 before the first commit, and for v1 manifests, which have none). */
export function commitSeqOf(m: OutputManifest | undefined): number {
  return (m as { commit_seq?: number } | undefined)?.commit_seq ?? 0;
}

export const INTENT_KEY = ".zarr-stream/committing.json";
const INTENT_SCHEMA = "zarr-stream/commit-intent/v1";

interface IntentDoc {
  schema: typeof INTENT_SCHEMA;
  /** The commit_seq the commit produces once its manifest lands. */
  commit_seq: number;
  /** The nonce of the owner lease it was written under: a taken-over owner's intent never lands. */
  owner: string;
}

const encode = (doc: IntentDoc) => new TextEncoder().encode(`${JSON.stringify(doc)}\n`);

function parseIntent(bytes: Uint8Array): IntentDoc | undefined {
  try {
    const doc = JSON.parse(new TextDecoder().decode(bytes)) as Partial<IntentDoc>;
    return doc.schema === INTENT_SCHEMA &&
      Number.isSafeInteger(doc.commit_seq) &&
      typeof doc.owner === "string"
      ? (doc as IntentDoc)
      : undefined;
  } catch {
    return undefined;
  }
}

/** The owner, before it checks seals: the commit of `commitSeq` is in flight. */
export async function announceCommit(store: Store, commitSeq: number, ownerNonce: string): Promise<void> {
  await store.put(INTENT_KEY, encode({ schema: INTENT_SCHEMA, commit_seq: commitSeq, owner: ownerNonce }));
}

/** The owner, after a refused commit: nothing of `commitSeq` lands, so nobody need wait for it. */
export async function withdrawCommit(store: Store, commitSeq: number, ownerNonce: string): Promise<void> {
  const bytes = await store.get(INTENT_KEY);
  const doc = bytes === undefined ? undefined : parseIntent(bytes);
  if (doc?.commit_seq === commitSeq && doc.owner === ownerNonce) await store.delete(INTENT_KEY);
}

/** The owner's intent cannot land any more: none, already landed, withdrawn, or its owner taken over. */
async function settled(store: Store, committedSeq: () => Promise<number>): Promise<number | undefined> {
  const bytes = await store.get(INTENT_KEY);
  const doc = bytes === undefined ? undefined : parseIntent(bytes);
  if (doc === undefined) return undefined;
  if (doc.commit_seq <= (await committedSeq())) return undefined;
  const owner = await storedLease(store, 0);
  if (!owner.present || owner.lease?.nonce !== doc.owner) return undefined;
  return doc.commit_seq;
}

/**
 * A contributor that has just taken its lease: waits until the owner's commit in flight (if any) has
 * landed or been refused, at most `timeoutMs`.
 */
export async function waitForCommitInFlight(
  store: Store,
  committedSeq: () => Promise<number>,
  timeoutMs: number,
): Promise<void> {
  const started = Date.now();
  for (let pause = 5; ; pause = Math.min(pause * 2, 100)) {
    const pending = await settled(store, committedSeq);
    if (pending === undefined) return;
    if (Date.now() - started >= timeoutMs)
      throw new ProtocolError(
        `${store.url}: writer 0's commit of commit_seq ${pending} has been in flight for ${Date.now() - started} ms ` +
          `(${INTENT_KEY}): writer 0 stopped mid-commit; restart writer 0 (it resumes), then this writer`,
      );
    await new Promise((r) => setTimeout(r, pause));
  }
}
