import { execFileSync } from "node:child_process";
import {
  closeSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  rmSync,
  statfsSync,
  truncateSync,
  writeSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/**
 * Small tmpfs mounts for the disk-full suites: a file system that really fills up, mounted by the test
 * (`mount -t tmpfs`, which needs root on Linux; CI runs as root). Where no tmpfs can be mounted,
 * `tmpfsSkipReason` says why, and the suites skip with that reason and print it.
 */
export const PAGE = 4096;

let probed: { reason: string | undefined } | undefined;

/** Why no tmpfs can be mounted here (found by mounting one), or undefined when one can. */
export function tmpfsSkipReason(): string | undefined {
  probed ??= { reason: probe() };
  return probed.reason;
}

function probe(): string | undefined {
  if (process.platform !== "linux") return `tmpfs mounts are Linux's, this is ${process.platform}`;
  const dir = mkdtempSync(join(tmpdir(), "zs-tmpfs-probe-"));
  try {
    execFileSync("mount", ["-t", "tmpfs", "-o", "size=16k", "tmpfs", dir], { stdio: "pipe" });
  } catch (err) {
    const stderr = String((err as { stderr?: unknown }).stderr ?? "").trim();
    rmSync(dir, { recursive: true, force: true });
    return `mount -t tmpfs failed (uid ${process.getuid?.()}): ${stderr || String(err)}`;
  }
  execFileSync("umount", [dir]);
  rmSync(dir, { recursive: true, force: true });
  return undefined;
}

export interface Tmpfs {
  /** The mount point. */
  dir: string;
  /** Free bytes (what an unprivileged writer may still use). */
  free(): number;
  /**
   * Fills the file system with one file until a write finds it full, then gives `pages` pages back;
   * returns the filler's path (delete it to free the space).
   */
  fill(pages: number): string;
  /**
   * Uses up the inodes (nr_inodes) with empty files until creating one finds none left, then gives
   * `left` back; returns the files' directory (delete it to free them).
   */
  fillInodes(left: number): string;
  /** Every file and directory below the mount, as paths relative to it. */
  walk(): string[];
  umount(): void;
}

/** Mounts a tmpfs of `size` bytes (and `nrInodes` inodes, when given) on a fresh directory below `parent`. */
export function mountTmpfs(parent: string, size: number, nrInodes?: number): Tmpfs {
  const dir = mkdtempSync(join(parent, "tmpfs-"));
  const options = [`size=${size}`, ...(nrInodes === undefined ? [] : [`nr_inodes=${nrInodes}`])].join(",");
  execFileSync("mount", ["-t", "tmpfs", "-o", options, "tmpfs", dir], { stdio: "pipe" });
  let fillers = 0;
  return {
    dir,
    free() {
      const s = statfsSync(dir);
      return s.bavail * s.bsize;
    },
    fill(pages) {
      const filler = join(dir, `filler-${fillers++}`);
      const fd = openSync(filler, "w");
      const chunk = new Uint8Array(64 * PAGE);
      let size = 0;
      try {
        for (let n = chunk.length; n >= PAGE; ) {
          try {
            size += writeSync(fd, chunk, 0, n);
          } catch (err) {
            if ((err as { code?: string }).code !== "ENOSPC") throw err;
            n /= 2;
          }
        }
      } finally {
        closeSync(fd);
      }
      truncateSync(filler, Math.max(0, size - pages * PAGE));
      return filler;
    },
    fillInodes(left) {
      const files = join(dir, `inodes-${fillers++}`);
      mkdirSync(files);
      let n = 0;
      try {
        for (; ; n++) closeSync(openSync(join(files, String(n)), "wx"));
      } catch (err) {
        if ((err as { code?: string }).code !== "ENOSPC") throw err;
      }
      for (let i = 0; i < left && i < n; i++) rmSync(join(files, String(n - 1 - i)));
      return files;
    },
    walk() {
      const out: string[] = [];
      const visit = (rel: string) => {
        for (const e of readdirSync(join(dir, rel), { withFileTypes: true })) {
          const path = rel === "" ? e.name : `${rel}/${e.name}`;
          out.push(path);
          if (e.isDirectory()) visit(path);
        }
      };
      visit("");
      return out;
    },
    umount() {
      execFileSync("umount", [dir]);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
