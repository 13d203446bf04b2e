import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import { createInterface, type Interface } from "node:readline";
import {
  type BlobScope,
  CommitError,
  type CommitErrorReason,
  type CommitToken,
  type CorpusSchema,
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
  /** `seeds`: the generator seed of every variable and static of the case. */
  join(id: number, region: Region, seeds: Record<string, number>): Promise<void>;
  writeRecord(t: number, r: number, vars?: string[]): Promise<void>;
  writeRecordAt(index: number, t: number, r: number, vars?: string[]): Promise<void>;
  /** Generator record 0 of the static over the writer's region. */
  writeStatic(name: string): Promise<void>;
  writeBlob(scope: BlobScope, key: string, bytes: Uint8Array): Promise<void>;
  flush(): Promise<CommitToken>;
  close(): Promise<void>;
  /** Ends the process; the contributor is then unusable. */
  dispose(): Promise<void>;
}

/**
 * An owner written in another language, driven op by op: it creates the store, writes its own region, and
 * commits tokens from writers of any binding (ours reach it as the seed's JSON). Arrays come from the
 * seed §10 generator on its side, from the case's schema with its seeds.
 */
export interface ExternalOwner {
  readonly binding: string;
  create(schema: CorpusSchema, nWriters: number, region: Region): Promise<void>;
  writeRecord(t: number, r: number, vars?: string[]): Promise<void>;
  writeRecordAt(index: number, t: number, r: number, vars?: string[]): Promise<void>;
  /** Generator record 0 of the static over the owner's region. */
  writeStatic(name: string): Promise<void>;
  writeBlob(scope: BlobScope, key: string, bytes: Uint8Array): Promise<void>;
  flush(): Promise<CommitToken>;
  commit(tokens: CommitToken[]): Promise<void>;
  invalidate(indices: number[]): Promise<void>;
  invalidateStatics(names: string[]): Promise<void>;
  /** Seed §5.1 owner close: flush, then commit its own token with `tokens`. */
  close(tokens: CommitToken[]): Promise<void>;
  dispose(): Promise<void>;
}

interface Reply {
  ok: boolean;
  token?: unknown;
  error?: { name: string; message: string; reason?: string };
}

const COMMIT_REASONS: ReadonlySet<string> = new Set<CommitErrorReason>([
  "gap",
  "overlap",
  "fingerprint",
  "records",
  "statics",
  "blobs",
  "writers",
  "region-dims",
  "alignment",
  "concurrent-owner",
  "stale-token",
]);

/** The contract error a reply names, so a corpus's expect_error matches across languages. */
function errorOf(binding: string, error: Reply["error"]): Error {
  const name = String(error?.name);
  const text = `${binding}: ${String(error?.message)}`;
  switch (name) {
    case "SchemaError":
      return new SchemaError(text);
    case "RegionNotShardAligned":
      return new RegionNotShardAligned(text, "");
    case "FingerprintMismatch":
      return new FingerprintMismatch(text, "", "");
    case "ProtocolError":
      return new ProtocolError(text);
    case "CommitError": {
      // Its reason is the one our owner would give, so tests compare refusals across languages.
      const reason = error?.reason;
      if (typeof reason !== "string" || !COMMIT_REASONS.has(reason))
        return new SchemaError(`${text} (a CommitError without a known reason: ${JSON.stringify(reason)})`);
      return new CommitError(text, reason as CommitErrorReason);
    }
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

const WRITER_OPS = new URL("../../python/writer_ops.py", import.meta.url).pathname;

/**
 * packages/conformance/python/writer_ops.py (the Python package's writers, on zarr-python) in one process:
 * one JSON request per line on stdin, one JSON reply per line on stdout.
 */
class PythonWriterProcess {
  readonly binding = "zarr-python";
  private readonly child: ChildProcessWithoutNullStreams;
  private readonly lines: Interface;
  private readonly replies: string[] = [];
  private readonly waiting: ((line: string | undefined) => void)[] = [];
  private stderr = "";
  private exited = false;

  constructor(
    python: string,
    protected readonly storeRoot: string,
    private readonly role: string,
  ) {
    this.child = spawn(python, [WRITER_OPS, "serve"], { stdio: ["pipe", "pipe", "pipe"] });
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

  protected async request(req: Record<string, unknown>): Promise<Reply> {
    const who = `python ${this.role}`;
    if (this.exited) throw new ProtocolError(`${who} has exited: ${this.stderr.trim()}`);
    this.child.stdin.write(`${JSON.stringify(req)}\n`);
    const line = this.replies.shift() ?? (await new Promise<string | undefined>((r) => this.waiting.push(r)));
    if (line === undefined) throw new ProtocolError(`${who} exited: ${this.stderr.trim()}`);
    let reply: Reply;
    try {
      reply = JSON.parse(line) as Reply;
    } catch {
      throw new SchemaError(`${who} replied with non-JSON: ${line.slice(0, 200)}`);
    }
    if (typeof reply !== "object" || reply === null || typeof reply.ok !== "boolean") {
      throw new SchemaError(`${who} replied without ok: ${line.slice(0, 200)}`);
    }
    if (!reply.ok) throw errorOf(who, reply.error);
    return reply;
  }

  async writeRecord(t: number, r: number, vars?: string[]): Promise<void> {
    await this.request({ op: "write_record", t, r, ...(vars ? { vars } : {}) });
  }

  async writeRecordAt(index: number, t: number, r: number, vars?: string[]): Promise<void> {
    await this.request({ op: "write_record_at", index, t, r, ...(vars ? { vars } : {}) });
  }

  async writeStatic(name: string): Promise<void> {
    await this.request({ op: "write_static", name });
  }

  async writeBlob(scope: BlobScope, key: string, bytes: Uint8Array): Promise<void> {
    await this.request({ op: "write_blob", scope, key, hex: Buffer.from(bytes).toString("hex") });
  }

  async flush(): Promise<CommitToken> {
    return validateCommitToken((await this.request({ op: "flush" })).token);
  }

  async dispose(): Promise<void> {
    if (this.exited) return;
    const closed = new Promise<void>((r) => this.child.once("close", () => r()));
    this.child.stdin.end();
    await closed;
  }
}

/** A contributor of the Python package (zarr_stream.writer.Contributor) as an ExternalContributor. */
export class PythonContributor extends PythonWriterProcess implements ExternalContributor {
  constructor(python: string, storeRoot: string) {
    super(python, storeRoot, "contributor");
  }

  async join(id: number, region: Region, seeds: Record<string, number>): Promise<void> {
    await this.request({ op: "join", store: this.storeRoot, writer: id, region, seeds });
  }

  async close(): Promise<void> {
    await this.request({ op: "close" });
  }
}

/** The owner of the Python package (zarr_stream.writer.Owner) as an ExternalOwner. */
export class PythonOwner extends PythonWriterProcess implements ExternalOwner {
  constructor(python: string, storeRoot: string) {
    super(python, storeRoot, "owner");
  }

  async create(schema: CorpusSchema, nWriters: number, region: Region): Promise<void> {
    await this.request({ op: "create", store: this.storeRoot, schema, n_writers: nWriters, region });
  }

  async commit(tokens: CommitToken[]): Promise<void> {
    await this.request({ op: "commit", tokens });
  }

  async invalidate(indices: number[]): Promise<void> {
    await this.request({ op: "invalidate", indices });
  }

  async invalidateStatics(names: string[]): Promise<void> {
    await this.request({ op: "invalidate_statics", names });
  }

  async close(tokens: CommitToken[]): Promise<void> {
    await this.request({ op: "close", tokens });
  }
}
