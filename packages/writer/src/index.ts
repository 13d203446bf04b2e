export {
  type CollectOptions,
  clearRound,
  collectTokens,
  MailboxTimeout,
  mailboxKey,
  postToken,
} from "./mailbox.js";
export { serializeManifest } from "./manifest-doc.js";
export { type WriterOptions, ZarrStreamWriter } from "./writer.js";
