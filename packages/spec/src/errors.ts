import type { OutputManifest } from "./types.js";

/**
 * Every error any zarr-stream package throws for a contract violation is a ZarrStreamError, so callers
 * can catch the family or one named kind. `name` is set explicitly because minifiers and bundlers rename
 * classes, and the conformance corpus matches errors by name.
 */
export class ZarrStreamError extends Error {
  override name = "ZarrStreamError";
}

/** A document failed its JSON Schema or a semantic check; `pointer` is the JSON pointer that failed. */
export class SchemaError extends ZarrStreamError {
  override name = "SchemaError";
  constructor(
    message: string,
    readonly pointer = "",
    readonly document = "",
  ) {
    super(message);
  }
}

/** Seed §4: a region edge is not on a shard boundary, or lies outside the dim. */
export class RegionNotShardAligned extends ZarrStreamError {
  override name = "RegionNotShardAligned";
  constructor(
    message: string,
    readonly dim: string,
  ) {
    super(message);
  }
}

export type CommitErrorReason =
  | "gap"
  | "overlap"
  | "fingerprint"
  | "records"
  | "statics"
  | "blobs"
  | "writers"
  | "region-dims"
  | "alignment"
  | "concurrent-owner"
  /** A contributor token that the live handle of its writer did not seal (fencing.md, "Sealed tokens"). */
  | "stale-token";

/** Seed §5.3: the owner refused a commit; nothing was written. `writers` names the writer ids involved. */
export class CommitError extends ZarrStreamError {
  override name = "CommitError";
  constructor(
    message: string,
    readonly reason: CommitErrorReason,
    readonly writers: number[] = [],
  ) {
    super(message);
  }
}

export class FingerprintMismatch extends ZarrStreamError {
  override name = "FingerprintMismatch";
  constructor(
    message: string,
    readonly expected: string,
    readonly actual: string,
  ) {
    super(message);
  }
}

/** A read asked for a record, static or blob that the manifest does not list as committed. */
export class NotCommitted extends ZarrStreamError {
  override name = "NotCommitted";
}

