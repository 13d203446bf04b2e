/**
 * The browser-safe part of the store package: the capability interfaces and their guards, and the key
 * rules every store holds its keys to. Nothing reachable from here imports a node: module, so a page can
 * implement a ReadableStore (over fetch, say) that accepts and refuses exactly the keys the backends do,
 * and hand stores to zarrita and back (toZarritaStore, fromZarritaStore).
 */
export * as check from "./arguments.js";
export { assertByteCount, assertValidKey, assertValidPrefix, keyProblem, TEMP_PREFIX } from "./keys.js";
export { loopbackHost } from "./loopback.js";
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
