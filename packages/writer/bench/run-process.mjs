// Child processes of the bench: each contender runs in its own, so its peak RSS and CPU are its own.
import { spawn } from "node:child_process";

/** Runs a process to completion; resolves with its stdout, rejects with its stderr tail. */
export function run(cmd, args, env = {}) {
  return new Promise((resolve, reject) => {
    const p = spawn(cmd, args, { env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    p.stdout.on("data", (d) => {
      out += d;
    });
    p.stderr.on("data", (d) => {
      err += d;
    });
    p.on("error", reject);
    p.on("close", (code) =>
      code === 0
        ? resolve(out)
        : reject(new Error(`${cmd} ${args.join(" ")} exited ${code}: ${err.slice(-2000)}`)),
    );
  });
}

/** The last line a process printed, parsed as JSON: a contender's result. */
export const lastJson = (out) => JSON.parse(out.trim().split("\n").pop());
