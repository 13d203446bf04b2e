export type { WriterControlPlaneOptions } from "./control-plane-link.js";
export { LEASE_PREFIX, leaseKey } from "./fenced-objects.js";
export {
  type CollectOptions,
  clearRound,
  collectTokens,
  MailboxTimeout,
  mailboxKey,
  postToken,
} from "./mailbox.js";
export { type WriterOptions, ZarrStreamWriter } from "./writer.js";
