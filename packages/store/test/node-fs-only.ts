/** What `make` builds while ZSTREAM_NATIVE_FS=0: an FsStore (or its parts) using node:fs alone. */
export function nodeFsOnly<T>(make: () => T): T {
  const before = process.env.ZSTREAM_NATIVE_FS;
  process.env.ZSTREAM_NATIVE_FS = "0";
  try {
    return make();
  } finally {
    if (before === undefined) delete process.env.ZSTREAM_NATIVE_FS;
    else process.env.ZSTREAM_NATIVE_FS = before;
  }
}
