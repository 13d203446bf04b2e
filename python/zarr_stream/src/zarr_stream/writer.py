"""The contributor and owner roles of seed 000 §5 over zarr-python, on a local store: join a store an owner (in any
language) created, write records (append or indexed), partitioned statics and blobs of its region, and
flush to a CommitToken — the seed's JSON, handed to the owner however the caller moves it.

zarr-python encodes every shard (into an in-memory store, with an in-memory shape that covers the shard,
seed §5.4); this module places each encoded object atomically (stage and rename). A contributor never
writes zarr.json or the manifest; the owner (``Owner``: create, commit, invalidate, invalidate_statics,
close) writes both, the manifest last. What the owner lacks is listed in python-package.md, "Not done".

A writer started twice (a job submitted again, a zombie that wakes up) is fenced as the TypeScript writer
fences it (fencing.md, fencing.py): every handle takes its writer's lease, writes every object conditional on
the version it last wrote or read, and seals each token into its lease; the owner commits only sealed tokens.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from collections.abc import Mapping, Sequence
from itertools import product
from pathlib import Path
from typing import Any, NoReturn

import numpy as np
import zarr
from zarr.core.array import AsyncArray
from zarr.core.metadata import ArrayV3Metadata
from zarr.storage import MemoryStore, StorePath

from .errors import CommitError, NotCommitted, ProtocolError, RegionNotShardAligned, SchemaError, StoreExists, ZarrStreamError
from .fencing import (
    FencedWrites,
    announce_commit,
    assert_tokens_sealed,
    token_digest,
    wait_for_commit_in_flight,
    withdraw_commit,
)
from .local_writes import Stamp, put_if_absent, put_if_stamp, stamp_of
from .manifest import MANIFEST_V2, MANIFEST_V2_PAGED, Manifest, committed_indices, committed_mask, read_manifest_from
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


def _commit_seq(m: Manifest) -> int:
    """A manifest's commit_seq (0 before the first commit)."""
    return int(m.get("commit_seq") or 0)


def _memory_objects(mem: MemoryStore) -> dict[str, bytes]:
    """Every object zarr-python wrote into `mem`."""
    return {key: buf.to_bytes() for key, buf in mem._store_dict.items()}


