import { createRequire } from "node:module";

/** The exports of native/addon.c. */
export interface FileIoAddon {
  writeFileDirect(path: string, beneath: number, bytes: Uint8Array): Promise<void>;
  readFileInto(
    path: string,
    beneath: number,
    position: number,
    length: number,
    fromEnd: 0 | 1,
    into: Uint8Array,
  ): Promise<[number, number]>;
  /** As readFileInto, through a descriptor: a path opens one and keeps it open, an fd reads through it. */
  readPinnedInto(
    pathOrFd: string | number,
    beneath: number,
    position: number,
    length: number,
    fromEnd: 0 | 1,
    into: Uint8Array,
  ): Promise<[number, number, number]>;
  /** lstat of the path's last component, confined as reads are: [kind, ino, size, mtimeNs]. */
  statBeneath(path: string, beneath: number): Promise<[FileKind, bigint, number, bigint]>;
}

export type FileKind = "file" | "link" | "other";

let loaded: { addon: FileIoAddon } | { error: string } | undefined;

/**
 * Loads build/Release/zstream_fileio.node once (built by scripts/build-native.mjs at install time), or
 * the addon at ZSTREAM_FILEIO_ADDON_PATH (the sanitizer test's instrumented build).
 */
export function loadFileIoAddon(): { addon: FileIoAddon } | { error: string } {
  if (!loaded) {
    try {
      // dist/src/native-addon.js → package root
      const path = process.env.ZSTREAM_FILEIO_ADDON_PATH || "../../build/Release/zstream_fileio.node";
      loaded = { addon: createRequire(import.meta.url)(path) };
    } catch (e) {
      loaded = { error: e instanceof Error ? e.message.split("\n")[0]! : String(e) };
    }
  }
  return loaded;
}
