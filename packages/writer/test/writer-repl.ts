import { type ChildProcess, spawn } from "node:child_process";
import { fileURLToPath } from "node:url";

const CHILD = fileURLToPath(new URL("./writer-repl-child.js", import.meta.url));

/** One reply of writer-repl-child: `ok` with the call's JSON result, or the error's name and message. */
export type Reply = { ok: true; value: unknown } | { ok: false; name: string; message: string };

export interface Repl {
  proc: ChildProcess;
  /** Sends one command line; resolves with its reply (commands are answered in order). */
  send(command: string): Promise<Reply>;
  /** SIGSTOP / SIGCONT: the process is frozen mid-run, as a preempted or swapped-out job is. */
  pause(): void;
  cont(): void;
  /** Ends the process (exit command, SIGKILL after 5 s) and resolves when it is gone. */
  stop(): Promise<void>;
}

/** Starts writer-repl-child.js and resolves once it is ready for commands. */
export async function startRepl(env: Record<string, string> = {}): Promise<Repl> {
  const proc = spawn(process.execPath, [CHILD], {
    stdio: ["pipe", "pipe", "pipe"],
    env: { ...process.env, ...env },
  });
  const waiting: ((line: string) => void)[] = [];
  let partial = "";
  let stderr = "";
  let gone = false;
  const exited = new Promise<void>((resolve) =>
    proc.on("exit", (code, signal) => {
      gone = true;
      for (const w of waiting.splice(0)) w(`exit ${code ?? signal} ${stderr}`);
      resolve();
    }),
  );
  proc.stderr?.on("data", (d: Buffer) => {
    stderr = (stderr + d.toString()).slice(-4000);
  });
  proc.stdout?.on("data", (d: Buffer) => {
    const parts = (partial + d.toString()).split("\n");
    partial = parts.pop() ?? "";
    for (const line of parts) waiting.shift()?.(line);
  });
  const next = () =>
    new Promise<string>((resolve) => {
      if (gone) resolve(`exit ${proc.exitCode ?? proc.signalCode} ${stderr}`);
      else waiting.push(resolve);
    });
  const ready = await next();
  if (ready !== "ready") throw new Error(`writer-repl-child did not start: ${ready}`);
  return {
    proc,
    async send(command) {
      const line = next();
      proc.stdin?.write(`${command}\n`);
      const got = await line;
      if (got.startsWith("ok ")) return { ok: true, value: JSON.parse(got.slice(3)) };
      const m = /^err (\S+) ?(.*)$/s.exec(got);
      if (m) return { ok: false, name: m[1]!, message: m[2]! };
      return { ok: false, name: "ChildExited", message: got };
    },
    pause() {
      proc.kill("SIGSTOP");
    },
    cont() {
      proc.kill("SIGCONT");
    },
    async stop() {
      if (gone) return;
      proc.kill("SIGCONT");
      proc.stdin?.end("exit\n");
      const timer = setTimeout(() => proc.kill("SIGKILL"), 5000);
      await exited;
      clearTimeout(timer);
    },
  };
}

/** The value of a reply that must have succeeded. */
export function okValue<T = unknown>(reply: Reply, what: string): T {
  if (!reply.ok) throw new Error(`${what} failed: ${reply.name}: ${reply.message}`);
  return reply.value as T;
}
