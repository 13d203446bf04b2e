import { type ChildProcess, spawn } from "node:child_process";

export interface Child {
  proc: ChildProcess;
  lines: string[];
  /** Resolves with the n-th (1-based) stdout line matching re; rejects when the child exits first. */
  waitFor(re: RegExp, nth?: number): Promise<RegExpExecArray>;
  /** Resolves when the child ends: its exit code, or the signal that ended it. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null; stderr: string }>;
}

/** Starts `node script ...args` and follows its stdout line by line. */
export function startChild(script: string, args: string[], env: Record<string, string> = {}): Child {
  return startCommand(process.execPath, [script, ...args], env);
}

/** Starts any command (a launcher such as mpirun) and follows its stdout line by line. */
export function startCommand(file: string, args: string[], env: Record<string, string> = {}): Child {
  const proc = spawn(file, args, {
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, ...env },
  });
  const lines: string[] = [];
  const waiters: (() => void)[] = [];
  let partial = "";
  let stderr = "";
  proc.stdout?.on("data", (d: Buffer) => {
    const parts = (partial + d.toString()).split("\n");
    partial = parts.pop() ?? "";
    lines.push(...parts);
    for (const w of [...waiters]) w();
  });
  proc.stderr?.on("data", (d: Buffer) => {
    stderr = (stderr + d.toString()).slice(-8000);
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null; stderr: string }>(
    (resolve) =>
      proc.on("exit", (code, signal) => {
        resolve({ code, signal, stderr });
        for (const w of [...waiters]) w();
      }),
  );
  return {
    proc,
    lines,
    exited,
    waitFor(re, nth = 1) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const hits = lines.map((l) => re.exec(l)).filter((m) => m !== null);
          if (hits.length >= nth) {
            waiters.splice(waiters.indexOf(check), 1);
            resolve(hits[nth - 1]!);
          } else if (proc.exitCode !== null || proc.signalCode !== null) {
            waiters.splice(waiters.indexOf(check), 1);
            reject(new Error(`child exited (${proc.exitCode ?? proc.signalCode}) before ${re}: ${stderr}`));
          }
        };
        waiters.push(check);
        check();
      });
    },
  };
}