export class StoreError extends ZarrStreamError {
  override name = "StoreError";
  constructor(
    message: string,
    readonly key = "",
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/**
 * A store request got no answer within its deadline (a silent endpoint, a dead network path): nothing
 * is known about whether a write took effect. `endpoint` is what was called, `timeoutMs` the bound that
 * expired; the message says what to check.
 */
export class StoreTimeout extends StoreError {
  override name = "StoreTimeout";
  constructor(
    message: string,
    key: string,
    readonly endpoint: string,
    readonly timeoutMs: number,
    options?: { cause?: unknown },
  ) {
    super(message, key, options);
  }
}

/**
 * FsStore met a symbolic link inside its root on a key's path (a directory on the way or the object
 * itself), or found the path moved while it used it: nothing was read, written or deleted through it.
 * FsStore follows no link below its root (packages/spec/docs/store-capabilities.md, "FsStore and
 * symbolic links"). `key` is the key refused.
 */
export class SymlinkRefused extends StoreError {
  override name = "SymlinkRefused";
}

/**
 * FsStore: the file system refused a write for lack of space (ENOSPC) or of quota (EDQUOT). The call
 * changed no object: the key holds what it held before (or stays absent), and no staging or lock file of
 * the call is left. `path` is the object's file, on the file system to free space on; `code` is the errno.
 * Once space is freed the same call, or a writer's resume, goes on (store-capabilities.md, "Full disks").
 */
export class StoreFull extends StoreError {
  override name = "StoreFull";
  constructor(
    message: string,
    key: string,
    readonly path: string,
    readonly code: "ENOSPC" | "EDQUOT",
    options?: { cause?: unknown },
  ) {
    super(message, key, options);
  }
}

/**
 * A pinned read (ReadableStore.pin) found its object replaced or deleted since the read pinned it (S3 and
 * HTTP: 412 on If-Match; MemoryStore: another version). Nothing of the other version was handed out; the
 * caller starts its read of the object again.
 */
export class ObjectChanged extends StoreError {
  override name = "ObjectChanged";
}

/**
 * A shard read started again from each new version `attempts` times, and the object changed under every
 * attempt: no attempt saw one version from its index to its last body. Nothing mixed was returned.
 */
export class TornRead extends StoreError {
  override name = "TornRead";
  constructor(
    message: string,
    key: string,
    readonly attempts: number,
    options?: { cause?: unknown },
  ) {
    super(message, key, options);
  }
}

/** Bytes read from a store do not decode: bad CRC, truncated object, bad codec header, wrong length. */
export class CorruptShard extends ZarrStreamError {
  override name = "CorruptShard";
  constructor(
    message: string,
    readonly key = "",
  ) {
    super(message);
  }
}

/**
 * A Zarr array names a codec this implementation does not have (or a configuration of it that it cannot
 * apply). Raised when the array is opened, before any chunk is read; `codec` is the codec's name and
 * `pointer` where it sits in `document`.
 */
export class UnsupportedCodec extends ZarrStreamError {
  override name = "UnsupportedCodec";
  constructor(
    message: string,
    readonly codec: string,
    readonly pointer = "",
    readonly document = "",
  ) {
    super(message);
  }
}

/** A call that is wrong for the writer's role or time mode, or out of protocol order. */
export class ProtocolError extends ZarrStreamError {
  override name = "ProtocolError";
}

/**
 * A fenced write was refused: the object (or the writer's lease) changed since this writer last wrote or
 * read it, so another writer of the same role and region is live (a zombie, a duplicate, a successor).
 * Nothing was written; the handle refuses every further call, and the store can be resumed.
 */
export class Fenced extends ZarrStreamError {
  override name = "Fenced";
  constructor(
    message: string,
    readonly key: string,
  ) {
    super(message);
  }
}

/** create found a store (or another creator won the race to make one): open it with join or resume. */
export class StoreExists extends ProtocolError {
  override name = "StoreExists";
  constructor(
    message: string,
    readonly key: string,
  ) {
    super(message);
  }
}

/**
 * A claim this process acquired is no longer its own (cleared by recovery and perhaps taken by another
 * owner): the holder must stop before its next commit. `domain` is the full product:category:name.
 */
export class ClaimLost extends ZarrStreamError {
  override name = "ClaimLost";
  constructor(
    message: string,
    readonly domain: string,
  ) {
    super(message);
  }
}

/**
 * A rewrite of the output manifest that changes no committed state (`zstream manifest pages on|off`)
 * found it changed since it was read: another process wrote it in between. The rewrite's compare-and-swap
 * was refused, so the manifest is the other process's; run the rewrite again once nothing is writing.
 */
export class ManifestChanged extends ZarrStreamError {
  override name = "ManifestChanged";
  constructor(
    message: string,
    readonly key: string,
  ) {
    super(message);
  }
}

/** A compare-and-swap on a shared head (a journal head row) found another writer's update first. */
export class PublishConflict extends ZarrStreamError {
  override name = "PublishConflict";
}

/**
 * The store's committed metadata does not hold together: an object the manifest refers to (a manifest
 * page) is missing, or its bytes are not the ones the manifest names. `key` is the object.
 */
export class CorruptStore extends ZarrStreamError {
  override name = "CorruptStore";
  constructor(
    message: string,
    readonly key = "",
  ) {
    super(message);
  }
}

/**
 * A writer's close committed (`manifest` is what the store holds now) but the control plane did not
 * record the run's end: the run stays live in `.firecube/` until an operator abandons it, and a resume
 * then adopts its committed records (writer-decisions.md rule 19). `cause` is the control plane's error.
 */
export class RunRecordIncomplete extends ZarrStreamError {
  override name = "RunRecordIncomplete";
  constructor(
    message: string,
    readonly manifest: OutputManifest | undefined,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}
