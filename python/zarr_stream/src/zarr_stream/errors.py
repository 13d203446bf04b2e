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
    "concurrent-owner"), so a
    refusal reads the same whichever language's owner made it."""

    def __init__(self, message: str, reason: str) -> None:
        super().__init__(message)
        self.reason = reason


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
