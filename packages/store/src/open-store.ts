import { fileURLToPath } from "node:url";
import { StoreError } from "@zarr-stream/spec";
import { FsStore } from "./fs-store.js";
import { MemoryStore } from "./memory-store.js";
import { S3Store } from "./s3-store.js";
import type { OpenedStore } from "./store.js";

/**
 * Builds the store for a URL of the scheme it was registered under: one with every capability and a
 * close(), since openStore promises its callers both (writers fence, and an S3 client must be closed).
 */
export type StoreFactory = (url: string) => OpenedStore;

const SCHEME = /^([A-Za-z][A-Za-z0-9+.-]*):\/\//;
const factories = new Map<string, StoreFactory>();
const memoryStores = new Map<string, MemoryStore>();

/** Adds or replaces the backend for `scheme://...` URLs (e.g. an S3Store for "s3"). */
export function registerStoreScheme(scheme: string, factory: StoreFactory): void {
  if (typeof scheme !== "string" || !/^[A-Za-z][A-Za-z0-9+.-]*$/.test(scheme)) {
    throw new StoreError(`store scheme ${JSON.stringify(scheme)} is not a URL scheme name`);
  }
  if (typeof factory !== "function") throw new StoreError(`store factory for "${scheme}" is not a function`);
  factories.set(scheme.toLowerCase(), factory);
}

/**
 * Opens the store a URL names: `file://` URLs and plain paths give an FsStore, `memory://<name>` the
 * process-wide MemoryStore of that name, `s3://bucket/prefix` an S3Store, other schemes whatever was
 * registered for them. Every one can be read, written, listed and fenced, and has close().
 */
export function openStore(url: string): OpenedStore {
  if (typeof url !== "string" || url === "") throw new StoreError("store URL is empty");
  const scheme = SCHEME.exec(url)?.[1]?.toLowerCase();
  if (scheme === undefined) return new FsStore(url);
  const factory = factories.get(scheme);
  if (factory === undefined) throw new StoreError(`no store backend for scheme "${scheme}" in ${url}`);
  return factory(url);
}

registerStoreScheme("file", (url) => {
  let path: string;
  try {
    path = fileURLToPath(url);
  } catch (cause) {
    throw new StoreError(`${url} is not a local file URL`, "", { cause });
  }
  return new FsStore(path);
});

registerStoreScheme("memory", (url) => {
  const name = url.slice(url.indexOf("://") + 3);
  if (name === "") throw new StoreError(`${url} names no memory store (use memory://<name>)`);
  let store = memoryStores.get(name);
  if (store === undefined) {
    store = new MemoryStore(name);
    memoryStores.set(name, store);
  }
  return store;
});

// Endpoint, region, credentials and path style come from the AWS environment variables, the request
// deadline from ZSTREAM_S3_TIMEOUT_MS (see S3Store): a URL carries no options.
registerStoreScheme("s3", (url) => S3Store.fromUrl(url));
