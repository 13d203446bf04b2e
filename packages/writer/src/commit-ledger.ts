import type { CommitToken } from "@zarr-stream/spec";
import type { Store } from "@zarr-stream/store";
import type { FencedObjects } from "./fenced-objects.js";
import { tokenDigest } from "./writer-lease.js";

/**
 * What each commit published, byte for byte (fencing.md, "What a commit published"): a writer's flush
 * leaves a receipt, the CRC-32C of every data object its token lists as written; the owner's commit
 * gathers the receipts of the tokens it commits into a ledger for its commit_seq, written before the
 * manifest. `zstream verify --deep` compares every committed object with the newest ledger entry for it,
 * so an object rewritten after the commit that published it is named. Both live under `.zarr-stream/`,
 * a folder no Zarr reader opens and seed-only readers never look at.
 */
export const RECEIPT_SCHEMA = "zarr-stream/flush-receipt/v1";
export const LEDGER_SCHEMA = "zarr-stream/commit-ledger/v1";
export const LEDGER_PREFIX = ".zarr-stream/commits/";
export const RECEIPT_PREFIX = ".zarr-stream/receipts/";

/** Object key -> CRC-32C of the bytes written. */
export type Checksums = Record<string, number>;

export function receiptKey(writer: number, digest: string): string {
  return `${RECEIPT_PREFIX}writer-${writer}/${digest}.json`;
}

export function ledgerKey(commitSeq: number): string {
  return `${LEDGER_PREFIX}${commitSeq}.json`;
}

const json = (doc: unknown) => new TextEncoder().encode(`${JSON.stringify(doc)}\n`);

function isChecksums(v: unknown): v is Checksums {
  return (
    v !== null &&
    typeof v === "object" &&
    !Array.isArray(v) &&
    Object.values(v).every((c) => Number.isInteger(c) && (c as number) >= 0 && (c as number) <= 0xffffffff)
  );
}

/** A receipt or ledger document's `objects`, or undefined when the bytes are not one of `schema`. */
function parseObjects(bytes: Uint8Array, schema: string): Checksums | undefined {
  try {
    const doc = JSON.parse(new TextDecoder().decode(bytes)) as { schema?: unknown; objects?: unknown };
    return doc.schema === schema && isChecksums(doc.objects) ? doc.objects : undefined;
  } catch {
    return undefined;
  }
}

/**
 * One handle's receipts: kept in memory for the owner's own tokens, and written to the store for tokens
 * another process may commit (a contributor's, or an owner's posted token that a restarted owner commits).
 */
export class FlushReceipts {
  readonly #mine = new Map<string, Checksums>();

  constructor(
    private readonly objects: FencedObjects,
    /** A Single writer commits its own tokens in the same call: its receipts need not reach the store. */
    private readonly inMemoryOnly: boolean,
  ) {}

  /** Records `token`'s receipt: the checksums of the objects it lists, written since the last token. */
  async record(token: CommitToken): Promise<void> {
    const digest = tokenDigest(token);
    const objects = this.objects.checksumsOf(token.objects);
    this.#mine.set(digest, objects);
    if (this.inMemoryOnly || Object.keys(objects).length === 0) return;
    const key = receiptKey(token.writer, digest);
    await this.objects.put(
      key,
      json({ schema: RECEIPT_SCHEMA, writer: token.writer, token: digest, objects }),
    );
    this.objects.forget([key]);
  }

  /**
   * The owner, committing `tokens`: every object they list with the checksum its writer's receipt gives.
   * A token without a receipt (a writer of another language, or one that wrote no data object) adds
   * nothing; verify then has nothing to compare those objects with.
   */
  async gather(store: Store, tokens: CommitToken[]): Promise<Checksums> {
    const parts = await Promise.all(
      tokens.map(async (t) => {
        const digest = tokenDigest(t);
        const mine = this.#mine.get(digest);
        if (mine !== undefined) return mine;
        const bytes = await store.get(receiptKey(t.writer, digest));
        return bytes === undefined ? {} : (parseObjects(bytes, RECEIPT_SCHEMA) ?? {});
      }),
    );
    return Object.assign({}, ...parts) as Checksums;
  }

  /** The ledger of commit `commitSeq`, written (fenced) before its manifest; none for a commit of no data. */
  async writeLedger(commitSeq: number, objects: Checksums): Promise<void> {
    if (Object.keys(objects).length === 0) return;
    const key = ledgerKey(commitSeq);
    const sorted = Object.fromEntries(Object.entries(objects).sort(([a], [b]) => (a < b ? -1 : 1)));
    await this.objects.put(key, json({ schema: LEDGER_SCHEMA, commit_seq: commitSeq, objects: sorted }));
    this.objects.forget([key]);
  }

  /** After the commit landed: its receipts are in its ledger now (best effort; a leftover is harmless). */
  async clear(store: Store, tokens: CommitToken[]): Promise<void> {
    for (const t of tokens) this.#mine.delete(tokenDigest(t));
    if (this.inMemoryOnly) return;
    await Promise.all(
      tokens
        .filter((t) => t.objects.length > 0)
        .map((t) => store.delete(receiptKey(t.writer, tokenDigest(t))).catch(() => undefined)),
    );
  }
}

/**
 * What the commits up to `commitSeq` published: for each object, the checksum in the newest ledger that
 * lists it and that commit's seq. Ledgers past `commitSeq` belong to commits that did not land.
 */
export async function readPublished(
  store: Store & { list(prefix: string): Promise<string[]> },
  commitSeq: number,
): Promise<Map<string, { crc: number; commitSeq: number }>> {
  const seqs = (await store.list(LEDGER_PREFIX))
    .map((k) => /^([1-9][0-9]{0,14})\.json$/.exec(k.slice(LEDGER_PREFIX.length)))
    .flatMap((m) => (m === null ? [] : [Number(m[1])]))
    .filter((seq) => seq <= commitSeq)
    .sort((a, b) => a - b);
  const out = new Map<string, { crc: number; commitSeq: number }>();
  for (const seq of seqs) {
    const bytes = await store.get(ledgerKey(seq));
    const objects = bytes === undefined ? undefined : parseObjects(bytes, LEDGER_SCHEMA);
    for (const [key, crc] of Object.entries(objects ?? {})) out.set(key, { crc, commitSeq: seq });
  }
  return out;
}
