import type { ListableStore, WritableStore } from "./store.js";

/** Every object of `store`, keyed in list order, for comparing a whole store before and after an operation. */
export async function snapshotStore(store: ListableStore): Promise<Map<string, Uint8Array>> {
  const objects = new Map<string, Uint8Array>();
  for (const key of await store.list("")) {
    const bytes = await store.get(key);
    // A key deleted between list and get was not there to snapshot.
    if (bytes !== undefined) objects.set(key, bytes);
  }
  return objects;
}

/** Copies every object of `from` into `to` (overwriting), returning the keys copied in order. */
export async function copyStore(from: ListableStore, to: WritableStore): Promise<string[]> {
  const copied: string[] = [];
  for (const key of await from.list("")) {
    const bytes = await from.get(key);
    if (bytes === undefined) continue;
    await to.put(key, bytes);
    copied.push(key);
  }
  return copied;
}
