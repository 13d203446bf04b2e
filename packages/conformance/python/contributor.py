"""A minimal Python contributor of the streaming writer contract v2 (seed 000 §4, §5), with zarr-python.

It shows that the commit token is the whole interface between writers: a contributor in any language
joins the store the owner created, writes the shard objects of its region for the records it is given
(zarr-python does the encoding), and hands the owner a CommitToken as plain JSON. The owner, here the
TypeScript writer, verifies and commits it like any other token.

Scope (minimal on purpose): append mode, a filesystem store, records only (no statics, blobs or indexed
mode). What it does write follows the contract: the manifest must be v2 and its fingerprint must match the
schema rebuilt from it; the region must be shard-aligned; the open time shard's committed records are
reloaded at join; only whole shards are written (a partial time shard padded with fill); zarr.json and
the manifest are never written.

    python contributor.py serve        # one JSON request per stdin line, one JSON reply per stdout line

Requests: {"op": "join", "store": DIR, "writer": ID, "region": {...}, "seeds": {VAR: SEED}}
          {"op": "write_record", "t": T, "r": R, "vars"?: [...]}   (arrays from the §10 generator)
          {"op": "flush"}  -> reply {"ok": true, "token": {...}}
          {"op": "close"}  (fails while records are unflushed)
Replies:  {"ok": true, ...} or {"ok": false, "error": {"name": CLASS, "message": TEXT}}
"""

from __future__ import annotations

import hashlib
import json
import math
import sys
from itertools import product
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from crosscheck_write_v2 import DTYPES, generated_region  # noqa: E402
from manifest_pages import MANIFEST_V2, MANIFEST_V2_PAGED  # noqa: E402
from manifest_pages import resolve as resolve_pages  # noqa: E402

TOKEN_SCHEMA = "earthsciio/commit-token/v1"
SCHEMAS = Path(__file__).resolve().parents[2] / "spec" / "schemas"


class ZarrStreamError(Exception):
    """Any contract error; the class name is what crosses the language boundary."""


class SchemaError(ZarrStreamError):
    pass


class RegionNotShardAligned(ZarrStreamError):
    pass


class FingerprintMismatch(ZarrStreamError):
    pass


class ProtocolError(ZarrStreamError):
    pass


def fingerprint(m: dict[str, Any]) -> str:
    """Seed §3.1 from the manifest's schema fields: sha256 of canonical JSON (Python's own json.dumps)."""
    triples = lambda specs: [[v["name"], list(v["dims"]), v["dtype"]] for v in specs]  # noqa: E731
    doc = {
        "chunk_shape": m["chunk_shape"],
        "dims": [[d["name"], 0 if d["name"] == m["time_dim"] else d["length"]] for d in m["dims"]],
        "profile": m["profile"],
        "shard_shape": m["shard_shape"],
        "statics": triples(m["statics"]),
        "time_dim": m["time_dim"],
        "time_mode": m["time_mode"],
        "vars": triples(m["vars"]),
    }
    text = json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


# The schema file of each v2 label: the seed's form, and our paged form of it.
MANIFEST_SCHEMA_FILES = {
    MANIFEST_V2: "output-manifest-v2.schema.json",
    MANIFEST_V2_PAGED: "output-manifest-v2-paged.schema.json",
}


def _validate_manifest(m: Any) -> None:
    try:
        from jsonschema import Draft202012Validator
    except ImportError:  # the checks below still guard every field this module reads
        return
    v = Draft202012Validator(json.loads((SCHEMAS / MANIFEST_SCHEMA_FILES[m["schema"]]).read_text()))
    error = next(iter(v.iter_errors(m)), None)
    if error is not None:
        pointer = "".join(f"/{p}" for p in error.absolute_path)
        raise SchemaError(f"output manifest {m['schema']}: {pointer}: {error.message}")


