"""The reference (firecube 0.1.7) crashes in the middle of a segment write: a complete run of five spans,
then a run whose last segment ends in an unterminated half line and whose run.json is two hours old (its
process is dead). Usage: python torn_writes.py PRODUCT_DIR"""

import json
import os
import sys
import time
from types import SimpleNamespace

from firecube.core.controlplane.events import RunEventWriter
from firecube.core.filesystem.ops import create_filesystem_for_uri

root = sys.argv[1]
storage_config = SimpleNamespace(storage_driver="fsspec", access_key=None, secret_key=None, endpoint_url=None,
                                 region=None, path_style=None, anonymous=None)
fs, root_uri = create_filesystem_for_uri(root, storage_config, format="zarr")
control = root_uri.join(".firecube")
product = "TORN"


def record(run_id, key, kind, status, extra):
    return {"key": key, "type": kind, "size": 0, "timestamp": time.time(), "status": status,
            "meta": {"run_id": run_id}, **extra, "schema_version": "v2"}


def run_record(run_id, status):
    return record(run_id, f"run_{run_id}", "run", status, {"run": {"output_path": root, "output_format": "zarr"}})


def span(run_id, i):
    return record(run_id, f"span_{run_id}_{i}_data", "span", "active",
                  {"span": {"arrays": ["x"], "time_index_ranges": [[i, i]], "timestamps_written": 1}})


w = RunEventWriter(fs=fs, control_uri=control, product=product, run_id="torn-1")
w.append("run_started", run_record("torn-1", "started"), flush=True)
for i in range(5):
    w.append("span_committed", span("torn-1", i))
w.append("run_completed", run_record("torn-1", "complete"), flush=True)
w.finalize(status="complete")

w = RunEventWriter(fs=fs, control_uri=control, product=product, run_id="torn-2")
w.append("run_started", run_record("torn-2", "started"), flush=True)
w.append("span_committed", span("torn-2", 7))
w.flush()
with open(f"{root}/.firecube/runs/torn-2/events-00001.jsonl", "a") as handle:
    handle.write('{"schema_version":"v2","event_id":"torn-2:00001:0000')
meta = f"{root}/.firecube/runs/torn-2/run.json"
doc = json.load(open(meta))
doc["updated_at"] -= 7200
open(meta, "w").write(json.dumps(doc, separators=(",", ":")))
# The dead process's files are as old as its last heartbeat, by the filesystem's clock too.
for name in os.listdir(f"{root}/.firecube/runs/torn-2"):
    os.utime(f"{root}/.firecube/runs/torn-2/{name}", (time.time() - 7200, time.time() - 7200))
