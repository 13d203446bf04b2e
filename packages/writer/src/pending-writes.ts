import {
  COMMIT_TOKEN_SCHEMA,
  type CommitToken,
  canonicalRegion,
  type Region,
  type TokenBlob,
} from "@zarr-stream/spec";
import { compareBlobs } from "./manifest-doc.js";

/** Who a token comes from: the writer, its region and the schema fingerprint it wrote under. */
export interface TokenIdentity {
  writer: number;
  region: Region;
  fingerprint: string;
}

function blobId(b: TokenBlob): string {
  return b.scope === "static" ? `static/${b.key}` : `record/${b.record}/${b.key}`;
}

function compareTokenBlobs(a: TokenBlob, b: TokenBlob): number {
  return compareBlobs({ ...a, writer: 0 }, { ...b, writer: 0 });
}

/**
 * What one handle has written since its last token (seed §5.2): records with their t, statics, blobs,
 * and the objects they live in. A token takes a snapshot; only what the token carries is dropped, so
 * writes made while it travels stay pending.
 */
export class PendingWrites {
  readonly records = new Map<number, number>();
  readonly statics = new Set<string>();
  readonly #blobs = new Map<string, TokenBlob>();
  readonly objects = new Set<string>();

  addBlob(entry: TokenBlob): void {
    this.#blobs.set(blobId(entry), entry);
  }

  addObjects(keys: Iterable<string>): void {
    for (const key of keys) this.objects.add(key);
  }

  /** Records, statics or blobs are pending (objects alone commit nothing). */
  hasData(): boolean {
    return this.records.size > 0 || this.statics.size > 0 || this.#blobs.size > 0;
  }

  /**
   * The token of everything pending, or, with `records`, of those records only (with every static, blob and
   * object): a flush names the records whose data its writes include, taken before they start.
   */
  token(id: TokenIdentity, records?: ReadonlySet<number>): CommitToken {
    return {
      schema: COMMIT_TOKEN_SCHEMA,
      writer: id.writer,
      region: canonicalRegion(id.region),
      fingerprint: id.fingerprint,
      records: [...this.records]
        .filter(([index]) => records === undefined || records.has(index))
        .sort((a, b) => a[0] - b[0])
        .map(([index, t]) => ({ index, t })),
      statics: [...this.statics].sort(),
      blobs: [...this.#blobs.values()].sort(compareTokenBlobs),
      objects: [...this.objects].sort(),
    };
  }

  /** Removes what `token` carries. */
  drop(token: CommitToken): void {
    for (const r of token.records) this.records.delete(r.index);
    for (const name of token.statics) this.statics.delete(name);
    for (const b of token.blobs) this.#blobs.delete(blobId(b));
    for (const key of token.objects) this.objects.delete(key);
  }
}
