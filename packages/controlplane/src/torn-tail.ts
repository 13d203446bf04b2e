import type { Store } from "@zarr-stream/store";
import { ControlPlaneCorrupt } from "./errors.js";
import { cas } from "./store-cas.js";

const NEWLINE = 0x0a;

/**
 * Seals a segment whose last line is torn (a crashed non-atomic write: unterminated and unparseable, as
 * the reader accepted it) by rewriting it as its terminated prefix, conditionally on the version read.
 * Afterwards new segments may follow it: a torn line is only tolerated in the last segment of a live run
 * or before terminal events, so appending behind an unsealed one would make the whole run unreadable.
 * Returns false when there was nothing to seal.
 */
export async function sealTornSegment(store: Store, file: string): Promise<boolean> {
  const io = cas(store);
  const got = await io.get(file);
  if (got === undefined) return false;
  const end = got.bytes.lastIndexOf(NEWLINE) + 1;
  if (end === got.bytes.length) return false;
  if ((await io.put(file, got.bytes.slice(0, end), got.version)) === undefined) {
    throw new ControlPlaneCorrupt(`${file}: changed while its torn tail was being sealed`, file);
  }
  return true;
}
