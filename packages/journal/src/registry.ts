import type { JournalRowConfig } from "@zarr-stream/spec";
import type { JournalRow } from "./row.js";

export interface RowPatch {
  outputIdentifier: string;
  patch: Partial<Omit<JournalRowConfig, "outputIdentifier">>;
}

/**
 * Where journal rows are registered (the platform's node outputs). Every method that writes is atomic:
 * a crash leaves either all of it or none of it.
 */
export interface JournalRegistry {
  /** The newest row, which is the node's current output; undefined when nothing is registered. */
  current(): Promise<JournalRow | undefined>;
  /** Every row, oldest first. */
  rows(): Promise<JournalRow[]>;
  find(outputIdentifier: string): Promise<JournalRow | undefined>;
  /**
   * Inserts `config` and applies `patches` in one transaction. With `expectedCurrentId` (the id of the
   * row the new one builds on, null for none) the insert is a compare-and-swap on the head, checked
   * first: when the current row is another one, nothing is written and the call throws PublishConflict,
   * so two publishers never build on the same head, nor does one take the other's row for its own.
   * Then idempotent on outputIdentifier: when a row with it exists, that row is returned (created:
   * false) and nothing is written.
   */
  register(
    config: JournalRowConfig,
    patches?: readonly RowPatch[],
    expectedCurrentId?: number | null,
  ): Promise<{ row: JournalRow; created: boolean }>;
  /** Applies every patch in one transaction; the patched rows must exist. */
  patch(patches: readonly RowPatch[]): Promise<void>;
  /** Removes rows in one transaction; absent identifiers are ignored. */
  remove(outputIdentifiers: readonly string[]): Promise<void>;
}
