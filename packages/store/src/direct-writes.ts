import { unlink } from "node:fs/promises";
import { type DirectFileWriter, directFileWriter } from "@zarr-stream/fileio";

/**
 * Objects at least this large are staged around the page cache. Shards are hundreds of kilobytes to
 * megabytes; metadata, manifests and tokens stay far below and keep the plain buffered path.
 */
export const DIRECT_WRITE_MIN = 256 << 10;

/**
 * How FsStore writes a large staged object. Every shard is written once and fsynced at once, and the
 * writer never reads it back, so the copy into the page cache buys nothing and costs a large share of
 * the writer's CPU (figures in packages/spec/docs/history.md). The fileio addon writes with O_DIRECT
 * instead (`directFileWriter`). Without the addon, with ZSTREAM_NATIVE_FS=0, or after a filesystem has
 * refused direct I/O once (EINVAL, ENOTSUP), writes take the buffered path.
 */
export class DirectWrites {
  #writer: DirectFileWriter | undefined;

  /** The addon's writer unless ZSTREAM_NATIVE_FS=0. */
  static fromEnvironment(): DirectWrites {
    return new DirectWrites(nativeFilesEnabled() ? directFileWriter() : undefined);
  }

  constructor(writer: DirectFileWriter | undefined) {
    this.#writer = writer;
  }

  /**
   * Creates `path` holding `bytes`, fsynced, and answers true; or answers false, leaving nothing at `path`,
   * when the object is small or direct writes are off. Other failures reject with the OS error.
   * `beneath`: the length of path's trusted prefix (fileio's DirectFileWriter).
   */
  async write(path: string, bytes: Uint8Array, beneath = 0): Promise<boolean> {
    const writer = this.#writer;
    if (writer === undefined || bytes.length < DIRECT_WRITE_MIN) return false;
    try {
      await writer(path, bytes, beneath);
      return true;
    } catch (err) {
      if (!refusesDirectIo(err)) throw err;
      this.#writer = undefined;
      await unlink(path).catch(() => undefined);
      return false;
    }
  }
}

function refusesDirectIo(err: unknown): boolean {
  const code = typeof err === "object" && err !== null && "code" in err ? err.code : undefined;
  return code === "EINVAL" || code === "ENOTSUP" || code === "EOPNOTSUPP";
}

/** FsStore does local file I/O through @zarr-stream/fileio unless ZSTREAM_NATIVE_FS=0 (node:fs only). */
export function nativeFilesEnabled(): boolean {
  return process.env.ZSTREAM_NATIVE_FS !== "0";
}
