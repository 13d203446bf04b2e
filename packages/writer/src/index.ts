export { INTENT_KEY } from "./commit-intent.js";
export { LEDGER_PREFIX, RECEIPT_PREFIX, readPublished } from "./commit-ledger.js";
export type { WriterControlPlaneOptions } from "./control-plane-link.js";
export { type RunRank, runRank } from "./launcher-env.js";
export {
  type CollectOptions,
  clearRound,
  collectTokens,
  MailboxTimeout,
  mailboxKey,
  postToken,
} from "./mailbox.js";
export { type ManifestFormChange, setManifestPages } from "./manifest-form.js";
export { type RunEvent, type RunOptions, StreamRun } from "./run.js";
export { type WriterOptions, ZarrStreamWriter } from "./writer.js";
export { LEASE_PREFIX, leaseKey } from "./writer-lease.js";
