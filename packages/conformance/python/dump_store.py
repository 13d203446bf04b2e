"""Independent reader drivers of the v2 write conformance suite (seed 000 §10).

Each reader dumps what a store committed into earthsciio/write-v2-dump/v1 without zarr-stream code:
the committed set comes from output_manifest.json read as plain JSON (its pages resolved by
manifest_pages.py), every array through the reader.

    python dump_store.py READER JOBS.json

READER is zarr-python | tensorstore | earthsciio. JOBS.json is a list of
{"store": DIR, "case": NAME, "out": FILE, "writer"?: BINDING}; all jobs run in this one process. Prints one line per job
("ok CASE" or "FAIL CASE: why") and exits 1 if any job failed.
"""

from __future__ import annotations

import base64
import json
import sys
from pathlib import Path
from typing import Any, Callable

import numpy as np

WRITER = "zarr-stream-ts"


# The repo's shared interop helpers (python/zsinterop.py) already open arrays with zarr-python and
# TensorStore; reuse them so every cross-check reads the same way.
sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "python"))
from zsinterop import read_tensorstore as _read_tensorstore  # noqa: E402
from zsinterop import read_zarr as _read_zarr  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from manifest_pages import MANIFEST_V2, MANIFEST_V2_PAGED, read_manifest  # noqa: E402


def read_zarr_python(root: Path, name: str) -> np.ndarray:
    return np.asarray(_read_zarr(str(root), name))


def read_tensorstore(root: Path, name: str) -> np.ndarray:
    return np.asarray(_read_tensorstore(str(root), name))


class _FileCache:
    """The one method earthsciio's store-backed zarr reader asks of its content-addressed cache."""

    class _Entry:
        def __init__(self, path: Path) -> None:
            self.path = str(path)

    def __init__(self, root: Path) -> None:
        self.root = root

    def fetch(self, url: str) -> "_FileCache._Entry":
        from earthsciio.errors import CacheMiss

        prefix = self.root.as_uri() + "/"
        key = url[len(prefix) :] if url.startswith(prefix) else url
        path = self.root / key
        if not path.is_file():
            raise CacheMiss(url, key)
        return self._Entry(path)


def read_earthsciio(root: Path, name: str) -> np.ndarray:
    from earthsciio.backends.zarr import ZarrReader

    ds = ZarrReader().read_store(_FileCache(root), root.as_uri(), [name])
    return np.asarray(ds.variables[name].data)


READERS: dict[str, Callable[[Path, str], np.ndarray]] = {
    "zarr-python": read_zarr_python,
    "tensorstore": read_tensorstore,
    "earthsciio": read_earthsciio,
}


def array_dump(data: np.ndarray, dtype: str) -> dict[str, Any]:
    # earthsciio widens float32 to float64 (its §3 logical dtype); narrowing back is exact for stored values.
    # np.array (not ascontiguousarray) keeps a 0-d record of a [time]-only variable 0-d.
    data = np.array(data, dtype=np.dtype(dtype).newbyteorder("<"), order="C")
    return {"dtype": dtype, "shape": list(data.shape), "data_b64": base64.b64encode(data.tobytes(order="C")).decode()}


def guarded(fn: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    try:
        return fn()
    except Exception as exc:  # a read error is recorded so the check names the record and variable
        return {"error": f"{type(exc).__name__}: {exc}"}


def dump(reader: str, root: Path, case: str, writer: str = WRITER) -> dict[str, Any]:
    read = READERS[reader]
    raw = json.loads((root / "output_manifest.json").read_text())
    m = read_manifest(root)
    label = m["schema"]
    if label not in ("earthsciio/output-manifest/v1", MANIFEST_V2, MANIFEST_V2_PAGED):
        raise ValueError(f"unknown manifest label {label!r}")
    v2 = label in (MANIFEST_V2, MANIFEST_V2_PAGED)
    indexed = v2 and m.get("time_mode") == "indexed"
    entries = m.get("records", {}).get("entries", []) if indexed else []
    indices = [i for i, e in enumerate(entries) if e["committed"]] if indexed else list(range(m["n_records"]))
    time = read(root, m["time_dim"]).astype("<f8")
    cache: dict[str, Any] = {}

    def var_array(name: str) -> np.ndarray:
        if name not in cache:
            cache[name] = read(root, name)
        return cache[name]

    records = []
    for i in indices:
        vars_: dict[str, Any] = {}
        for v in m["vars"]:
            axis = v["dims"].index(m["time_dim"])
            vars_[v["name"]] = guarded(lambda v=v, axis=axis: array_dump(np.take(var_array(v["name"]), i, axis=axis), v["dtype"]))
        rec: dict[str, Any] = {"index": i, "t": float(time[i]), "vars": vars_}
        if indexed:
            rec["generation"] = entries[i]["generation"]
        records.append(rec)
    statics = {}
    dtypes = {s["name"]: s["dtype"] for s in m.get("statics", [])}
    for name in m.get("statics_committed", []):
        statics[name] = guarded(lambda name=name: array_dump(read(root, name), dtypes[name]))
    blobs = []
    for b in m.get("blobs", []):
        if b["scope"] == "static":
            key, scope = f"blobs/static/{b['writer']}/{b['key']}", "static"
        else:
            key, scope = f"blobs/record/{b['record']}/{b['writer']}/{b['key']}", {"record": b["record"]}
        blobs.append({"scope": scope, "writer": b["writer"], "key": b["key"], "hex": (root / key).read_bytes().hex()})
    return {
        "schema": "earthsciio/write-v2-dump/v1",
        "case": case,
        "writer": writer,
        "reader": reader,
        "manifest_schema": label,
        "commit_seq": m.get("commit_seq") if v2 else None,
        "records": records,
        "statics": statics,
        "blobs": blobs,
        "manifest": raw,
    }


def main(argv: list[str]) -> int:
    if len(argv) != 3 or argv[1] not in READERS:
        print(f"usage: {argv[0]} {'|'.join(READERS)} JOBS.json", file=sys.stderr)
        return 2
    reader = argv[1]
    failed = 0
    for job in json.loads(Path(argv[2]).read_text()):
        try:
            d = dump(reader, Path(job["store"]).resolve(), job["case"], job.get("writer", WRITER))
            Path(job["out"]).write_text(json.dumps(d) + "\n")
            print(f"ok {job['case']}")
        except Exception as exc:
            failed += 1
            print(f"FAIL {job['case']}: {type(exc).__name__}: {exc}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
