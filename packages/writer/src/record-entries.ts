import { MANIFEST_PAGE_SIZE, type RecordEntry } from "@zarr-stream/spec";

/** What the indexed summaries read from a list of record entries: an array or RecordEntries. */
export interface EntryList {
  readonly length: number;
  at(index: number): RecordEntry | undefined;
}

/**
 * An indexed store's record entries, held in blocks of one manifest page (docs/manifest-pages.md) and
 * never changed once made: `with` copies only the blocks it touches and shares the rest, so a commit
 * costs the blocks it changes, not the time axis, and the manifest pager knows an untouched block (and so
 * its page) by identity.
 */
export class RecordEntries implements EntryList {
  readonly length: number;
  readonly #blocks: readonly (readonly RecordEntry[])[];
  #flat: RecordEntry[] | undefined;

  private constructor(blocks: readonly (readonly RecordEntry[])[], length: number) {
    this.#blocks = blocks;
    this.length = length;
  }

  static from(entries: readonly RecordEntry[]): RecordEntries {
    const blocks: RecordEntry[][] = [];
    for (let first = 0; first < entries.length; first += MANIFEST_PAGE_SIZE)
      blocks.push(entries.slice(first, first + MANIFEST_PAGE_SIZE));
    return new RecordEntries(blocks, entries.length);
  }

  at(index: number): RecordEntry | undefined {
    if (!Number.isInteger(index) || index < 0 || index >= this.length) return undefined;
    return this.#blocks[Math.floor(index / MANIFEST_PAGE_SIZE)]![index % MANIFEST_PAGE_SIZE];
  }

  /** Block b holds entries b·P .. b·P+P-1 (the last may be shorter); the same array while untouched. */
  get blocks(): readonly (readonly RecordEntry[])[] {
    return this.#blocks;
  }

  /** These entries with `changes` (index → entry, each within the list) applied. */
  with(changes: ReadonlyMap<number, RecordEntry>): RecordEntries {
    if (changes.size === 0) return this;
    const blocks = this.#blocks.slice();
    const copied = new Set<number>();
    for (const [index, entry] of changes) {
      const b = Math.floor(index / MANIFEST_PAGE_SIZE);
      if (!copied.has(b)) {
        blocks[b] = blocks[b]!.slice();
        copied.add(b);
      }
      (blocks[b] as RecordEntry[])[index % MANIFEST_PAGE_SIZE] = entry;
    }
    return new RecordEntries(blocks, this.length);
  }

  /** The entries as one array, made once on first use: only whole-manifest consumers ask for it. */
  toArray(): readonly RecordEntry[] {
    this.#flat ??= this.#blocks.flat();
    return this.#flat;
  }
}

const behind = new WeakMap<object, RecordEntries>();

/**
 * A manifest's `records` for `entries`: its `entries` array is made only when something reads the whole
 * list (a caller of lastManifest, an inline manifest's serialisation), and the manifest pager finds the
 * blocks behind it (entriesBehind) to page by block identity.
 */
export function manifestRecords(entries: RecordEntries): { entries: RecordEntry[] } {
  const records = {
    get entries(): RecordEntry[] {
      return entries.toArray() as RecordEntry[];
    },
  };
  behind.set(records, entries);
  return records;
}

export function entriesBehind(records: object): RecordEntries | undefined {
  return behind.get(records);
}
