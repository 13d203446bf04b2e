import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { inCi, REPO } from "./repo.js";

/** A Node release setup installed into .tools/ (scripts/setup-node-lts.mjs). */
export interface NodeBuild {
  version: string;
  /** The node binary. */
  path: string;
}

/** The LTS releases the tests also run on, as for Python: `skip` outside CI when one is missing. */
export interface NodeBuilds {
  readonly builds: NodeBuild[];
  /** Why the test skips: set only outside CI, and only when a release is missing. */
  readonly skip: string | undefined;
  /** Every release, or an error naming the missing ones (a failure under CI). */
  require(): NodeBuild[];
}

interface NodeLtsModule {
  installedNodes(root: string): { version: string; path: string; installed: boolean }[];
}

/** The Node LTS releases of scripts/node-lts.mjs and where setup put them. */
export async function ltsNodeBuilds(env: NodeJS.ProcessEnv = process.env): Promise<NodeBuilds> {
  const lts = (await import(pathToFileURL(join(REPO, "scripts", "node-lts.mjs")).href)) as NodeLtsModule;
  const all = lts.installedNodes(REPO);
  const missing = all.filter((n) => !n.installed).map((n) => `Node ${n.version} (${n.path})`);
  const why =
    missing.length === 0
      ? undefined
      : `${missing.join(", ")} missing: run \`node scripts/setup-node-lts.mjs\``;
  const builds = all.filter((n) => n.installed).map(({ version, path }) => ({ version, path }));
  return {
    builds,
    skip: why !== undefined && !inCi(env) ? why : undefined,
    require() {
      if (why !== undefined) throw new Error(why);
      return builds;
    },
  };
}
