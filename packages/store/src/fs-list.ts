import type { Dirent } from "node:fs";
import { lstat, readdir } from "node:fs/promises";
import { join } from "node:path";
import { fsError, isAbsent } from "./fs-errors.js";
import { TEMP_PREFIX } from "./keys.js";

/**
 * The keys under `root` that start with `prefix`, sorted. Walks real directories only: a symbolic link
 * inside the root is never followed by a listing, and names no key could have are not objects.
 */
export async function listKeys(root: string, prefix: string): Promise<string[]> {
  const cut = prefix.lastIndexOf("/") + 1;
  const dirKey = prefix.slice(0, cut);
  if (!(await isRealDir(root, dirKey, prefix))) return [];
  const keys: string[] = [];
  await walk(join(root, dirKey), dirKey, prefix.slice(cut), keys, prefix);
  return keys.sort();
}

/** True when every segment of dirKey ("a/b/") is a real directory, so list walks no symlink to reach it. */
async function isRealDir(root: string, dirKey: string, prefix: string): Promise<boolean> {
  let path = root;
  for (const segment of dirKey.split("/").slice(0, -1)) {
    path = join(path, segment);
    try {
      if (!(await lstat(path)).isDirectory()) return false;
    } catch (err) {
      if (isAbsent(err)) return false;
      throw fsError("list", prefix, err);
    }
  }
  return true;
}

async function walk(dir: string, keyPrefix: string, fragment: string, out: string[], prefix: string) {
  let entries: Dirent[];
  try {
    entries = await readdir(dir, { withFileTypes: true });
  } catch (err) {
    if (isAbsent(err)) return;
    throw fsError("list", prefix, err);
  }
  const below: Promise<void>[] = [];
  for (const entry of entries) {
    const name = entry.name;
    // Names no key could have (staging files, backslashes) are not objects of this store.
    if (name.startsWith(TEMP_PREFIX) || name.includes("\\") || !name.startsWith(fragment)) continue;
    if (entry.isDirectory()) below.push(walk(join(dir, name), `${keyPrefix}${name}/`, "", out, prefix));
    else if (entry.isFile()) out.push(keyPrefix + name);
  }
  await Promise.all(below);
}
