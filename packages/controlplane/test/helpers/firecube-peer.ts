// The reference (firecube 0.1.7) as a long-lived peer process (interop/peer.py): one import, many commands.
import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";

const script = join(fileURLToPath(new URL("../../../", import.meta.url)), "interop", "peer.py");

/** The peer's answer: its value, or the exception the reference raised (class name and message). */
export type PeerAnswer<T = unknown> =
  | { ok: true; value: T }
  | { ok: false; error: string; message: string; trace: string };

export class FirecubePeer {
  readonly #child: ChildProcessWithoutNullStreams;
  readonly #waiting: ((line: string) => void)[] = [];
  #stderr = "";

  private constructor(child: ChildProcessWithoutNullStreams) {
    this.#child = child;
    child.stderr.on("data", (d) => {
      this.#stderr = (this.#stderr + d).slice(-4000);
    });
    createInterface({ input: child.stdout }).on("line", (line) => this.#waiting.shift()?.(line));
    child.on("exit", () => {
      for (const w of this.#waiting.splice(0))
        w(JSON.stringify({ ok: false, error: "PeerExited", message: this.#stderr, trace: "" }));
    });
  }

  /** Starts the peer and waits until firecube is imported. */
  static async start(python: string): Promise<FirecubePeer> {
    const peer = new FirecubePeer(spawn(python, [script], { stdio: ["pipe", "pipe", "pipe"] }));
    const ready = await peer.#next();
    if (!ready.ok) throw new Error(`firecube peer did not start: ${ready.message}`);
    return peer;
  }

  #next(): Promise<PeerAnswer> {
    return new Promise((resolve) => this.#waiting.push((line) => resolve(JSON.parse(line))));
  }

  /** One command; resolves with the reference's answer, whether a value or an exception. */
  call<T = unknown>(op: string, root: string, product: string, args: object = {}): Promise<PeerAnswer<T>> {
    const answer = this.#next() as Promise<PeerAnswer<T>>;
    this.#child.stdin.write(`${JSON.stringify({ op, root, product, args })}\n`);
    return answer;
  }

  /** One command that must succeed: its value, or a thrown Error carrying the reference's exception. */
  async value<T = unknown>(op: string, root: string, product: string, args: object = {}): Promise<T> {
    const a = await this.call<T>(op, root, product, args);
    if (!a.ok) throw new Error(`firecube ${op} raised ${a.error}: ${a.message}\n${a.trace}`);
    return a.value;
  }

  close(): void {
    this.#child.stdin.end();
    this.#child.kill();
  }
}
