import {
  type CommitReceipt,
  type CommitToken,
  canonicalRegion,
  checkRegionAligned,
  normalizeRegion,
  type OutputManifest,
  ProtocolError,
  type Region,
  type Role,
  SchemaError,
  type StreamSchema,
} from "@zarr-stream/spec";
import type { ContributorView } from "./committed-view.js";
import type { FencedObjects } from "./fenced-objects.js";
import type { OwnerCommits } from "./owner-commits.js";
import type { PendingWrites } from "./pending-writes.js";
import type { TimeMode } from "./time-mode.js";
import { tokenDigest } from "./writer-lease.js";

/** The writer's own calls a role's close goes through. */
export interface CloseCalls {
  flush(): Promise<CommitToken>;
  commit(tokens: CommitToken[]): Promise<CommitReceipt>;
}

/**
 * What differs by role (seed §5.1): who commits, what flush does with the handle's own token, how close
 * ends the writer, and when an object another write changed may be overwritten.
 */
export interface WriterRole {
  /** The commit path of the owner and of a Single writer; a contributor has none. */
  readonly commits: OwnerCommits | undefined;
  /** Settles a manifest write of unknown outcome before the next flush. */
  settle(): Promise<void>;
  /** Flush, before `token` leaves the pending set: what the role does with its own token. */
  handOff(token: CommitToken): Promise<void>;
  close(tokens: CommitToken[], calls: CloseCalls): Promise<OutputManifest | undefined>;
  /** FencedObjects asks, for a lease holder, whether a changed object cannot be committed data. */
  mayOverwrite(): Promise<boolean>;
}

export function checkRole(role: Role): void {
  const ok =
    role !== null &&
    typeof role === "object" &&
    (role.kind === "single" ||
      (role.kind === "owner" && Number.isInteger(role.nWriters) && role.nWriters >= 1) ||
      (role.kind === "contributor" && Number.isInteger(role.id) && role.id >= 1));
  if (!ok)
    throw new SchemaError(
      `role ${JSON.stringify(role)} is not single, owner{nWriters >= 1} or contributor{id >= 1}`,
      "/role",
    );
}

/**
 * A writer's region, checked before any write: `full` spans every dim, `named` is what tokens and the
 * manifest record (a Single writer names none, since it writes the whole domain).
 */
export function resolveRegion(
  schema: StreamSchema,
  role: Role,
  region: Region | undefined,
): { full: Region; named: Region } {
  const given = region ?? {};
  if (given === null || typeof given !== "object" || Array.isArray(given)) {
    throw new SchemaError(
      `region must be an object {dim: [start, stop)}, got ${JSON.stringify(region)}`,
      "/region",
    );
  }
  const full = normalizeRegion(given, schema.dims, schema.time_dim);
  checkRegionAligned(given, schema.dims, schema.shard_shape);
  if (role.kind === "single") {
    for (const [d, [a, b]] of Object.entries(given)) {
      const len = schema.dims.find(([n]) => n === d)![1];
      if (a !== 0 || b !== len)
        throw new ProtocolError(
          `a Single writer writes the whole domain; region ${d}=[${a}, ${b}) is not [0, ${len})`,
        );
    }
    return { full, named: {} };
  }
  return { full, named: canonicalRegion(given) };
}

/** Writer 0 of a multi-writer store: its token goes into its own commit with the others'. */
export class OwnerRole implements WriterRole {
  /** The owner's close token survives a refused commit, so close can be retried with corrected tokens. */
  #closeToken: CommitToken | undefined;

  constructor(readonly commits: OwnerCommits) {}

  async settle(): Promise<void> {
    await this.commits.settle();
  }

  async handOff(_token: CommitToken): Promise<void> {}

  async close(tokens: CommitToken[], calls: CloseCalls): Promise<OutputManifest | undefined> {
    this.#closeToken ??= await calls.flush();
    const receipt = await calls.commit([this.#closeToken, ...tokens]);
    this.#closeToken = undefined;
    return receipt.manifest;
  }

  mayOverwrite(): Promise<boolean> {
    return this.commits.manifestUnchanged();
  }
}

/** The one writer of a store: every flush with something pending commits it. */
export class SingleRole extends OwnerRole {
  constructor(
    commits: OwnerCommits,
    private readonly pending: PendingWrites,
  ) {
    super(commits);
  }

  /** The data stays pending until its commit lands, so a failed commit is retried by the next flush. */
  override async handOff(token: CommitToken): Promise<void> {
    if (this.pending.hasData()) await this.commits.commitVerified([token]);
  }

  /** Flush, then the manifest again at the same commit_seq. */
  override async close(tokens: CommitToken[], calls: CloseCalls): Promise<OutputManifest | undefined> {
    if (tokens.length > 0) throw new ProtocolError("a Single writer's close takes no tokens");
    await calls.flush();
    return this.commits.writeManifest();
  }
}

/** Writers 1..n-1: their tokens go to the owner; they never write metadata. */
export class ContributorRole implements WriterRole {
  readonly commits = undefined;

  constructor(
    private readonly writerId: number,
    private readonly view: ContributorView,
    private readonly pending: PendingWrites,
    private readonly time: TimeMode,
    private readonly objects: FencedObjects,
  ) {}

  async settle(): Promise<void> {}

  /** The token is sealed into this writer's lease first: the owner commits only sealed tokens. */
  async handOff(token: CommitToken): Promise<void> {
    await this.objects.sealToken(tokenDigest(token));
    this.view.noteTokened(token);
    this.time.handedOff();
  }

  async close(): Promise<OutputManifest | undefined> {
    if (this.pending.hasData())
      throw new ProtocolError(
        `contributor ${this.writerId} has unflushed data: flush and deliver its token before close`,
      );
    return undefined;
  }

  mayOverwrite(): Promise<boolean> {
    return this.view.sawEveryCommit();
  }
}
