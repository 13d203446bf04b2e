import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";

export const BIN = fileURLToPath(new URL("../src/bin.js", import.meta.url));

export interface Run {
  status: number;
  stdout: string;
  stderr: string;
}

/** Runs `zstream args...` as a child process, the way a user does. */
export function zstream(...args: string[]): Run {
  const r = spawnSync(process.execPath, [BIN, ...args], {
    encoding: "utf8",
    env: { ...process.env, FORCE_COLOR: "0" },
  });
  return { status: r.status ?? -1, stdout: r.stdout, stderr: r.stderr };
}

export { tempDir } from "@zarr-stream/test-support/temp-dirs";

export const SMALL_DEMO = ["--grid", "36x72", "--records", "12", "--writers", "4", "--commit-every", "4"];

/** Runs `zstream args...` in this process (for error matrices, where a child per case costs seconds). */
export async function zstreamInProcess(...args: string[]): Promise<Run> {
  const { runCli } = await import("../src/cli.js");
  let stdout = "";
  let stderr = "";
  const sink = (append: (s: string) => void) =>
    ({
      isTTY: false,
      write: (s: string | Uint8Array) => {
        append(typeof s === "string" ? s : Buffer.from(s).toString("utf8"));
        return true;
      },
    }) as unknown as NodeJS.WritableStream;
  const status = await runCli(args, {
    stdout: sink((s) => {
      stdout += s;
    }),
    stderr: sink((s) => {
      stderr += s;
    }),
  });
  return { status, stdout, stderr };
}
