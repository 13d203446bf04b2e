"""The contract's errors (seed 000), named as the TypeScript reference names them (packages/spec errors.ts)."""

from __future__ import annotations


class ZarrStreamError(Exception):
    """Base of every error this package raises on purpose."""


class SchemaError(ZarrStreamError):
    """A document or argument does not have the form the contract gives it."""


class ProtocolError(ZarrStreamError):
    """An operation the contract does not allow here (e.g. statics of a v1 store)."""


class StoreExists(ProtocolError):
    """Create was asked for where a store already is (or another creator made one meanwhile)."""


class NotCommitted(ZarrStreamError):
    """The record, static or blob asked for is not committed in the manifest read."""


class CommitError(ZarrStreamError):
    """A commit's tokens do not verify (seed §5.3). ``reason`` is the TypeScript CommitError's reason
    ("writers", "fingerprint", "region-dims", "alignment", "overlap", "gap", "records", "statics",
    "concurrent-owner", "stale-token"), so a refusal reads the same whichever language's owner made it;
    ``writers`` names the writers at fault where the reason has them (a stale token's writer)."""

    def __init__(self, message: str, reason: str, writers: list[int] | None = None) -> None:
        super().__init__(message)
        self.reason = reason
        self.writers = list(writers or [])


class Fenced(ZarrStreamError):
    """A fenced write was refused: the object (or the writer's lease) changed since this handle last wrote
    or read it, so another handle of the same writer id is live (a duplicate, a successor). Nothing was
    written; the handle refuses every further call. ``key`` is the object (or lease) that told."""

    def __init__(self, message: str, key: str) -> None:
        super().__init__(message)
        self.key = key


class RegionNotShardAligned(ZarrStreamError):
    """A region does not start and stop on shard boundaries (seed §4)."""


class StoreError(ZarrStreamError):
    """The store failed, or lacks an object the committed state names."""


class ObjectChanged(StoreError):
    """A pinned object was replaced between two reads of one shard read."""


class TornRead(StoreError):
    """A shard was replaced during every attempt to read it whole from one version."""


class CorruptStore(ZarrStreamError):
    """The store contradicts its manifest (a page it names is missing or has other bytes)."""


__all__ = [
    "CommitError",
    "CorruptStore",
    "Fenced",
    "NotCommitted",
    "ObjectChanged",
    "ProtocolError",
    "RegionNotShardAligned",
    "SchemaError",
    "StoreError",
    "StoreExists",
    "TornRead",
    "ZarrStreamError",
]
