"""zarr-stream for Python: committed data of streaming multi-writer Zarr v3 stores (seed 000 §7, §8),
and an xarray backend (``xr.open_dataset(url, engine="zarr_stream")``) that shows committed data only."""

from __future__ import annotations

from .errors import (
    CommitError,
    CorruptStore,
    Fenced,
    NotCommitted,
    ObjectChanged,
    ProtocolError,
    RegionNotShardAligned,
    SchemaError,
    StoreError,
    StoreExists,
    TornRead,
    ZarrStreamError,
)
from .manifest import MANIFEST_V1, MANIFEST_V2, MANIFEST_V2_PAGED, committed_indices, committed_mask
from .readback import read_blob, read_output_manifest, read_record, read_static
from .storage import LocalStore, ObjectStore, S3Store, open_store

__version__ = "0.1.0"

__all__ = [
    "MANIFEST_V1",
    "MANIFEST_V2",
    "MANIFEST_V2_PAGED",
    "CommitError",
    "CorruptStore",
    "Fenced",
    "LocalStore",
    "NotCommitted",
    "ObjectChanged",
    "ObjectStore",
    "ProtocolError",
    "RegionNotShardAligned",
    "S3Store",
    "SchemaError",
    "StoreError",
    "StoreExists",
    "TornRead",
    "ZarrStreamError",
    "committed_indices",
    "committed_mask",
    "open_store",
    "read_blob",
    "read_output_manifest",
    "read_record",
    "read_static",
]
