"""The reference (firecube 0.1.7) writes and reads `.firecube/` documents whose numbers JS's JSON.parse
loses: integers beyond 2^53 (up to 2^63-1 and past int64), integral floats (`1.0`, `-0.0`, `1e+16`) and
an integer under a key that usually holds a float. Every value printed is Python's canonical JSON (sorted
keys, compact, raw UTF-8), so an int that became a float, or a digit that moved, shows.

Usage: exact_numbers.py write ROOT PRODUCT       runs, a resolved index, a snapshot, a live run
       exact_numbers.py read ROOT PRODUCT        current state (snapshot path), WAL replay, run records
       exact_numbers.py read-index ROOT PRODUCT  the resolved index, its hash recomputed, ensured again
Prints one JSON line."""

import json
import sys
import time
from importlib.metadata import version
from pathlib import Path
from types import SimpleNamespace

import zarr
from firecube.core.controlplane.events import RunEventWriter
from firecube.core.controlplane.manager import ChunkManager
from firecube.core.controlplane.types import ResolvedIndexRecord, compute_resolved_index_identity_hash
from firecube.core.filesystem.ops import create_filesystem_for_uri
from firecube.core.product.identity import ProductIdentity
from firecube.core.storage.binding import StorageBinding
from firecube.core.storage.driver_config import StorageDriverConfig
from firecube.core.uris import storage_uri_from_target

INT64_MAX = 2**63 - 1
INT64_MIN = -(2**63)
VALUES = {
    "size_2p53_plus_1": 2**53 + 1,
    "int64_max": INT64_MAX,
    "int64_min": INT64_MIN,
    "past_int64": 2**64 + 1,
    "safe_max": 2**53 - 1,
    "floats": [1.0, -0.0, 0.1, 1e16, 2.5e-07, 1e300, -3.0],
    "nested": {"ids": [INT64_MAX, INT64_MIN, 0, -1], "epoch_ns": 1767225600000000000},
}


def canonical(value):
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def manager_for(root, product):
    uri = storage_uri_from_target(f"file://{root}")
    binding = StorageBinding(
        identity=ProductIdentity.from_uri(uri, "zarr", product_name=product),
        driver=StorageDriverConfig.from_storage_config_or_default(None),
    )
    return ChunkManager(binding=binding, workspace=Path(root).parent)


def run_record(root, run_id, status):
    return {"key": f"run_{run_id}", "type": "run", "size": 0, "timestamp": time.time(), "status": status,
            "meta": {"run_id": run_id}, "run": {"output_path": root, "output_format": "zarr"},
            "schema_version": "v2"}


def write(root, product):
    zarr.open_group(root, mode="w", zarr_format=3)
    storage_config = SimpleNamespace(storage_driver="fsspec", access_key=None, secret_key=None,
                                     endpoint_url=None, region=None, path_style=None, anonymous=None)
    fs, root_uri = create_filesystem_for_uri(root, storage_config, format="zarr")
    control = root_uri.join(".firecube")

    w = RunEventWriter(fs=fs, control_uri=control, product=product, run_id="fc-1",
                       slot_range=(2**62, INT64_MAX), slot_group="data")
    w.append("run_started", run_record(root, "fc-1", "started"), flush=True)
    w.append("span_committed", {
        "key": "span_fc-1_0_data", "type": "span", "size": 2**53 + 1, "timestamp": time.time(),
        "status": "active", "meta": {"group": "data", "batch_id": "0", "run_id": "fc-1"},
        "span": {"arrays": ["x"], "time_index_ranges": [[0, INT64_MAX]], "timestamps_written": 1,
                 "aligned": True, "state_array": None, "state_deleted_value": 2},
        "schema_version": "v2",
    })
    # No timestamp and no schema_version: the projection fills both in (the timestamp as a float).
    w.append("record_upsert", {"key": "chunk_big", "type": "chunk", "size": 2**53 + 1,
                               "chunk_id": INT64_MAX, "status": "ok", "meta": {"run_id": "fc-1"},
                               "values": VALUES})
    # An integer where a float usually is: the reference's own rebuild keeps it an integer.
    w.append("record_upsert", {"key": "chunk_int_time", "type": "chunk", "size": 0, "timestamp": 1767225600,
                               "status": "ok", "meta": {"run_id": "fc-1"}, "chunk_id": INT64_MIN,
                               "schema_version": "v2"})
    w.append("run_completed", run_record(root, "fc-1", "complete"), flush=True)
    w.finalize(status="complete")
    time.sleep(0.01)

    w = RunEventWriter(fs=fs, control_uri=control, product=product, run_id="fc-2")
    w.append("run_started_with_replacement", {"replaces": ["fc-1"]}, flush=True)
    w.append("replacement_committed", {"replacing_run_id": "fc-2", "replaced_span_keys": ["span_fc-1_0_data"]},
             flush=True)
    w.append("run_completed", run_record(root, "fc-2", "complete"), flush=True)
    w.finalize(status="complete")

    manager = manager_for(root, product)
    index = {
        "groups": {"data": {"kind": "integer", "params": {"first": INT64_MIN, "last": INT64_MAX,
                                                          "scale": 1.0, "offset": -0.0}, "size": 3}},
        "epoch_ns": 1767225600000000000,
        "name": "exact_numbers_v1",
        "schema_version": "v1",
    }
    record = ResolvedIndexRecord(recorded_at="2026-01-01T00:00:00Z", recorded_by_run_id="fc-1",
                                 identity_hash=compute_resolved_index_identity_hash(index), index=index)
    _, outcome = manager.ensure_resolved_index(product=product, record=record, run_id="fc-1")
    manager.rebuild_snapshot(product)
    state = manager.repo._load_current_state(product)

    # Left live, after the rebuild it would block: its run.json holds a threshold of 2^63-1 and a slot range
    # past int64, which whoever abandons it must write back unchanged.
    live = RunEventWriter(fs=fs, control_uri=control, product=product, run_id="fc-live",
                          run_stale_threshold_s=INT64_MAX, slot_range=(INT64_MIN, 2**64 + 1), slot_group="data")
    live.append("run_started", run_record(root, "fc-live", "started"), flush=True)
    print(json.dumps({"firecube": version("firecube"), "outcome": outcome, "index_hash": record.identity_hash,
                      "state": canonical(state)}))


def read(root, product):
    manager = manager_for(root, product)
    repo = manager.repo
    entries = repo._list_run_entries(product)
    complete = [e for e in entries if str(e.get("status", "")) == "complete"]
    runs = {e["run_id"]: {k: v for k, v in e.items() if k != "run_dir"} for e in entries}
    print(json.dumps({
        "generation": (repo._read_latest_pointer(product) or {}).get("generation"),
        "state": canonical(repo._load_current_state(product)),
        "wal_state": canonical(repo._project_records_from_runs(complete)),
        "runs": canonical(runs),
    }))


def read_index(root, product):
    manager = manager_for(root, product)
    record = manager.get_resolved_index(product=product)
    _, outcome = manager.ensure_resolved_index(product=product, record=record,
                                                 run_id=record.recorded_by_run_id)
    print(json.dumps({
        "hash": record.identity_hash,
        "recomputed": compute_resolved_index_identity_hash(record.index),
        "outcome": outcome,
        "attrs_hash": manager.read_resolved_index_attrs_hash(product=product),
        "index": canonical(record.index),
    }))


{"write": write, "read": read, "read-index": read_index}[sys.argv[1]](sys.argv[2], sys.argv[3])
