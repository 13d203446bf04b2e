"""The contributor role of seed 000 §5 over zarr-python, on a local store: join a store an owner (in any
language) created, write records (append or indexed), partitioned statics and blobs of its region, and
flush to a CommitToken — the seed's JSON, handed to the owner however the caller moves it.

zarr-python encodes every shard (into an in-memory store, with an in-memory shape that covers the shard,
seed §5.4); this module places each encoded object atomically (stage and rename) and never writes
zarr.json or the manifest. The owner role is not here yet (python-package.md, "Not done").
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import tempfile
from collections.abc import Mapping, Sequence
from itertools import product
from pathlib import Path
from typing import Any

import numpy as np
import zarr
from zarr.core.array import AsyncArray
from zarr.core.metadata import ArrayV3Metadata
from zarr.storage import MemoryStore, StorePath

from .errors import NotCommitted, ProtocolError, RegionNotShardAligned, SchemaError, ZarrStreamError
from .manifest import MANIFEST_V2, MANIFEST_V2_PAGED, Manifest, committed_mask, read_manifest_from
from .readback import blob_object_key, read_box
from .storage import LocalStore

TOKEN_SCHEMA = "earthsciio/commit-token/v1"


class FingerprintMismatch(ZarrStreamError):
    """The manifest's fingerprint is not the one of the schema rebuilt from it (seed §5.1 join)."""


def fingerprint(m: Manifest) -> str:
    """Seed §3.1, from the schema fields of a v2 manifest."""
    indexed = m["time_mode"] == "indexed"

    def triples(specs: list[dict[str, Any]]) -> list[list[Any]]:
        return [[v["name"], list(v["dims"]), v["dtype"]] for v in specs]

    doc = {
        "chunk_shape": m["chunk_shape"],
        "dims": [[d["name"], (d["length"] if indexed else 0) if d["name"] == m["time_dim"] else d["length"]] for d in m["dims"]],
        "profile": m["profile"],
        "shard_shape": m["shard_shape"],
        "statics": triples(m["statics"]),
        "time_dim": m["time_dim"],
        "time_mode": m["time_mode"],
        "vars": triples(m["vars"]),
    }
    text = json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def _put_atomic(root: Path, key: str, data: bytes) -> None:
    path = root / key
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _memory_objects(mem: MemoryStore) -> dict[str, bytes]:
    """Every object zarr-python wrote into `mem`."""
    return {key: buf.to_bytes() for key, buf in mem._store_dict.items()}


