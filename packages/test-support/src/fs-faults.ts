import fs from "node:fs";
import { syncBuiltinESMExports } from "node:module";
import { constants, devNull } from "node:os";
import { join } from "node:path";

/**
 * Which file I/O a fault fails: `read` (FileHandle reads), `write` (FileHandle writes and writeSync) or
 * `sync` (FileHandle sync and datasync, fsync).
 */
export type FsFaultOp = "read" | "write" | "sync";

/** One scripted fault: the first I/O of kind `op` on a file `path` accepts fails with `code`, once (or `times` times). */
export interface FsFault {
  op: FsFaultOp;
  code: "EIO" | "ENOSPC" | "EDQUOT";
  /** The file's path as opened, with a `/proc/self/fd/N/` directory resolved to the directory's own path. */
  path: (path: string) => boolean;
  times?: number;
}

export interface FsFaults {
  script(...faults: FsFault[]): void;
  /** Every failure injected, in order. */
  readonly fired: { op: FsFaultOp; code: string; path: string }[];
  /** Runs `fn` with nothing injected (a test's own reads of the files it checks). */
  paused<T>(fn: () => Promise<T>): Promise<T>;
  /** Puts node:fs back as it was. */
  restore(): Promise<void>;
}

type AnyFn = (...args: never[]) => unknown;

/**
 * Fails chosen node:fs I/O of this process with an errno, as a dying disk (EIO) or a quota (EDQUOT) does:
 * the functions are replaced on the node:fs module objects and FileHandle's prototype, and the ES module
 * bindings re-synced (`syncBuiltinESMExports`), so code that imports `{ open } from "node:fs/promises"`
 * sees them. Files are known by the path they were opened with (fs/promises `open`, `openSync`), so only
 * I/O on files opened after the injection starts can fail. It reaches node:fs only: code that does its
 * I/O in a native addon (FsStore's, unless ZSTREAM_NATIVE_FS=0) is not affected.
 */
export async function injectFsFaults(): Promise<FsFaults> {
  const faults: { fault: FsFault; left: number }[] = [];
  const fired: FsFaults["fired"] = [];
  let pause = 0;
  const handlePaths = new WeakMap<object, string>();
  const fdPaths = new Map<number, string>();

  const readlink = fs.readlinkSync;
  /** `/proc/self/fd/N/name` (how FsStore names a file in a directory it holds open) as a real path. */
  const resolved = (path: string): string => {
    const m = /^\/proc\/self\/fd\/\d+(?=\/)/.exec(path);
    if (m === null) return path;
    try {
      return join(readlink(m[0]), path.slice(m[0].length));
    } catch {
      return path;
    }
  };
  const fault = (op: FsFaultOp, path: string | undefined): Error | undefined => {
    if (path === undefined || pause > 0) return undefined;
    const hit = faults.find((f) => f.left > 0 && f.fault.op === op && f.fault.path(path));
    if (hit === undefined) return undefined;
    hit.left--;
    const { code } = hit.fault;
    fired.push({ op, code, path });
    return Object.assign(new Error(`${code}: injected ${op} failure, '${path}'`), {
      code,
      errno: -(constants.errno as Record<string, number>)[code]!,
      syscall: op,
      path,
    });
  };

  const restores: (() => void)[] = [];
  const replace = <T extends object, K extends keyof T & string>(
    target: T,
    name: K,
    make: (original: T[K]) => T[K],
  ) => {
    const original = target[name];
    target[name] = make(original);
    restores.push(() => {
      target[name] = original;
    });
  };

  const probe = await fs.promises.open(devNull);
  const handleProto = Object.getPrototypeOf(probe) as Record<string, AnyFn>;
  await probe.close();

  replace(
    fs.promises,
    "open",
    (open) =>
      (async (...args: Parameters<typeof open>) => {
        const handle = await open(...args);
        if (typeof args[0] === "string") handlePaths.set(handle, resolved(args[0]));
        return handle;
      }) as typeof open,
  );
  for (const [names, op] of [
    [["read", "readv", "readFile"], "read"],
    [["write", "writev", "writeFile", "appendFile"], "write"],
    [["sync", "datasync"], "sync"],
  ] as const) {
    for (const name of names) {
      replace(
        handleProto,
        name,
        (original) =>
          function (this: object, ...args: never[]) {
            const err = fault(op, handlePaths.get(this));
            if (err !== undefined) return Promise.reject(err);
            return original.apply(this, args);
          },
      );
    }
  }
  replace(
    fs,
    "openSync",
    (openSync) =>
      ((...args: Parameters<typeof openSync>) => {
        const fd = openSync(...args);
        if (typeof args[0] === "string") fdPaths.set(fd, resolved(args[0]));
        return fd;
      }) as typeof openSync,
  );
  replace(
    fs,
    "closeSync",
    (closeSync) =>
      ((fd: number) => {
        fdPaths.delete(fd);
        closeSync(fd);
      }) as typeof closeSync,
  );
  replace(
    fs,
    "writeSync",
    (writeSync) =>
      ((fd: number, ...rest: unknown[]) => {
        const err = fault("write", fdPaths.get(fd));
        if (err !== undefined) throw err;
        return (writeSync as (...a: unknown[]) => number)(fd, ...rest);
      }) as typeof writeSync,
  );
  replace(
    fs,
    "fsyncSync",
    (fsyncSync) =>
      ((fd: number) => {
        const err = fault("sync", fdPaths.get(fd));
        if (err !== undefined) throw err;
        fsyncSync(fd);
      }) as typeof fsyncSync,
  );
  syncBuiltinESMExports();

  return {
    script(...more) {
      for (const f of more) faults.push({ fault: f, left: f.times ?? 1 });
    },
    fired,
    async paused(fn) {
      pause++;
      try {
        return await fn();
      } finally {
        pause--;
      }
    },
    async restore() {
      for (const undo of restores.reverse()) undo();
      restores.length = 0;
      syncBuiltinESMExports();
    },
  };
}
