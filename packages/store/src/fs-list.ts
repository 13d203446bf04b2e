import { closeSync, type Dirent, openSync } from "node:fs";
import { readdir } from "node:fs/promises";
import { FD_PATHS } from "@zarr-stream/fileio";
import { ConfinedDir, DIR_FLAGS } from "./fs-confine.js";
import { errorCode, fsError, isAbsent } from "./fs-errors.js";
import { TEMP_PREFIX } from "./keys.js";

/**
 * The keys under `root` that start with `prefix`, sorted. Walks real directories only: the prefix's own
 * directories are opened as ConfinedDir does (a link there is a SymlinkRefused), and below them each
 * directory is opened with O_NOFOLLOW through its parent's descriptor, so a link, or a directory swapped
 * for one during the walk, is never listed through. Names no key could have are not objects.
 */
export async function listKeys(root: string, prefix: string): Promise<string[]> {
  const cut = prefix.lastIndexOf("/") + 1;
  const dir = ConfinedDir.open(root, prefix, false, "list");
  if (dir === undefined) return [];
  const keys: string[] = [];
  try {
    await walk(dir.path, prefix.slice(0, cut), prefix.slice(cut), keys, prefix);
  } finally {
    dir.close();
  }
  return keys.sort();
}

/**
 * Lists `dir` (a path the caller holds open) and, one at a time, the directories in it: depth-first, so
 * the descriptors open at once are one per level, however wide the tree.
 */
async function walk(dir: string, keyPrefix: string, fragment: string, out: string[], prefix: string) {
  let entries: Dirent[];
  try {
    entries = await readdir(dir, { withFileTypes: true });
  } catch (err) {
    if (isAbsent(err)) return;
    throw fsError("list", prefix, err);
  }
  for (const entry of entries) {
    const name = entry.name;
    // Names no key could have (staging files, backslashes) are not objects of this store.
    if (name.startsWith(TEMP_PREFIX) || name.includes("\\") || !name.startsWith(fragment)) continue;
    if (entry.isFile()) out.push(keyPrefix + name);
    if (!entry.isDirectory()) continue;
    const fd = openChild(`${dir}/${name}`, prefix);
    if (fd === undefined) continue;
    try {
      const below = FD_PATHS === undefined ? `${dir}/${name}` : `${FD_PATHS}/${fd}`;
      await walk(below, `${keyPrefix}${name}/`, "", out, prefix);
    } finally {
      closeSync(fd);
    }
  }
}

/** The directory at `path`, not through a link; undefined when it went away or is a link now. */
function openChild(path: string, prefix: string): number | undefined {
  try {
    return openSync(path, DIR_FLAGS);
  } catch (err) {
    if (isAbsent(err) || errorCode(err) === "ELOOP") return undefined;
    throw fsError("list", prefix, err);
  }
}