class Contributor:
    """Seed §5 Contributor{id} over a local store (``Contributor.join``)."""

    def __init__(self, root: Path, m: Manifest, writer: int, region: Mapping[str, Sequence[int]]) -> None:
        self.root = root
        self.m = m
        self.writer = writer
        self.region = {d: (int(r[0]), int(r[1])) for d, r in region.items()}
        self.lengths = {d["name"]: d["length"] for d in m["dims"]}
        self.time_dim: str = m["time_dim"]
        self.indexed = m["time_mode"] == "indexed"
        self.st: int = m["shard_shape"][self.time_dim]
        self.committed = committed_mask(m)
        self.times = [e["t"] for e in m["records"]["entries"]] if self.indexed else []
        self.n = m["n_records"]  # append: the next index
        self.last_t: float | None = m.get("last_t")
        self.rows: dict[int, dict[int, dict[str, np.ndarray]]] = {}  # time shard -> offset -> var -> row
        self.dirty: set[int] = set()
        self.records: list[dict[str, Any]] = []
        self.statics: list[str] = []
        self.blobs: list[dict[str, Any]] = []
        self.objects: set[str] = set()
        self.closed = False

    # -- join --------------------------------------------------------------------------------------------

    @classmethod
    def join(cls, store: str | os.PathLike[str], writer: int, region: Mapping[str, Sequence[int]] | None = None) -> Contributor:
        objects = LocalStore(store)
        try:
            m = read_manifest_from(objects)
        except ZarrStreamError as exc:
            raise ProtocolError(f"join: {exc}") from None
        if m["schema"] not in (MANIFEST_V2, MANIFEST_V2_PAGED):
            raise ProtocolError(f"join needs a v2 store; {objects.url} has {m['schema']}")
        if fingerprint(m) != m["fingerprint"]:
            raise FingerprintMismatch(f"the manifest's fingerprint {m['fingerprint']} is not its schema's {fingerprint(m)}")
        if not isinstance(writer, int) or not (1 <= writer < m["n_writers"]):
            raise ProtocolError(f"contributor id {writer!r} must be in 1..{m['n_writers'] - 1}")
        c = cls(objects.root, m, writer, region or {})
        c._check_region()
        if not c.indexed and c.n % c.st:
            c._reload(c.n // c.st)
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

    def _reload(self, shard: int) -> None:
        """Seed §5.4 / §6.2: the committed records of a time shard this writer holds no buffer of."""
        rows = self.rows.setdefault(shard, {})
        t0 = shard * self.st
        t1 = min(t0 + self.st, self.n if not self.indexed else len(self.committed))
        wanted = [i for i in range(t0, t1) if i < len(self.committed) and self.committed[i]]
        if not wanted:
            return
        objects = LocalStore(self.root)
        for v in self._written(self.m["vars"]):
            ti = v["dims"].index(self.time_dim)
            sel = [(t0, t1) if d == self.time_dim else self._box(d) for d in v["dims"]]
            block = read_box(objects, v["name"], sel)
            for i in wanted:
                rows.setdefault(i - t0, {})[v["name"]] = np.take(block, i - t0, axis=ti)

    # -- what this writer supplies and writes ---------------------------------------------------------------

    def _partitioned(self, v: Mapping[str, Any]) -> bool:
        return any(d in self.region for d in v["dims"])

    def _written(self, specs: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Seed §4: a partitioned array lacking a region dim is written by the writer at 0 on that dim."""
        return [v for v in specs if self._partitioned(v) and all(self.region[d][0] == 0 for d in self.region if d not in v["dims"])]

    def _box(self, d: str) -> tuple[int, int]:
        return self.region.get(d, (0, self.lengths[d]))

    def _check_arrays(self, arrays: Mapping[str, Any]) -> dict[str, np.ndarray]:
        out: dict[str, np.ndarray] = {}
        for name in arrays:
            v = next((v for v in self.m["vars"] if v["name"] == name), None)
            if v is None:
                raise SchemaError(f"no variable named {name!r}")
            if not self._partitioned(v):
                raise ProtocolError(f"{name} is replicated: only the owner supplies it")
        for v in self.m["vars"]:
            if not self._partitioned(v):
                continue
            if v["name"] not in arrays:
                raise ProtocolError(f"a contributor supplies every partitioned variable; {v['name']} is missing")
            shape = tuple(self._box(d)[1] - self._box(d)[0] for d in v["dims"] if d != self.time_dim)
            a = np.asarray(arrays[v["name"]])
            if a.dtype != np.dtype(v["dtype"]) or a.size != math.prod(shape):
                raise SchemaError(f"{v['name']}: expected {v['dtype']} of shape {shape} (the region), got {a.dtype} {a.shape}")
            out[v["name"]] = a.reshape(shape)
        return out

    def _open(self) -> None:
        if self.closed:
            raise ProtocolError("the writer is closed")

    # -- records -------------------------------------------------------------------------------------------

    def _put_row(self, index: int, t: float, arrays: dict[str, np.ndarray]) -> None:
        shard, offset = divmod(index, self.st)
        if shard not in self.rows:
            self._reload(shard)
        self.rows.setdefault(shard, {})[offset] = arrays
        self.dirty.add(shard)
        self.records = [r for r in self.records if r["index"] != index] + [{"index": index, "t": float(t)}]

    def write_record(self, t: float, arrays: Mapping[str, Any]) -> int:
        """Seed §6.1 (append): the record index; t strictly increasing."""
        self._open()
        if self.indexed:
            raise ProtocolError("write_record is an error in indexed mode: use write_record_at")
        if self.last_t is not None and not t > self.last_t:
            raise ProtocolError(f"t {t} is not after the last t {self.last_t} (append order is time order)")
        rows = self._check_arrays(arrays)
        index = self.n
        self._put_row(index, t, rows)
        self.n, self.last_t = index + 1, t
        return index

    def write_record_at(self, index: int, t: float, arrays: Mapping[str, Any]) -> None:
        """Seed §6.2 (indexed): t must equal times[index] bitwise; a committed record is not rewritten."""
        self._open()
        if not self.indexed:
            raise ProtocolError("write_record_at is an error in append mode: use write_record")
        if not isinstance(index, int) or not (0 <= index < len(self.times)):
            raise SchemaError(f"record index {index!r} is outside [0, {len(self.times)})")
        if float(t) != self.times[index]:
            raise ProtocolError(f"t {t!r} is not times[{index}] = {self.times[index]!r}")
        if self.committed[index]:
            # The view may be stale: the owner may have invalidated it since join.
            self.committed = committed_mask(read_manifest_from(LocalStore(self.root)))
            if self.committed[index]:
                raise ProtocolError(f"record {index} is committed: the owner must invalidate it first")
        self._put_row(index, t, self._check_arrays(arrays))

    # -- statics and blobs ---------------------------------------------------------------------------------

    def write_static(self, name: str, array: Any) -> None:
        """A partitioned static's region, encoded and written now (seed §7)."""
        self._open()
        s = next((s for s in self.m["statics"] if s["name"] == name), None)
        if s is None:
            raise SchemaError(f"no static named {name!r}")
        if not self._partitioned(s):
            raise ProtocolError(f"static {name} is replicated: only the owner supplies it")
        if name in self.m["statics_committed"]:
            raise ProtocolError(f"static {name} is committed: the owner must invalidate it first")
        shape = tuple(self._box(d)[1] - self._box(d)[0] for d in s["dims"])
        a = np.asarray(array)
        if a.dtype != np.dtype(s["dtype"]) or a.size != math.prod(shape):
            raise SchemaError(f"static {name}: expected {s['dtype']} of shape {shape}, got {a.dtype} {a.shape}")
        if s in self._written(self.m["statics"]):
            self._encode(s, [self._box(d) for d in s["dims"]], a.reshape(shape), None)
        self.statics = sorted({*self.statics, name})

    def write_blob(self, scope: str | tuple[str, int] | Mapping[str, int], key: str, data: bytes) -> None:
        """A rank-local payload at blobs/static/<writer>/<key> or blobs/record/<i>/<writer>/<key>."""
        self._open()
        object_key = blob_object_key(scope, self.writer, key)
        record = None if scope == "static" else int(object_key.split("/")[2])
        _put_atomic(self.root, object_key, bytes(data))
        entry: dict[str, Any] = {"scope": "static", "key": key} if record is None else {"scope": "record", "record": record, "key": key}
        self.blobs = [b for b in self.blobs if b != entry] + [entry]
        self.objects.add(object_key)

    # -- flush / close -------------------------------------------------------------------------------------

    def _encode(self, v: dict[str, Any], sel: list[tuple[int, int]], block: np.ndarray, time_length: int | None) -> None:
        """Encodes `block` at `sel` with zarr-python into memory, then places each shard object atomically."""
        doc = json.loads((self.root / v["name"] / "zarr.json").read_text())
        if time_length is not None:
            ti = v["dims"].index(self.time_dim)
            doc["shape"][ti] = max(doc["shape"][ti], time_length)
        mem = MemoryStore()
        arr = zarr.Array(AsyncArray(metadata=ArrayV3Metadata.from_dict(doc), store_path=StorePath(mem, v["name"])))
        arr[tuple(slice(a, b) for a, b in sel)] = block
        written = _memory_objects(mem)
        for key in self._shard_keys(v, sel):
            data = written.get(key)
            if data is None:  # an all-fill shard is erased (seed §5.2)
                (self.root / key).unlink(missing_ok=True)
            else:
                _put_atomic(self.root, key, data)
            self.objects.add(key)

    def _shard_keys(self, v: dict[str, Any], sel: list[tuple[int, int]]) -> list[str]:
        shard = self.m["shard_shape"]
        ranges = [range(a // shard[d], math.ceil(b / shard[d])) for d, (a, b) in zip(v["dims"], sel, strict=True)]
        return [f"{v['name']}/c/" + "/".join(map(str, idx)) for idx in product(*ranges)]

    def _write_time_shard(self, v: dict[str, Any], shard: int) -> None:
        rows = self.rows.get(shard, {})
        t0 = shard * self.st
        length = min(self.st, len(self.times) - t0) if self.indexed else max(rows) + 1
        ti = v["dims"].index(self.time_dim)
        row_shape = [self._box(d)[1] - self._box(d)[0] for d in v["dims"] if d != self.time_dim]
        block = np.zeros([length, *row_shape], dtype=np.dtype(v["dtype"]))
        for k, arrays in rows.items():
            if v["name"] in arrays:
                block[k] = arrays[v["name"]]
        sel = [(t0, t0 + length) if d == self.time_dim else self._box(d) for d in v["dims"]]
        self._encode(v, sel, np.moveaxis(block, 0, ti), t0 + length)

    def flush(self) -> dict[str, Any]:
        """Writes every dirty time shard of the region whole; the token of what was written since the last."""
        self._open()
        for shard in sorted(self.dirty):
            for v in self._written(self.m["vars"]):
                self._write_time_shard(v, shard)
        if not self.indexed:  # a full append time shard is never rewritten
            self.rows = {s: r for s, r in self.rows.items() if s == self.n // self.st}
        for r in self.records:
            if self.indexed:
                self.committed[r["index"]] = True  # in this writer's view: tokened (seed §6.2)
        token = {
            "schema": TOKEN_SCHEMA,
            "writer": self.writer,
            "region": {d: [a, b] for d, (a, b) in sorted(self.region.items())},
            "fingerprint": self.m["fingerprint"],
            "records": sorted(self.records, key=lambda r: r["index"]),
            "statics": sorted(self.statics),
            "blobs": sorted(self.blobs, key=lambda b: (b["scope"], b.get("record", -1), b["key"])),
            "objects": sorted(self.objects),
        }
        self.dirty.clear()
        self.records, self.statics, self.blobs, self.objects = [], [], [], set()
        return token

    def close(self) -> None:
        """Errors while anything written is not in a token (deliver the token first)."""
        if self.records or self.statics or self.blobs or self.dirty:
            raise ProtocolError("written but not flushed: flush and deliver the token first")
        self.closed = True


__all__ = ["Contributor", "FingerprintMismatch", "NotCommitted", "TOKEN_SCHEMA", "fingerprint"]