class Contributor:
    def __init__(self, root: Path, manifest: dict[str, Any], writer: int, region: dict[str, list[int]], seeds: dict[str, int]):
        self.root, self.m, self.writer, self.seeds = root, manifest, writer, seeds
        self.region = {d: (int(a), int(b)) for d, (a, b) in region.items()}
        self.lengths = {d["name"]: d["length"] for d in manifest["dims"]}
        self.time_dim = manifest["time_dim"]
        self.st = manifest["shard_shape"][self.time_dim]
        self.n = manifest["n_records"]  # committed records, then the next index to write
        self.last_t = manifest["last_t"]
        # Rows of each open or dirty time shard: shard index -> {offset: {var: array}}.
        self.rows: dict[int, dict[int, dict[str, np.ndarray]]] = {}
        self.dirty: set[int] = set()
        self.pending: list[dict[str, Any]] = []  # records since the last token
        self.closed = False
        self.schema_view = {"dims": [[d["name"], d["length"]] for d in manifest["dims"]], "time_dim": self.time_dim}

    # -- join ---------------------------------------------------------------------------------------------

    @classmethod
    def join(cls, store: str, writer: int, region: dict[str, list[int]], seeds: dict[str, int]) -> "Contributor":
        root = Path(store)
        path = root / "output_manifest.json"
        if not path.is_file():
            raise ProtocolError(f"{store} has no output_manifest.json: the owner must create the store first")
        m = json.loads(path.read_text())
        if not isinstance(m, dict) or m.get("schema") not in MANIFEST_SCHEMA_FILES:
            raise ProtocolError(f"join needs an {MANIFEST_V2} store (or {MANIFEST_V2_PAGED}); {store} has {m.get('schema') if isinstance(m, dict) else m!r}")
        _validate_manifest(m)
        m = resolve_pages(root, m)
        if fingerprint(m) != m["fingerprint"]:
            raise FingerprintMismatch(f"the manifest's fingerprint {m['fingerprint']} is not its schema's {fingerprint(m)}")
        if m["time_mode"] != "append":
            raise ProtocolError("this minimal contributor writes append-mode stores only")
        if not (1 <= writer < m["n_writers"]):
            raise ProtocolError(f"contributor id {writer} must be in 1..{m['n_writers'] - 1}")
        c = cls(root, m, writer, region, seeds)
        c._check_region()
        c._reload_open_shard()
        return c

    def _check_region(self) -> None:
        for d, (start, stop) in self.region.items():
            if d not in self.lengths or d == self.time_dim:
                raise RegionNotShardAligned(f"region dim {d!r} is not a non-time dim")
            n, sh = self.lengths[d], self.m["shard_shape"][d]
            if not (0 <= start < stop <= n) or start % sh != 0 or (stop % sh != 0 and stop != n):
                raise RegionNotShardAligned(f"region {d} [{start}, {stop}) is not aligned to shard {sh} (length {n})")
        if self.m["region_dims"] and sorted(self.region) != sorted(self.m["region_dims"]):
            raise RegionNotShardAligned(f"region dims {sorted(self.region)} differ from the store's {self.m['region_dims']}")

    def _reload_open_shard(self) -> None:
        """Seed §5.4: the committed records of the open time shard, so its rewrite keeps them."""
        start = self.n - self.n % self.st
        if start == self.n:
            return
        import zarr

        shard = start // self.st
        for v in self._written_vars():
            arr = zarr.open_array(store=str(self.root), path=v["name"], mode="r", zarr_format=3)
            ti = v["dims"].index(self.time_dim)
            block = np.asarray(arr[self._selection(v, ti, start, self.n)])
            for k in range(self.n - start):
                self.rows.setdefault(shard, {}).setdefault(k, {})[v["name"]] = np.take(block, k, axis=ti)

    # -- variables ----------------------------------------------------------------------------------------

    def _partitioned(self, v: dict[str, Any]) -> bool:
        return any(d in self.region for d in v["dims"])

    def _written_vars(self) -> list[dict[str, Any]]:
        """Seed §4: a partitioned variable lacking a region dim is written by the writer at 0 on that dim."""
        return [
            v for v in self.m["vars"]
            if self._partitioned(v) and all(self.region[d][0] == 0 for d in self.region if d not in v["dims"])
        ]

    def _box(self, d: str) -> tuple[int, int]:
        return self.region.get(d, (0, self.lengths[d]))

    def _selection(self, v: dict[str, Any], ti: int, t0: int, t1: int) -> tuple[slice, ...]:
        return tuple(slice(t0, t1) if i == ti else slice(*self._box(d)) for i, d in enumerate(v["dims"]))

    # -- write_record / flush / close ---------------------------------------------------------------------

    def write_record(self, t: float, r: int, only: list[str] | None = None) -> int:
        supplied = [v for v in self.m["vars"] if (v["name"] in only if only is not None else self._partitioned(v))]
        if self.closed:
            raise ProtocolError("write_record after close")
        for v in supplied:
            if not self._partitioned(v):
                raise ProtocolError(f"{v['name']} is replicated: only the owner supplies it")
        missing = [v["name"] for v in self.m["vars"] if self._partitioned(v) and v not in supplied]
        if missing:
            raise ProtocolError(f"a contributor supplies every partitioned variable; missing {missing}")
        if self.last_t is not None and not t > self.last_t:
            raise ProtocolError(f"t {t} is not after the last t {self.last_t} (append order is time order)")
        index = self.n
        shard, offset = divmod(index, self.st)
        row = self.rows.setdefault(shard, {}).setdefault(offset, {})
        for v in supplied:
            # Global indices over the region: the array a caller would pass, shaped to the region.
            seeded = {**v, "seed": self.seeds[v["name"]]}
            row[v["name"]] = generated_region(self.schema_view, seeded, r, self.region)
        self.dirty.add(shard)
        self.pending.append({"index": index, "t": float(t)})
        self.n, self.last_t = index + 1, t
        return index

    def flush(self) -> dict[str, Any]:
        if self.closed:
            raise ProtocolError("flush after close")
        objects: list[str] = []
        for shard in sorted(self.dirty):
            for v in self._written_vars():
                objects += self._write_shard(v, shard)
        # Only the open time shard's rows are kept: a full one is never rewritten.
        self.rows = {s: rows for s, rows in self.rows.items() if s == self.n // self.st}
        self.dirty.clear()
        token = {
            "schema": TOKEN_SCHEMA,
            "writer": self.writer,
            "region": {d: [a, b] for d, (a, b) in sorted(self.region.items())},
            "fingerprint": self.m["fingerprint"],
            "records": self.pending,
            "statics": [],
            "blobs": [],
            "objects": sorted(objects),
        }
        self.pending = []
        return token

    def close(self) -> None:
        if self.pending or self.dirty:
            raise ProtocolError(f"{len(self.pending)} records written but not tokened: flush and deliver the token first")
        self.closed = True

    def _write_shard(self, v: dict[str, Any], shard: int) -> list[str]:
        """The whole time shard over the region, padded with fill past the last written row."""
        rows = self.rows.get(shard, {})
        length = max(rows) + 1
        ti = v["dims"].index(self.time_dim)
        dims_no_time = [d for d in v["dims"] if d != self.time_dim]
        row_shape = [self._box(d)[1] - self._box(d)[0] for d in dims_no_time]
        block = np.zeros([length, *row_shape], dtype=DTYPES[v["dtype"]])
        for k, arrays in rows.items():
            if v["name"] in arrays:
                block[k] = arrays[v["name"]]
        t0 = shard * self.st
        array = self._array_covering(v, ti, t0 + length)
        array[self._selection(v, ti, t0, t0 + length)] = np.moveaxis(block, 0, ti)
        return self._shard_keys(v, shard)

    def _array_covering(self, v: dict[str, Any], ti: int, time_length: int):
        """The array with an in-memory shape[time] that covers the shard (seed §5.4): zarr.json is not written."""
        from zarr.core.array import Array, AsyncArray
        from zarr.core.metadata.v3 import ArrayV3Metadata
        from zarr.storage import LocalStore, StorePath

        doc = json.loads((self.root / v["name"] / "zarr.json").read_text())
        doc["shape"][ti] = max(doc["shape"][ti], time_length)
        store_path = StorePath(LocalStore(str(self.root)), v["name"])
        return Array(AsyncArray(metadata=ArrayV3Metadata.from_dict(doc), store_path=store_path))

    def _shard_keys(self, v: dict[str, Any], shard: int) -> list[str]:
        ranges = []
        for d in v["dims"]:
            if d == self.time_dim:
                ranges.append([shard])
                continue
            sh = self.m["shard_shape"][d]
            start, stop = self._box(d)
            ranges.append(range(start // sh, math.ceil(stop / sh)))
        return [f"{v['name']}/c/" + "/".join(map(str, idx)) for idx in product(*ranges)]


def serve(stdin=sys.stdin, stdout=sys.stdout) -> int:
    contributor: Contributor | None = None
    for line in stdin:
        if not line.strip():
            continue
        reply: dict[str, Any] = {"ok": True}
        try:
            req = json.loads(line)
            op = req["op"]
            if op == "join":
                contributor = Contributor.join(req["store"], req["writer"], req.get("region", {}), req["seeds"])
            elif contributor is None:
                raise ProtocolError(f"{op} before join")
            elif op == "write_record":
                reply["index"] = contributor.write_record(req["t"], req["r"], req.get("vars"))
            elif op == "flush":
                reply["token"] = contributor.flush()
            elif op == "close":
                contributor.close()
            else:
                raise ProtocolError(f"unknown op {op!r}")
        except Exception as exc:  # every failure is a reply: the caller decides whether it was expected
            name = type(exc).__name__ if isinstance(exc, ZarrStreamError) else f"Python{type(exc).__name__}"
            reply = {"ok": False, "error": {"name": name, "message": str(exc)}}
        stdout.write(json.dumps(reply) + "\n")
        stdout.flush()
    return 0


if __name__ == "__main__":
    if sys.argv[1:] != ["serve"]:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    sys.exit(serve())
