"""A Python contributor in a process of its own, driven one JSON line at a time (test_contributor_fencing.py):
a job started twice is two such processes with one writer id.

    python py_contributor.py STORE WRITER
    {"op": "join"}                         -> {"ok": true}
    {"op": "write", "r": R, "tag": TAG}    -> {"ok": true, "index": I}   (append record R, t = 3600 R)
    {"op": "blob", "key": KEY}             -> {"ok": true}
    {"op": "flush"}                        -> {"ok": true, "token": {...}}
Errors: {"ok": false, "error": {"name": CLASS, "message": TEXT}}.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fencing_schema import REGIONS, values  # noqa: E402

from zarr_stream.errors import ZarrStreamError  # noqa: E402
from zarr_stream.writer import Contributor  # noqa: E402


def main() -> None:
    store, writer = sys.argv[1], int(sys.argv[2])
    w: Contributor | None = None
    for line in sys.stdin:
        if not line.strip():
            continue
        req = json.loads(line)
        try:
            if req["op"] == "join":
                w = Contributor.join(store, writer, REGIONS[writer])
                reply: dict = {"ok": True}
            elif req["op"] == "write":
                assert w is not None
                r = int(req["r"])
                index = w.write_record(3600.0 * r, {"temperature": values(r, writer, req["tag"])})
                reply = {"ok": True, "index": index}
            elif req["op"] == "blob":
                assert w is not None
                w.write_blob("static", req["key"], np.arange(4, dtype="uint8").tobytes())
                reply = {"ok": True}
            elif req["op"] == "flush":
                assert w is not None
                reply = {"ok": True, "token": w.flush()}
            else:
                reply = {"ok": False, "error": {"name": "Usage", "message": f"unknown op {req['op']}"}}
        except ZarrStreamError as exc:
            reply = {"ok": False, "error": {"name": type(exc).__name__, "message": str(exc)}}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
