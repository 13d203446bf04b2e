import { ObjectChanged, TornRead } from "@zarr-stream/spec";
import type { PinnedObject, ReadableStore } from "@zarr-stream/store";

/**
 * How many times one shard read is made, each from the version the shard has when it starts, before it
 * gives up with TornRead. A shard is rewritten at most once per writer flush, so a read that loses to a
 * rewrite this many times in a row is racing a writer far faster than it reads.
 */
export const SHARD_READ_ATTEMPTS = 5;

/**
 * Reads of `key` through the store's pin (packages/spec/docs/consistent-reads.md), or through its plain
 * reads when it has none: such a store is not snapshot-consistent, and a shard replaced between the
 * index read and the body reads decodes the new object's bytes at the old index's offsets, as before.
 */
export function pinOf(store: ReadableStore, key: string): PinnedObject {
  if (typeof store.pin === "function") return store.pin(key);
  const { getRangeInto, getSuffixInto } = store;
  return {
    key,
    getRange: (offset, length) => store.getRange(key, offset, length),
    getSuffix: (n) => store.getSuffix(key, n),
    getRangeInto:
      getRangeInto && ((offset, length, into) => getRangeInto.call(store, key, offset, length, into)),
    getSuffixInto: getSuffixInto && ((n, into) => getSuffixInto.call(store, key, n, into)),
    close: () => Promise.resolve(),
  };
}

/**
 * Runs `read` (every read of one shard: its index, then its bodies) on a pin of `key`; when the shard
 * changes under it (ObjectChanged), runs it again on a new pin, which sees the new version from its
 * index on, up to SHARD_READ_ATTEMPTS times, then throws TornRead. `attempt` counts from 1, so a read
 * knows that an earlier attempt may have written into its target.
 */
export async function readPinned<T>(
  store: ReadableStore,
  key: string,
  read: (object: PinnedObject, attempt: number) => Promise<T>,
): Promise<T> {
  let changed: ObjectChanged | undefined;
  for (let attempt = 1; attempt <= SHARD_READ_ATTEMPTS; attempt++) {
    const object = pinOf(store, key);
    try {
      return await read(object, attempt);
    } catch (err) {
      if (!(err instanceof ObjectChanged)) throw err;
      changed = err;
    } finally {
      await object.close();
    }
  }
  throw new TornRead(
    `shard ${JSON.stringify(key)} of ${store.url} was replaced during each of ${SHARD_READ_ATTEMPTS} reads: no read saw one version from its index to its last body`,
    key,
    SHARD_READ_ATTEMPTS,
    { cause: changed },
  );
}
