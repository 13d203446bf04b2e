import { CommitError } from "@zarr-stream/spec";
import type { Store } from "@zarr-stream/store";
import { commitSeqOf } from "./commit-intent.js";
import { clearRound, collectTokens, MailboxTimeout, missingTokens } from "./mailbox.js";
import type { RunSettings } from "./run-options.js";
import type { ZarrStreamWriter } from "./writer.js";

/** The owner: waits for every token of the round (reporting who is missing), commits, clears it. */
export async function commitRound(
  store: Store,
  writer: ZarrStreamWriter,
  round: number,
  count: number,
  o: RunSettings,
): Promise<void> {
  // The round's commit produces commit_seq `round`: a retry whose commit landed (and whose clearing
  // failed part-way, so its tokens may be gone) only clears what is left, receipts included.
  if (commitSeqOf(writer.lastManifest) >= round) {
    await clearRound(store, round, true);
    o.onEvent?.({ kind: "committed", round, nCommitted: writer.committedCount });
    return;
  }
  const started = Date.now();
  for (;;) {
    const left = o.timeoutMs - (Date.now() - started);
    try {
      const tokens = await collectTokens(store, round, count, {
        timeoutMs: Math.max(0, Math.min(o.reportEveryMs, left)),
        pollMs: o.pollMs,
      });
      const receipt = await writer.commit(tokens);
      await clearRound(store, round);
      o.onEvent?.({ kind: "committed", round, nCommitted: receipt.n_committed });
      return;
    } catch (err) {
      // A token whose writer was taken over between its collection and the commit is stale: the commit
      // wrote nothing, and the round waits for the live handle's token, which replaces it.
      if (err instanceof CommitError && err.reason === "stale-token") continue;
      if (!(err instanceof MailboxTimeout)) throw err;
      const waitedMs = Date.now() - started;
      if (waitedMs >= o.timeoutMs) {
        throw new MailboxTimeout(
          `${missingTokens(err.round, err.missing, waitedMs, err.notes)}; gave up: restart the missing writer${err.missing.length > 1 ? "s" : ""} with the same id (they resume), then restart writer 0`,
          err.round,
          err.missing,
          err.notes,
        );
      }
      o.onEvent?.({ kind: "waiting", round, missing: err.missing, waitedMs });
    }
  }
}
