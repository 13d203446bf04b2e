"""Manual interop check (needs Python >= 3.12 and firecube==0.1.7, see interop/README.md).

Writes a `.firecube/` control plane with the reference implementation's own writer classes: a complete
run of 30 spans, a run that replaces one of them, a failed run, a live run left with a torn tail, a held
claim and a second claim whose heartbeat is old. Usage: python reference_writes.py PRODUCT_DIR
"""

import json
import os
import sys
import time
from types import SimpleNamespace

from firecube.core.controlplane.claims import FilesystemClaimService
from firecube.core.controlplane.events import RunEventWriter
from firecube.core.controlplane.types import WriteDomain
from firecube.core.filesystem.ops import create_filesystem_for_uri

root = sys.argv[1]
storage_config = SimpleNamespace(storage_driver="fsspec", access_key=None, secret_key=None, endpoint_url=None,
                                 region=None, path_style=None, anonymous=None)
fs, root_uri = create_filesystem_for_uri(root, storage_config, format="zarr")
control = root_uri.join(".firecube")
product = "REF"


def span(run_id, i, status="active"):
    return {
        "key": f"span_{run_id}_{i}_data",
        "type": "span",
        "size": 0,
        "timestamp": time.time(),
        "status": status,
        "meta": {"group": "data", "batch_id": str(i), "run_id": run_id},
        "span": {"arrays": ["x"], "time_index_ranges": [[i, i]], "timestamps_written": 1, "aligned": True,
                 "state_array": None, "state_deleted_value": 2},
        "schema_version": "v2",
    }


def run_record(run_id, status):
    return {"key": f"run_{run_id}", "type": "run", "size": 0, "timestamp": time.time(), "status": status,
            "meta": {"run_id": run_id}, "run": {"output_path": root, "output_format": "zarr"}, "schema_version": "v2"}


w = RunEventWriter(fs=fs, control_uri=control, product=product, run_id="ref-1")
w.append("run_started", run_record("ref-1", "started"), flush=True)
for i in range(30):
    w.append("span_committed", span("ref-1", i))
w.append("span_recorded", {"key": "unknown_type_record", "status": "active"})
w.append("run_completed", run_record("ref-1", "complete"), flush=True)
w.finalize(status="complete")
time.sleep(0.01)

w = RunEventWriter(fs=fs, control_uri=control, product=product, run_id="ref-2")
w.append("run_started_with_replacement", {"replaces": ["ref-1"]}, flush=True)
w.append("span_committed", span("ref-2", 0))
w.append("replacement_committed", {"replacing_run_id": "ref-2", "replaced_span_keys": ["span_ref-1_0_data"]}, flush=True)
w.append("run_completed", run_record("ref-2", "complete"), flush=True)
w.finalize(status="complete")

w = RunEventWriter(fs=fs, control_uri=control, product=product, run_id="ref-3-failed")
w.append("run_started", run_record("ref-3-failed", "started"), flush=True)
w.append("span_committed", span("ref-3-failed", 99))
w.append("run_failed", run_record("ref-3-failed", "failed"), flush=True)
w.finalize(status="failed", error="boom")

w = RunEventWriter(fs=fs, control_uri=control, product=product, run_id="ref-4-live")
w.append("run_started", run_record("ref-4-live", "started"), flush=True)
w.append("span_committed", span("ref-4-live", 7))
w.flush()
# A writer killed mid-write leaves an unterminated half line (the reference writes segments in place).
seg = f"{root}/.firecube/runs/ref-4-live/events-00001.jsonl"
with open(seg, "a") as handle:
    handle.write('{"schema_version":"v2","event_id":"ref-4-li')

claims = FilesystemClaimService(fs=fs, control_root_resolver=lambda p: (control, control))
claims.acquire(product=product, domain=WriteDomain(product, "zarr_append", "data"), owner_id="ref-owner")
old = claims.acquire(product=product, domain=WriteDomain(product, "zarr_region", "data:slot=1"), owner_id="ref-dead")
path = f"{root}/.firecube/claims/{WriteDomain(product, 'zarr_region', 'data:slot=1').claim_name}"
doc = json.load(open(path))
doc["last_heartbeat_at"] -= 1000
open(path, "w").write(json.dumps(doc, separators=(",", ":")))
# A dead owner's claim file is as old as its last heartbeat, by the filesystem's clock too.
mtime = time.time() - 1000
os.utime(path, (mtime, mtime))
print(json.dumps({"claims": [c.domain for c in claims.list_claims(product=product)]}))
