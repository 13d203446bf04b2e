import { copyFile, mkdir, readdir } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

/**
 * The conformance kit: exactly the files another binding needs to run the corpus and the check, by the
 * name each has in the kit. The check finds the schemas beside itself, so the kit is one flat directory.
 */
export const KIT_FILES: Readonly<Record<string, string>> = {
  "README.md": "../../corpus/README.md",
  "write_spec_v2.json": "../../corpus/write_spec_v2.json",
  "write_spec_v2.schema.json": "../../corpus/write_spec_v2.schema.json",
  "write_v2_dump.schema.json": "../../corpus/write_v2_dump.schema.json",
  "crosscheck_write_v2.py": "../../python/crosscheck_write_v2.py",
};

/** Where a kit file lives in this package. */
export function kitSource(name: string): string {
  const rel = KIT_FILES[name];
  if (rel === undefined) throw new Error(`no kit file ${name}`);
  return fileURLToPath(new URL(rel, import.meta.url));
}

/**
 * Copies the kit into `dir` (created if missing). A directory holding anything else is refused, so an
 * export never mixes with files the kit did not bring (a stale dump, another corpus). Returns the paths
 * written.
 */
/** An export refused because the directory holds files the kit did not bring (exit 1: nothing written). */
export class KitExportRefused extends Error {
  override name = "KitExportRefused";
}

export async function exportKit(dir: string): Promise<string[]> {
  await mkdir(dir, { recursive: true });
  const foreign = (await readdir(dir)).filter((f) => !(f in KIT_FILES));
  if (foreign.length > 0)
    throw new KitExportRefused(
      `${dir} holds files that are not the kit's (${foreign.join(", ")}): export into an empty directory`,
    );
  const out: string[] = [];
  for (const name of Object.keys(KIT_FILES)) {
    await copyFile(kitSource(name), join(dir, name));
    out.push(join(dir, name));
  }
  return out;
}
