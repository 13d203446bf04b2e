import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import { createInterface, type Interface } from "node:readline";
import {
  type CommitToken,
  FingerprintMismatch,
  ProtocolError,
  type Region,
  RegionNotShardAligned,
  SchemaError,
  validateCommitToken,
  ZarrStreamError,
} from "@zarr-stream/spec";

/**
 * A contributor written in another language, driven op by op. Its only output the owner consumes is the
 * CommitToken, validated here like any document read from outside.
 */
export interface ExternalContributor {
  /** Which binding it is, for dumps and messages. */
  readonly binding: string;
  join(id: number, region: Region, seeds: Record<string, number>): Promise<void>;
  writeRecord(t: number, r: number, vars?: string[]): Promise<void>;
  flush(): Promise<CommitToken>;
  close(): Promise<void>;
  /** Ends the process; the contributor is then unusable. */
  dispose(): Promise<void>;
}

interface Reply {
  ok: boolean;
  token?: unknown;
  error?: { name: string; message: string };
}

/** The contract error a reply names, so a corpus's expect_error matches across languages. */
function errorOf(name: string, message: string): Error {
  const text = `python contributor: ${message}`;
  switch (name) {
    case "SchemaError":
      return new SchemaError(text);
    case "RegionNotShardAligned":
      return new RegionNotShardAligned(text, "");
    case "FingerprintMismatch":
      return new FingerprintMismatch(text, "", "");
    case "ProtocolError":
      return new ProtocolError(text);
    case "ZarrStreamError":
      return new ZarrStreamError(text);
    default: {
      // A crash of the other binding is not a contract error: it never satisfies expect_error.
      const e = new Error(text);
      e.name = name;
      return e;
    }
  }
}

/**
 * packages/conformance/python/contributor.py (zarr-python) as an ExternalContributor: one process,
 * one JSON request per line on stdin, one JSON reply per line on stdout.
 */
export class PythonContributor implements ExternalContributor {
  readonly binding = "zarr-python";
  private readonly child: ChildProcessWithoutNullStreams;
  private readonly lines: Interface;
  private readonly replies: string[] = [];
  private readonly waiting: ((line: string | undefined) => void)[] = [];
  private stderr = "";
  private exited = false;

  constructor(
    python: string,
    private readonly storeRoot: string,
  ) {
    const script = new URL("../../python/contributor.py", import.meta.url).pathname;
    this.child = spawn(python, [script, "serve"], { stdio: ["pipe", "pipe", "pipe"] });
    this.child.stderr.on("data", (chunk: Buffer) => {
      this.stderr += chunk.toString();
    });
    this.lines = createInterface({ input: this.child.stdout });
    this.lines.on("line", (line) => {
      const w = this.waiting.shift();
      if (w) w(line);
      else this.replies.push(line);
    });
    this.child.on("close", () => {
      this.exited = true;
      for (const w of this.waiting.splice(0)) w(undefined);
    });
  }

  private async request(req: Record<string, unknown>): Promise<Reply> {
    if (this.exited) throw new ProtocolError(`python contributor has exited: ${this.stderr.trim()}`);
    this.child.stdin.write(`${JSON.stringify(req)}\n`);
    const line = this.replies.shift() ?? (await new Promise<string | undefined>((r) => this.waiting.push(r)));
    if (line === undefined) throw new ProtocolError(`python contributor exited: ${this.stderr.trim()}`);
    let reply: Reply;
    try {
      reply = JSON.parse(line) as Reply;
    } catch {
      throw new SchemaError(`python contributor replied with non-JSON: ${line.slice(0, 200)}`);
    }
    if (typeof reply !== "object" || reply === null || typeof reply.ok !== "boolean") {
      throw new SchemaError(`python contributor replied without ok: ${line.slice(0, 200)}`);
    }
    if (!reply.ok) throw errorOf(String(reply.error?.name), String(reply.error?.message));
    return reply;
  }

  async join(id: number, region: Region, seeds: Record<string, number>): Promise<void> {
    await this.request({ op: "join", store: this.storeRoot, writer: id, region, seeds });
  }

  async writeRecord(t: number, r: number, vars?: string[]): Promise<void> {
    await this.request({ op: "write_record", t, r, ...(vars ? { vars } : {}) });
  }

  async flush(): Promise<CommitToken> {
    return validateCommitToken((await this.request({ op: "flush" })).token);
  }

  async close(): Promise<void> {
    await this.request({ op: "close" });
  }

  async dispose(): Promise<void> {
    if (this.exited) return;
    const closed = new Promise<void>((r) => this.child.once("close", () => r()));
    this.child.stdin.end();
    await closed;
  }
}
