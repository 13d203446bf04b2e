import { constants } from "node:fs";
import { access, stat } from "node:fs/promises";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { openStore, type Store } from "@zarr-stream/store";
import { UsageError } from "./command-line.js";

/** The local path a STORE argument names (a path or file:// URL); undefined for a remote one (s3://, ...). */
export function localPath(url: string): string | undefined {
  const scheme = /^([a-zA-Z][a-zA-Z0-9+.-]*):\/\//.exec(url)?.[1]?.toLowerCase();
  if (scheme === undefined) return url;
  if (scheme !== "file") return undefined;
  try {
    return fileURLToPath(url);
  } catch {
    return undefined; // openStore names the malformed URL
  }
}

async function kindOf(path: string): Promise<"dir" | "file" | "missing"> {
  try {
    return (await stat(path)).isDirectory() ? "dir" : "file";
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT" || (e as NodeJS.ErrnoException).code === "ENOTDIR")
      return "missing";
    throw e;
  }
}

/**
 * Opens an existing store: a local STORE that does not exist, or is a file, is a UsageError naming it,
 * before anything reads (or a later write could create) it. A remote URL is opened as given.
 */
export async function openExistingStore(url: string, what = "STORE"): Promise<Store> {
  await requireStorePath(url, what);
  return openStore(url);
}

/** A local STORE must be an existing directory; a remote URL passes (its service answers for it). */
export async function requireStorePath(url: string, what = "STORE"): Promise<void> {
  const path = localPath(url);
  if (path === undefined) return;
  const kind = await kindOf(path);
  if (kind === "missing") throw new UsageError(`${what} ${url} does not exist`);
  if (kind === "file") throw new UsageError(`${what} ${url} is a file, not a store directory`);
}

/** An input file argument must exist and be a file. */
export async function requireInputFile(path: string, what: string): Promise<void> {
  const kind = await kindOf(path);
  if (kind === "missing") throw new UsageError(`${what} ${path} does not exist`);
  if (kind === "dir") throw new UsageError(`${what} ${path} is a directory, not a file`);
}

/**
 * An output file's directory must exist and be writable, and the file must not be a directory: checked
 * before the command reads anything, so a long read never ends in a raw ENOENT.
 */
export async function requireOutputFile(path: string, option = "--out"): Promise<string> {
  const file = resolve(path);
  const dir = dirname(file);
  const dirKind = await kindOf(dir);
  if (dirKind === "missing") throw new UsageError(`${option} ${path}: directory ${dir} does not exist`);
  if (dirKind === "file") throw new UsageError(`${option} ${path}: ${dir} is a file, not a directory`);
  if ((await kindOf(file)) === "dir") throw new UsageError(`${option} ${path} is a directory`);
  try {
    await access(dir, constants.W_OK);
  } catch {
    throw new UsageError(`${option} ${path}: directory ${dir} is not writable`);
  }
  return file;
}

/** Writing an output file failed after the checks (a race, a full disk): the message names the file. */
export function outputWriteError(path: string, option: string, e: unknown): unknown {
  const code = (e as NodeJS.ErrnoException).code;
  if (code === undefined || !["EACCES", "EPERM", "EROFS", "ENOENT", "ENOTDIR", "EISDIR"].includes(code))
    return e;
  return new UsageError(`${option} ${path}: cannot write it (${(e as Error).message})`);
}
