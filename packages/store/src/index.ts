export { withDeadline } from "./deadline.js";
export { FsStore } from "./fs-store.js";
export { loopbackHost } from "./loopback.js";
export { MemoryStore } from "./memory-store.js";
export { openStore, registerStoreScheme, type StoreFactory } from "./open-store.js";
export { S3_TIMEOUT_DEFAULTS, S3_TIMEOUT_ENV, S3Store, type S3StoreOptions } from "./s3-store.js";
export { copyStore, snapshotStore } from "./snapshot.js";
export * from "./store.js";
export { type PinnedAnswer, VersionPin } from "./version-pin.js";
export {
  type FromZarritaOptions,
  fromZarritaStore,
  toZarritaStore,
  type ZarritaAsyncMutable,
  type ZarritaAsyncReadable,
  type ZarritaGetOptions,
  type ZarritaPath,
  type ZarritaRange,
  type ZarritaReadable,
} from "./zarrita.js";
