"""Reads a product's slot-index model record and its root-attribute mirror through the reference's own
API (firecube 0.1.7), then asks it to ensure the same model (its row 2 when everything agrees).
Usage: slot_read.py ROOT PRODUCT; prints one JSON line."""

import json
import sys
from pathlib import Path

from firecube.core.controlplane.manager import ChunkManager
from firecube.core.product.identity import ProductIdentity
from firecube.core.storage.binding import StorageBinding
from firecube.core.storage.driver_config import StorageDriverConfig
from firecube.core.uris import storage_uri_from_target

root, product = sys.argv[1], sys.argv[2]
uri = storage_uri_from_target(f"file://{root}")
binding = StorageBinding(
    identity=ProductIdentity.from_uri(uri, "zarr", product_name=product),
    driver=StorageDriverConfig.from_storage_config_or_default(None),
)
manager = ChunkManager(binding=binding, workspace=Path(root).parent)
attrs_hash = manager.read_slot_index_attrs_hash(product=product)  # before ensure, which would re-mirror
record = manager.get_slot_index_model(product=product)
ensured = manager.ensure_slot_index_model(product=product, model=record.model, run_id="ref-verify")
print(json.dumps({
    "attrs_hash": attrs_hash,
    "record_hash": record.identity_hash,
    "model_hash": record.model.identity_hash,
    "ensured_hash": ensured.identity_hash,
}))
