"""The reference (firecube 0.1.7) records a resolved index whose payload holds the number shapes JS's
JSON.parse loses: floats, integral floats and integers beyond 2^53. Usage: index_writes.py ROOT PRODUCT."""

import sys
from pathlib import Path

import zarr
from firecube.core.controlplane.manager import ChunkManager
from firecube.core.controlplane.types import ResolvedIndexRecord, compute_resolved_index_identity_hash
from firecube.core.product.identity import ProductIdentity
from firecube.core.storage.binding import StorageBinding
from firecube.core.storage.driver_config import StorageDriverConfig
from firecube.core.uris import storage_uri_from_target

root, product = sys.argv[1], sys.argv[2]
zarr.open_group(root, mode="w", zarr_format=3)
uri = storage_uri_from_target(f"file://{root}")
binding = StorageBinding(
    identity=ProductIdentity.from_uri(uri, "zarr", product_name=product),
    driver=StorageDriverConfig.from_storage_config_or_default(None),
)
manager = ChunkManager(binding=binding, workspace=Path(root).parent)
index = {
    "groups": {"data": {"kind": "integer", "params": {"values": [0.5, 1.0, 2.0], "scale": 1e3}, "size": 3}},
    "epoch_ns": 1767225600000000000,
    "name": "float_and_bigint_v1",
    "schema_version": "v1",
}
record = ResolvedIndexRecord(
    recorded_at="2026-01-01T00:00:00Z",
    recorded_by_run_id="ref-index-run",
    identity_hash=compute_resolved_index_identity_hash(index),
    index=index,
)
_, outcome = manager.ensure_resolved_index(product=product, record=record, run_id="ref-index-run")
print(outcome, record.identity_hash)
