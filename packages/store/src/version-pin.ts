import { ObjectChanged } from "@zarr-stream/spec";

/**
 * What one read of a version-pinned object answered: its value and the version it came from (undefined
 * when the answer names none: a server that sends no ETag, an S3 416), "absent", or "changed" when the
 * store refused the read because the object's version is no longer `ifMatch` (HTTP 412).
 */
export type PinnedAnswer<T> = { value: T; version: string | undefined } | "absent" | "changed";

/**
 * The pin of a store whose objects carry a version (S3 and HTTP: ETag; MemoryStore: its write counter):
 * the first answer that names a version pins it, and every later read is asked with it as `ifMatch` and
 * must come back with it. Checking the answer's version as well as sending If-Match keeps a server that
 * ignores If-Match from mixing versions unseen. An answer that names no version neither pins nor is
 * checked, so a server that sends no ETag reads as a store without pins does.
 */
export class VersionPin {
  #version: string | undefined;

  constructor(
    readonly key: string,
    /** Who reads, for messages: "S3Store s3://bucket/prefix". */
    readonly reader: string,
  ) {}

  /** The version pinned so far, to send as If-Match. */
  get version(): string | undefined {
    return this.#version;
  }

  async read<T>(
    what: string,
    read: (ifMatch: string | undefined) => Promise<PinnedAnswer<T>>,
  ): Promise<T | undefined> {
    const asked = this.#version;
    const got = await read(asked);
    // Another read may have pinned a version while this one was in flight.
    const pinned = this.#version;
    if (got === "absent" && pinned === undefined) return undefined;
    const version = typeof got === "object" ? got.version || undefined : undefined;
    if (typeof got !== "object" || (pinned !== undefined && version !== undefined && version !== pinned)) {
      const now = got === "absent" ? "is gone" : got === "changed" ? "was replaced" : `is version ${version}`;
      throw new ObjectChanged(
        `${this.reader} ${what} ${JSON.stringify(this.key)}: the object ${now} since this read pinned version ${pinned ?? asked}`,
        this.key,
      );
    }
    if (pinned === undefined) this.#version = version;
    return got.value;
  }
}
