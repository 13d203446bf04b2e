// The write-or-check step the build's generators share (write-schemas.mjs, write-validators.mjs).
import { readFileSync, writeFileSync } from "node:fs";

/**
 * Writes `text` to `url` unless the file already holds it; with `check`, writes nothing and reports a
 * file that differs (`name`, as the message shows it). Returns whether the file was stale.
 */
export function writeOrCheck(url, text, check, name) {
  let current;
  try {
    current = readFileSync(url, "utf8");
  } catch {
    current = undefined;
  }
  if (current === text) return false;
  if (check) console.error(`stale: packages/spec/${name} (npm run build -w packages/spec)`);
  else writeFileSync(url, text);
  return check;
}