class Contributor:
    """Seed §5 Contributor{id} over a local store (``Contributor.join``)."""

    owner = False

    def __init__(
        self, root: Path, m: Manifest, writer: int, region: Mapping[str, Sequence[int]], fences: FencedWrites | None = None
    ) -> None:
        self.root = root
        self.m = m
        self.writer = writer
        self.region = {d: (int(r[0]), int(r[1])) for d, r in region.items()}
        self.lengths = {d["name"]: d["length"] for d in m["dims"]}
        self.time_dim: str = m["time_dim"]
        self.indexed = m["time_mode"] == "indexed"
        self.st: int = m["shard_shape"][self.time_dim]
        self.committed = committed_mask(m)
        # Statics committed in this writer's view: the manifest's at join, plus those it has tokened.
        self.statics_done: set[str] = set(m["statics_committed"])
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
        # Every object this handle writes, conditional on the version it last wrote or read; its lease.
        self.fences = fences or FencedWrites(root)
        self.fences.may_overwrite = self._may_overwrite
        # Records of every token this handle flushed: commits of them are commits it took part in.
        self._posted: set[int] = set()

    # -- join --------------------------------------------------------------------------------------------

    @classmethod
    def join(
        cls,
        store: str | os.PathLike[str],
        writer: int,
        region: Mapping[str, Sequence[int]] | None = None,
        *,
        commit_wait_s: float = 60.0,
    ) -> Contributor:
        """Seed §5.1 join. Once the open is known to be valid, takes the writer's lease (fencing every older
        handle of it), waits for a commit in flight (at most `commit_wait_s`), then reads the manifest again:
        the view this handle goes on from is the committed state, which no late commit changes."""
        objects = LocalStore(store)
        m = cls._joinable(objects, writer)
        cls(objects.root, m, writer, region or {})._check_region()
        fences = FencedWrites(objects.root)
        fences.take_lease(writer, create=False)
        # The owner may be between its seal check and its manifest write with the older handle's token
        # (fencing.md, "A takeover during a commit"): its intent says so, and that commit lands first.
        wait_for_commit_in_flight(objects.root, lambda: _commit_seq(read_manifest_from(objects)), commit_wait_s)
        fresh = read_manifest_from(objects)
        if fresh["schema"] != m["schema"]:
            raise ProtocolError(f"{objects.url}: the manifest changed from {m['schema']} to {fresh['schema']} while joining")
        c = cls(objects.root, fresh, writer, region or {}, fences)
        if not c.indexed and c.n % c.st:
            c._reload(c.n // c.st)
        return c

    @staticmethod
    def _joinable(objects: LocalStore, writer: int) -> Manifest:
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
        return m

    def _check_region(self) -> None:
        for d, (start, stop) in self.region.items():
            if d not in self.lengths or d == self.time_dim:  # a bad argument, as the TypeScript writer says
                raise SchemaError(f"region dim {d!r} is not a non-time dim of the schema")
            n, sh = self.lengths[d], self.m["shard_shape"][d]
            if not (0 <= start < stop <= n) or start % sh != 0 or (stop % sh != 0 and stop != n):
                raise RegionNotShardAligned(f"region {d} [{start}, {stop}) is not aligned to shard {sh} (length {n})")
        if self.m["region_dims"] and sorted(self.region) != sorted(self.m["region_dims"]):
            raise ProtocolError(f"region dims {sorted(self.region)} differ from the store's {self.m['region_dims']}")

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
            # Stamped before the read: the next write of each shard is conditional on what was read.
            for key in self._shard_keys(v, sel):
                self.fences.note_read(key, stamp_of(self.root / key))
            block = read_box(objects, v["name"], sel)
            for i in wanted:
                rows.setdefault(i - t0, {})[v["name"]] = np.take(block, i - t0, axis=ti)
        # Checked after the read: a handle fenced meanwhile never goes on from what its successor wrote.
        self.fences.assert_lease()

    def _may_overwrite(self, key: str) -> bool:
        """Asked before this lease holder replaces an object another write changed (rule 3 of fencing.md):
        yes while every record the store has committed is one this handle's view holds as committed or one
        it flushed, so the object cannot be committed data it has not seen (``ContributorView.sawEveryCommit``)."""
        fresh = committed_indices(read_manifest_from(LocalStore(self.root)))
        seen = {i for i, c in enumerate(self.committed) if c} | self._posted
        return all(i in seen for i in fresh)

    # -- what this writer supplies and writes ---------------------------------------------------------------

    def _partitioned(self, v: Mapping[str, Any]) -> bool:
        return any(d in self.region for d in v["dims"])

    def _supplies(self, v: Mapping[str, Any]) -> bool:
        """Seed §4: a contributor supplies exactly the partitioned variables."""
        return self._partitioned(v)

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
            if not self._supplies(v):
                raise ProtocolError(f"{name} is replicated: only the owner supplies it")
        for v in self.m["vars"]:
            if not self._supplies(v):
                continue
            if v["name"] not in arrays:
                raise SchemaError(f"the record arrays lack {v['name']}: a writer supplies every variable it writes (seed §4)")
            shape = tuple(self._box(d)[1] - self._box(d)[0] for d in v["dims"] if d != self.time_dim)
            a = np.asarray(arrays[v["name"]])
            if a.dtype != np.dtype(v["dtype"]) or a.size != math.prod(shape):
                raise SchemaError(f"{v['name']}: expected {v['dtype']} of shape {shape} (the region), got {a.dtype} {a.shape}")
            out[v["name"]] = a.reshape(shape)
        return out

    def _open(self) -> None:
        if self.closed:
            raise ProtocolError("the writer is closed")
        self.fences.assert_unfenced()

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
            # A bad argument, as the TypeScript writer names it (SchemaError), so a refusal reads the same.
            raise SchemaError(f"t {t} is not after the last t {self.last_t} (append order is time order)")
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
        if not self._supplies(s):
            raise ProtocolError(f"static {name} is replicated: only the owner supplies it")
        if name in self.statics_done:
            # The view may be stale: the owner may have invalidated it since (as for records, §6.2).
            self.statics_done = set(read_manifest_from(LocalStore(self.root))["statics_committed"])
            if name in self.statics_done:
                raise ProtocolError(f"static {name} is committed: the owner must invalidate it first")
        shape = tuple(self._box(d)[1] - self._box(d)[0] for d in s["dims"])
        a = np.asarray(array)
        if a.dtype != np.dtype(s["dtype"]) or a.size != math.prod(shape):
            raise SchemaError(f"static {name}: expected {s['dtype']} of shape {shape}, got {a.dtype} {a.shape}")
        if s in self._written(self.m["statics"]):
            self.fences.assert_lease()
            self._encode(s, [self._box(d) for d in s["dims"]], a.reshape(shape), None)
        self.statics = sorted({*self.statics, name})

    def write_blob(self, scope: str | tuple[str, int] | Mapping[str, int], key: str, data: bytes) -> None:
        """A rank-local payload at blobs/static/<writer>/<key> or blobs/record/<i>/<writer>/<key>."""
        self._open()
        object_key = blob_object_key(scope, self.writer, key)
        record = None if scope == "static" else int(object_key.split("/")[2])
        self.fences.assert_lease()
        self.fences.put(object_key, bytes(data))
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
                self.fences.delete(key)
            else:
                self.fences.put(key, data)
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
        if self.dirty:  # one stat: a handle whose lease was taken writes nothing more
            self.fences.assert_lease()
        for shard in sorted(self.dirty):
            for v in self._written(self.m["vars"]):
                self._write_time_shard(v, shard)
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
        # Sealed before anything is handed off: a failure leaves the writes pending for the next flush.
        self._seal(token)
        if not self.indexed:  # a full append time shard is never rewritten
            self.rows = {s: r for s, r in self.rows.items() if s == self.n // self.st}
        for r in self.records:
            self._posted.add(r["index"])
            if self.indexed:
                self.committed[r["index"]] = True  # in this writer's view: tokened (seed §6.2)
        self.statics_done |= set(self.statics)
        self.dirty.clear()
        self.records, self.statics, self.blobs, self.objects = [], [], [], set()
        return token

    def _seal(self, token: dict[str, Any]) -> None:
        """Seals the token into this writer's lease (fencing.md, "Sealed tokens"): the owner commits a
        contributor's token only when its writer's lease lists it, and a handle whose lease was taken is
        Fenced here, before its token leaves."""
        self.fences.seal_token(token_digest(token))

    def close(self) -> None:
        """Errors while anything written is not in a token (deliver the token first)."""
        if self.records or self.statics or self.blobs or self.dirty:
            raise ProtocolError("written but not flushed: flush and deliver the token first")
        self.closed = True




# -- the owner ---------------------------------------------------------------------------------------------

PROFILES: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
    # profile: (manifest codec, inner compressor codec without typesize)
    "diagnostic": ({"id": "blosc", "cname": "zstd", "clevel": 5, "shuffle": "shuffle"}, {"name": "blosc", "configuration": {"cname": "zstd", "clevel": 5, "shuffle": "shuffle"}}),
    "checkpoint": ({"id": "blosc", "cname": "zstd", "clevel": 7, "shuffle": "shuffle"}, {"name": "blosc", "configuration": {"cname": "zstd", "clevel": 7, "shuffle": "shuffle"}}),
    "wasm": ({"id": "zstd", "level": 5, "checksum": False}, {"name": "zstd", "configuration": {"level": 5, "checksum": False}}),
}


def _array_doc(shape: list[int], dtype: str, shard: list[int], chunk: list[int], profile: str, dims: list[str], attrs: Mapping[str, Any]) -> dict[str, Any]:
    """Seed §1's array layout: sharding_indexed over [bytes(little), compressor], index [bytes, crc32c] at the end."""
    compressor = json.loads(json.dumps(PROFILES[profile][1]))
    if compressor["name"] == "blosc":
        compressor["configuration"] |= {"typesize": np.dtype(dtype).itemsize, "blocksize": 0}
    little = {"name": "bytes", "configuration": {"endian": "little"}}
    return {
        "zarr_format": 3,
        "node_type": "array",
        "shape": shape,
        "data_type": dtype,
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": shard}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": 0.0 if dtype.startswith("float") else 0,
        "codecs": [
            {
                "name": "sharding_indexed",
                "configuration": {
                    "chunk_shape": chunk,
                    "codecs": [little, compressor],
                    "index_codecs": [little, {"name": "crc32c"}],
                    "index_location": "end",
                },
            }
        ],
        "attributes": {**attrs, "_ARRAY_DIMENSIONS": dims},
        "dimension_names": dims,
    }


def _same_float(a: float, b: float) -> bool:
    return np.float64(a).tobytes() == np.float64(b).tobytes()


class Owner(Contributor):
    """Seed §5 Owner{n} over a local store: create, its own region's writes (and the replicated variables
    and the time coordinate), and commit — verify every token (§5.3), then shapes, manifest last.

    Creating claims the store by creating its group's zarr.json (a hard link: of creators racing, one
    wins) and writes the manifest only where none is. Every later manifest write is a compare-and-swap on
    the version this owner wrote last, under FsStore's lock (local_writes.py): if another owner replaced
    it meanwhile, the write is refused, nothing changes, and this owner is fenced (CommitError
    "concurrent-owner"), as the TypeScript owner is.

    Create takes writer 0's lease create-only, as the TypeScript create does, and the owner checks it before
    each commit's writes. A commit verifies that every contributor token is sealed by the live handle of its
    writer (CommitError "stale-token"), announcing the commit first (fencing.md, "A takeover during a
    commit"). The owner does not resume, so it never takes a lease over."""

    owner = True

    def __init__(self, root: Path, m: Manifest, region: Mapping[str, Sequence[int]]) -> None:
        super().__init__(root, m, 0, region)
        self.all_t: list[float] = []  # append: t of every committed record
        self._close_token: dict[str, Any] | None = None
        self._manifest_stamp: Stamp | None = None
        # Why this owner writes nothing more (another owner committed), or None.
        self.fenced: str | None = None

    def _open(self) -> None:
        super()._open()
        if self.fenced is not None:
            raise CommitError(self.fenced, "concurrent-owner")

    def _may_overwrite(self, key: str) -> bool:
        """The owner replaces an object another write changed while nobody committed since its last commit."""
        return self._manifest_unchanged()

    def _manifest_unchanged(self) -> bool:
        """Whether the manifest is still the version this owner last wrote or read (one stat)."""
        return stamp_of(self.root / "output_manifest.json") == self._manifest_stamp

    def _seal(self, token: dict[str, Any]) -> None:
        """Writer 0's token is the owner's own: it is not sealed (the TypeScript owner's neither)."""

    @classmethod
    def create(cls, store: str | os.PathLike[str], schema: Mapping[str, Any], n_writers: int, region: Mapping[str, Sequence[int]] | None = None) -> Owner:
        root = Path(store).resolve()
        if (root / "output_manifest.json").exists() or (root / "zarr.json").exists():
            raise StoreExists(f"{root} already holds a store")
        time_dim = schema["time_dim"]
        mode = "append" if schema["time_mode"] == "append" else "indexed"
        times = [] if mode == "append" else [float(t) for t in schema["time_mode"]["indexed"]["times"]]
        dims = [{"name": d, "length": (len(times) if mode == "indexed" else 0) if d == time_dim else int(n)} for d, n in schema["dims"]]
        lengths = {d["name"]: d["length"] for d in dims}
        shard, chunk, profile = schema["shard_shape"], schema["chunk_shape"], schema["profile"]
        coords = schema.get("coords", {})

        def layout(name: str, vdims: list[str], dtype: str, attrs: Mapping[str, Any]) -> dict[str, Any]:
            return _array_doc([lengths[d] for d in vdims], dtype, [shard[d] for d in vdims], [chunk[d] for d in vdims], profile, vdims, attrs)

        docs = {time_dim: layout(time_dim, [time_dim], "float64", coords.get(time_dim, {}).get("attrs", {}))}
        for d in lengths:
            if d != time_dim and "values" in coords.get(d, {}):
                docs[d] = layout(d, [d], "float64", coords[d].get("attrs", {}))
        specs = [*schema["vars"], *schema["statics"]]
        for v in specs:
            docs[v["name"]] = layout(v["name"], list(v["dims"]), v["dtype"], v.get("attrs", {}))
        codec = PROFILES[profile][0]
        region_dims = sorted((region or {}).keys())
        strip = lambda v: {k: v[k] for k in ("name", "dims", "dtype", "attrs") if k in v}  # noqa: E731
        m: Manifest = {
            "schema": MANIFEST_V2,
            "base_url": root.as_uri(),
            "format": "zarr",
            "zarr_format": 3,
            "profile": profile,
            "codec": codec,
            "time_dim": time_dim,
            "dims": dims,
            "vars": [strip(v) for v in schema["vars"]],
            "chunk_shape": dict(chunk),
            "shard_shape": dict(shard),
            "time_shards": [],
            "last_t": None,
            "n_records": lengths[time_dim],
            "created_at": _now(),
            "fingerprint": "",
            "time_mode": mode,
            "n_writers": n_writers,
            "region_dims": region_dims,
            "commit_seq": 0,
            "statics": [strip(s) for s in schema["statics"]],
            "statics_committed": [],
            "blobs": [],
        }
        if mode == "indexed":
            m["records"] = {"entries": [{"committed": False, "t": t, "generation": 0} for t in times]}
        m["fingerprint"] = fingerprint(m)
        if not isinstance(n_writers, int) or isinstance(n_writers, bool) or n_writers < 1:
            raise SchemaError(f"n_writers {n_writers!r} must be a positive integer")
        o = cls(root, m, region or {})
        o._check_region()  # seed §4: a misaligned region is refused before any byte is written
        root.mkdir(parents=True, exist_ok=True)
        # The lease is the referee, as in the TypeScript create: of creators racing on one store, in either
        # language, exactly one creates writer 0's lease; the others write nothing else.
        if not o.fences.take_lease(0, create=True):
            raise StoreExists(f"{root} already holds a store (writer 0's lease is there)")
        group = json.dumps({"zarr_format": 3, "node_type": "group", "attributes": dict(schema.get("attrs", {}))}, indent=2).encode()
        # A group made by a writer that takes no lease (an older one) is not replaced either.
        if put_if_absent(root, "zarr.json", group) is None:
            raise StoreExists(f"{root} already holds a store")
        for name, doc in docs.items():
            # Through the handle's fenced writes, so a commit's shape rewrite is conditional on this version.
            o.fences.put(f"{name}/zarr.json", json.dumps(doc, indent=2).encode())
        for d, doc in docs.items():  # non-time coordinates, and the indexed time axis, at create
            if d != time_dim:
                if d in lengths:
                    o._encode({"name": d, "dims": [d]}, [(0, lengths[d])], np.asarray(coords[d]["values"], "float64"), None)
            elif mode == "indexed" and times:
                o._encode({"name": d, "dims": [d]}, [(0, len(times))], np.asarray(times, "float64"), None)
        o.objects.clear()
        stamp = put_if_absent(root, "output_manifest.json", o._manifest_bytes())
        if stamp is None:
            raise StoreExists(f"{root} was given a manifest by another writer while this one created it")
        o._manifest_stamp = stamp
        return o

    # The owner supplies every variable and writes the replicated ones (and, in append mode, time).
    def _supplies(self, v: Mapping[str, Any]) -> bool:
        return True

    def _written(self, specs: list[dict[str, Any]]) -> list[dict[str, Any]]:
        out = [v for v in specs if not self._partitioned(v) or all(self.region[d][0] == 0 for d in self.region if d not in v["dims"])]
        if specs is self.m["vars"] and not self.indexed:
            out.append({"name": self.time_dim, "dims": [self.time_dim], "dtype": "float64"})
        return out

    def _put_row(self, index: int, t: float, arrays: dict[str, np.ndarray]) -> None:
        super()._put_row(index, t, {**arrays, self.time_dim: np.float64(t)})

    def _manifest_bytes(self) -> bytes:
        return (json.dumps(self.m, indent=2) + "\n").encode()

    def _write_manifest(self) -> None:
        """The commit point: the manifest, compare-and-swap on the version this owner wrote last."""
        self.fences.assert_lease()
        stamp = put_if_stamp(self.root, "output_manifest.json", self._manifest_bytes(), self._manifest_stamp)
        if stamp is None:
            self._concurrent_owner()
        self._manifest_stamp = stamp

    def _assert_manifest_unchanged(self) -> None:
        if not self._manifest_unchanged():
            self._concurrent_owner()

    def _concurrent_owner(self) -> NoReturn:
        """Another owner replaced the manifest: this one's view is stale (its in-memory manifest may already
        hold the refused commit), so it writes nothing more."""
        self.fenced = f"{self.root}/output_manifest.json changed since this owner last wrote it: another owner is committing to this store"
        raise CommitError(self.fenced, "concurrent-owner")

    def commit(self, tokens: Sequence[Mapping[str, Any]]) -> Manifest:
        """Seed §5.3: verifies every token (one per writer, the owner's included), then commits."""
        self._open()
        m = self.m
        n = m["n_writers"]
        by: dict[int, Mapping[str, Any]] = {}
        for tok in tokens:
            if not isinstance(tok, Mapping) or tok.get("schema") != TOKEN_SCHEMA or not isinstance(tok.get("writer"), int):
                raise CommitError(f"not a {TOKEN_SCHEMA} token: {tok!r:.200}", "writers")
            if tok["writer"] in by:
                raise CommitError(f"two tokens of writer {tok['writer']}", "writers")
            by[tok["writer"]] = tok
        if sorted(by) != list(range(n)):
            raise CommitError(f"expected one token per writer 0..{n - 1}, got writers {sorted(by)}", "writers")
        for w, tok in by.items():
            if tok.get("fingerprint") != m["fingerprint"]:
                raise CommitError(f"writer {w}'s fingerprint {tok.get('fingerprint')} is not the store's", "fingerprint")
        regions = {w: {d: tuple(r) for d, r in tok["region"].items()} for w, tok in by.items()}
        dims0 = sorted(regions[0])
        for w, reg in regions.items():
            if sorted(reg) != dims0 or (m["region_dims"] and dims0 != m["region_dims"]):
                raise CommitError(f"writer {w} names region dims {sorted(reg)}, writer 0 {dims0}", "region-dims")
            for d, (a, b) in reg.items():
                sh, ln = m["shard_shape"][d], self.lengths[d]
                if not (0 <= a < b <= ln) or a % sh or (b % sh and b != ln):
                    raise CommitError(f"writer {w}'s region {d} [{a}, {b}) is not shard-aligned", "alignment")
        ws = sorted(regions)
        for i, a in enumerate(ws):
            for b in ws[i + 1 :]:
                if dims0 and all(max(regions[a][d][0], regions[b][d][0]) < min(regions[a][d][1], regions[b][d][1]) for d in dims0):
                    raise CommitError(f"overlap between writers {a} and {b}", "overlap")
        volume = sum(math.prod(r[d][1] - r[d][0] for d in dims0) for r in regions.values())
        if dims0 and volume != math.prod(self.lengths[d] for d in dims0):
            raise CommitError(f"gap: the regions cover {volume} of {math.prod(self.lengths[d] for d in dims0)} cells", "gap")
        recs0 = [(r["index"], r["t"]) for r in by[0]["records"]]
        for w, tok in by.items():
            recs = [(r["index"], r["t"]) for r in tok["records"]]
            if len(recs) != len(recs0) or any(i != j or not _same_float(s, t) for (i, s), (j, t) in zip(recs, recs0, strict=False)):
                raise CommitError(f"writer {w}'s records differ from writer 0's (divergent writer {w})", "records")
        indices = [i for i, _ in recs0]
        if self.indexed:
            for i, t in recs0:
                if not (0 <= i < len(self.times)) or not _same_float(t, self.times[i]):
                    raise CommitError(f"record {i}: t {t} is not times[{i}]", "records")
                if m["records"]["entries"][i]["committed"]:
                    raise CommitError(f"record {i} is already committed", "records")
        elif indices != list(range(m["n_records"], m["n_records"] + len(indices))):
            raise CommitError(f"records {indices} are not the continuation of the {m['n_records']} committed", "records")
        statics = {s["name"]: s for s in m["statics"]}
        named = {name for tok in by.values() for name in tok["statics"]}
        for name in named:
            s = statics.get(name)
            if s is None or name in m["statics_committed"]:
                raise CommitError(f"static {name} is unknown or already committed", "statics")
            holders = [w for w, tok in by.items() if name in tok["statics"]]
            if self._partitioned(s) and holders != ws:
                raise CommitError(f"partitioned static {name} is missing from writers {sorted(set(ws) - set(holders))}", "statics")
            if not self._partitioned(s) and holders != [0]:
                raise CommitError(f"replicated static {name} is supplied by writers {holders}, not the owner alone", "statics")
        # Verified but for the seals: announced, the seals checked, then shapes (append), the manifest last.
        nonce, commit_seq = self.fences.lease_nonce, m["commit_seq"] + 1
        announced = nonce is not None and any(w != 0 for w in by)
        if announced:
            announce_commit(self.root, commit_seq, nonce)  # type: ignore[arg-type]
        try:
            assert_tokens_sealed(self.root, by.values(), 0)
            self.fences.assert_lease()
            self._apply(m, by, recs0, indices, named)
        except ZarrStreamError:
            # Nothing of this commit lands: no contributor need wait for it. (A refusal is what the caller
            # must hear; an intent left behind only delays a contributor's join until the next commit.)
            if announced:
                try:
                    withdraw_commit(self.root, commit_seq, nonce)  # type: ignore[arg-type]
                except OSError:
                    pass
            raise
        if announced:
            # Landed: a store at rest carries no intent (best effort; a leftover is settled anyway). Only this
            # commit's own: an owner that resumed since this manifest write may have announced its own commit.
            try:
                withdraw_commit(self.root, commit_seq, nonce)  # type: ignore[arg-type]
            except OSError:
                pass
        return m

    def _apply(
        self, m: Manifest, by: Mapping[int, Mapping[str, Any]], recs0: list[tuple[int, float]], indices: list[int], named: set[str]
    ) -> None:
        """A verified commit: shapes (append), then the manifest, last. A manifest another owner replaced is
        refused before any shape grows, and each shape is written conditional on the version this owner last
        wrote (fencing.py), so an owner taken over between its checks and these writes changes no zarr.json:
        a plain Zarr reader never sees a shape that no commit published."""
        self._assert_manifest_unchanged()
        if indices and not self.indexed:
            count = indices[-1] + 1
            for name in [self.time_dim, *(v["name"] for v in m["vars"])]:
                doc = json.loads((self.root / name / "zarr.json").read_text())
                ti = doc["dimension_names"].index(self.time_dim)
                doc["shape"][ti] = count
                self.fences.put(f"{name}/zarr.json", json.dumps(doc, indent=2).encode())
            self.all_t += [t for _, t in recs0]
            m["n_records"] = count
            next(d for d in m["dims"] if d["name"] == self.time_dim)["length"] = count
            m["time_shards"] = _time_shards(list(enumerate(self.all_t)), self.st)
            m["last_t"] = self.all_t[-1]
        elif indices:
            entries = m["records"]["entries"]
            for i in indices:
                entries[i] = {"committed": True, "t": entries[i]["t"], "generation": entries[i]["generation"] + 1}
            done = [(i, e["t"]) for i, e in enumerate(entries) if e["committed"]]
            m["time_shards"] = _time_shards(done, self.st)
            m["last_t"] = max(t for _, t in done)
        m["statics_committed"] = sorted({*m["statics_committed"], *named})
        blobs = {(b["scope"], b.get("record", -1), b["writer"], b["key"]): b for b in m["blobs"]}
        for w, tok in by.items():
            for b in tok["blobs"]:
                entry = {"scope": b["scope"], **({"record": b["record"]} if b["scope"] == "record" else {}), "writer": w, "key": b["key"]}
                blobs[(b["scope"], b.get("record", -1), w, b["key"])] = entry
        m["blobs"] = [blobs[k] for k in sorted(blobs)]
        m["commit_seq"] += 1
        self.committed = committed_mask(m)
        self._write_manifest()

    def invalidate(self, indices: Sequence[int]) -> Manifest:
        """Seed §6.2 (indexed): marks records uncommitted (and their record blobs), bumps commit_seq."""
        self._open()
        m = self.m
        if not self.indexed:
            raise ProtocolError("invalidate is for indexed stores")
        entries = m["records"]["entries"]
        for i in indices:
            if not isinstance(i, int) or not (0 <= i < len(entries)):
                raise SchemaError(f"record index {i!r} is outside [0, {len(entries)})")
        for i in indices:
            entries[i] = {**entries[i], "committed": False}
        gone = set(indices)
        m["blobs"] = [b for b in m["blobs"] if not (b["scope"] == "record" and b["record"] in gone)]
        done = [(i, e["t"]) for i, e in enumerate(entries) if e["committed"]]
        m["time_shards"] = _time_shards(done, self.st)
        m["last_t"] = max((t for _, t in done), default=None)
        m["commit_seq"] += 1
        self.committed = committed_mask(m)
        self._write_manifest()
        return m


    def invalidate_statics(self, names: Sequence[str]) -> Manifest:
        """Seed §6.2 for statics: uncommits them (so they may be written again), bumps commit_seq."""
        self._open()
        m = self.m
        if isinstance(names, str) or not all(isinstance(n, str) for n in names):
            raise SchemaError(f"invalidate_statics takes a list of static names, got {names!r}")
        known = {s["name"] for s in m["statics"]}
        for n in names:
            if n not in known:
                raise SchemaError(f"invalidate_statics: unknown static {n!r}")
        m["statics_committed"] = [s for s in m["statics_committed"] if s not in names]
        m["commit_seq"] += 1
        self._write_manifest()
        return m

    def close(self, tokens: Sequence[Mapping[str, Any]] = ()) -> Manifest:  # type: ignore[override]
        """Seed §5.1 owner close: flushes its own writes and commits that token with the others'. A refused
        commit keeps the owner open and its close token, so close can be retried with corrected tokens."""
        self._open()
        if self._close_token is None:
            self._close_token = self.flush()
        m = self.commit([self._close_token, *tokens])
        self._close_token = None
        self.closed = True
        return m


def _time_shards(records: list[tuple[int, float]], st: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for i, t in records:
        if out and out[-1]["index"] == i // st:
            out[-1]["t_end"] = t
            out[-1]["n"] += 1
        else:
            out.append({"index": i // st, "t_start": t, "t_end": t, "n": 1})
    return out


def _now() -> str:
    import datetime

    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


__all__ = ["TOKEN_SCHEMA", "Contributor", "FingerprintMismatch", "NotCommitted", "Owner", "fingerprint"]
