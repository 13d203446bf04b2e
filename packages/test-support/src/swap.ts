import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { findPython } from "./python.js";

const python = findPython({ modules: ["ctypes"] });

/** Why the swapper cannot run here (outside CI only; under CI=true `startSwapper` fails instead). */
export function swapSkipReason(): string | undefined {
  return python.skip;
}

/**
 * A child process exchanging the paths `a` and `b` (e.g. a directory and a symbolic link out of a store)
 * atomically with renameat2(RENAME_EXCHANGE), in a tight loop, for at most `seconds` so a test that
 * dies early leaves nothing running. Resolves once the first exchanges are done; `stop()` kills it and
 * says whether it was still swapping (it exits with the errno's text when renameat2 fails).
 */
export async function startSwapper(
  a: string,
  b: string,
  seconds = 120,
): Promise<{ child: ChildProcess; stop(): Promise<{ running: boolean; stderr: string }> }> {
  const loop = [
    "import ctypes, os, sys, time",
    "libc = ctypes.CDLL(None, use_errno=True)",
    "a, b = (os.fsencode(p) for p in sys.argv[1:3])",
    `end = time.time() + ${seconds}`,
    "n = 0",
    "while time.time() < end:",
    "    for _ in range(1000):",
    "        if libc.renameat2(-100, a, -100, b, 2) != 0:",
    "            sys.exit('renameat2: ' + os.strerror(ctypes.get_errno()))",
    "    n += 1000",
    "    if n == 1000: print('swapping', flush=True)",
  ].join("\n");
  const child = spawn(python.require(), ["-c", loop, a, b], { stdio: ["ignore", "pipe", "pipe"] });
  let stderr = "";
  child.stderr!.on("data", (d: Buffer) => {
    stderr += d.toString();
  });
  await Promise.race([
    once(child.stdout!, "data"),
    once(child, "exit").then(() => {
      throw new Error(`the swapper exited: ${stderr}`);
    }),
  ]);
  return {
    child,
    async stop() {
      const running = child.exitCode === null;
      if (running) {
        child.kill("SIGKILL");
        await once(child, "exit");
      }
      return { running, stderr };
    },
  };
}
