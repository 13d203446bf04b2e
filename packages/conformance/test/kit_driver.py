"""A binding's driver for the v2 write conformance kit, written from the kit's README and the contract's
documents (seed 000 §8 for the manifest, packages/spec/docs/manifest-pages.md for the paged form).

It stands for another binding's driver in kit.test: it imports numpy and zarr-python and nothing of
zarr-stream, and the test runs it in an empty directory beside an exported kit. For every case it runs
the ops against a small in-memory model of the contract (regions, tokens, commits, refusals), writes the
store with zarr-python (one sharded array per variable, static and the time coordinate, blobs as files,
output_manifest.json last, in the paged form when the case asks for it), then reads the store back with
zarr-python and writes the dump:

    python kit_driver.py --corpus write_spec_v2.json --out OUT      # OUT/<case>/store/, OUT/<case>/dump.json

It prints "ok CASE" or "FAIL CASE: why" per case and exits 1 if any case failed to run as its script says.
"""

from __future__ import annotations

import argparse
import base64
import copy
import hashlib
import json
import re
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import zarr
from zarr.codecs import BloscCodec, ZstdCodec

P = (3, 5, 11, 17, 23)
NP = {"float64": "<f8", "float32": "<f4", "int32": "<i4", "int64": "<i8", "uint8": "u1"}
V1, V2, V2_PAGED = "earthsciio/output-manifest/v1", "earthsciio/output-manifest/v2", "zarr-stream/output-manifest/v2-paged"
PAGE = 512
BLOB_KEY = re.compile(r"^(?!\.{1,2}$)[A-Za-z0-9._-]+$")


class Refused(Exception):
    kind = "Error"


class RegionNotShardAligned(Refused):
    kind = "RegionNotShardAligned"


class CommitError(Refused):
    kind = "CommitError"


# ---------------------------------------------------------------------------------------------------------
# The generator (README: "The values are the seed §10 generator's")


def generate(dtype: str, seed: int, r: int, box: list[tuple[int, int]]) -> np.ndarray:
    base = np.full([b - a for a, b in box], seed + 13 * r, dtype=np.int64)
    for j, (a, b) in enumerate(box):
        shape = [1] * len(box)
        shape[j] = b - a
        base = base + ((np.arange(a, b, dtype=np.int64) + 1) * P[j]).reshape(shape)
    if dtype.startswith("float"):
        return (base.astype(np.float64) + 0.25).astype(NP[dtype])
    if dtype == "uint8":
        return np.mod(base, 251).astype(np.uint8)
    return base.astype(NP[dtype])


class Model:
    """One case: the committed state, the open handles and the flushed tokens."""

    def __init__(self, case: dict[str, Any]) -> None:
        self.case = case
        self.schema = case["schema"]
        self.sch_dims = dict((d, n) for d, n in self.schema["dims"])
        self.time = self.schema["time_dim"]
        self.indexed = self.schema["time_mode"] != "append"
        self.times = self.schema["time_mode"]["indexed"]["times"] if self.indexed else None
        self.vars = {v["name"]: v for v in self.schema["vars"]}
        self.statics = {s["name"]: s for s in self.schema["statics"]}
        self.created = False
        self.label = ""
        self.n_writers = 1
        self.region_dims: set[str] = set()
        # Committed state: append records [{t, data}], indexed entries [{t, generation, committed, data}].
        self.committed: dict[str, Any] = {"records": [], "entries": [], "statics": {}, "blobs": {}, "seq": 0}
        self.handles: dict[str, dict[str, Any]] = {}
        self.tokens: dict[str, dict[str, Any]] = {}

    # -- geometry ------------------------------------------------------------------------------------

    def other_dims(self, var: dict[str, Any]) -> list[str]:
        return [d for d in var["dims"] if d != self.time]

    def box(self, var: dict[str, Any], region: dict[str, tuple[int, int]]) -> list[tuple[int, int]]:
        return [tuple(region.get(d, (0, self.sch_dims[d]))) for d in self.other_dims(var)]

    def check_region(self, region: dict[str, list[int]]) -> dict[str, tuple[int, int]]:
        for d in region:
            if d == self.time or d not in self.sch_dims:
                raise Refused(f"region dim {d} is not a non-time dim of the schema")
        for d, (a, b) in region.items():
            n, s = self.sch_dims[d], self.schema["shard_shape"][d]
            if not (0 <= a < b <= n) or a % s or (b % s and b != n):
                raise RegionNotShardAligned(f"region {d} [{a}, {b}) is not on the shard grid of {s} within {n}")
        return {d: (a, b) for d, (a, b) in region.items()}

    def partitioned(self, var: dict[str, Any], region: dict[str, Any]) -> bool:
        return any(d in region for d in var["dims"])

    # -- ops -----------------------------------------------------------------------------------------

    def handle(self, op: dict[str, Any]) -> dict[str, Any]:
        h = self.handles.get(op["writer"])
        if h is None:
            raise Refused(f"no open writer {op['writer']}")
        if h["closed"]:
            raise Refused("the writer is closed")
        return h

    def n_committed(self) -> int:
        return len(self.committed["records"])

    def open(self, op: dict[str, Any]) -> None:
        role = op["role"]
        kind = next(iter(role))
        region = self.check_region(op.get("region", {}))
        if op["op"] == "create":
            if self.created:
                raise Refused("the store exists")
            if kind == "contributor":
                raise Refused("a contributor joins, it does not create")
            v1 = kind == "single" and not self.indexed and not self.statics
            if op.get("manifest_pages"):
                if v1:
                    raise Refused("a v1 store has no paged form")
                self.label = V2_PAGED
            else:
                self.label = V1 if v1 else V2
            self.n_writers = role["owner"] if kind == "owner" else 1
            self.region_dims = set(region)
            self.created = True
        else:
            if not self.created:
                raise Refused("no store to open")
            if kind == "contributor" and not 1 <= role["contributor"] < self.n_writers:
                raise Refused("no such contributor id")
            if op["op"] == "resume" and op.get("at") is not None:
                if self.indexed:
                    raise Refused("resume at a time is for append mode")
                if kind == "contributor":
                    raise Refused("only the owner truncates")
                kept = [r for r in self.committed["records"] if r["t"] <= op["at"]]
                self.committed["blobs"] = {
                    k: v for k, v in self.committed["blobs"].items() if k[0] == "static" or k[0][1] < len(kept)
                }
                self.committed["records"] = kept
                self.committed["seq"] += 1
        wid = 0 if kind != "contributor" else role["contributor"]
        self.handles[op["writer"]] = {
            "kind": kind, "id": wid, "region": region, "closed": False,
            "records": [], "statics": {}, "blobs": [], "next": self.n_committed(),
            "last_t": self.committed["records"][-1]["t"] if self.committed["records"] else None,
        }

    def tiles(self, h: dict[str, Any], r: int, only: list[str] | None) -> dict[str, Any]:
        owner = h["kind"] != "contributor"
        due = {n for n, v in self.vars.items() if owner or self.partitioned(v, h["region"])}
        if only is not None and set(only) != due:
            raise Refused(f"writer supplies {sorted(only)}, its role supplies {sorted(due)}")
        return {n: (self.box(self.vars[n], h["region"]), generate(self.vars[n]["dtype"], self.vars[n]["seed"], r, self.box(self.vars[n], h["region"]))) for n in due}

    def write_record(self, op: dict[str, Any]) -> None:
        h = self.handle(op)
        if self.indexed:
            raise Refused("write_record is for append mode")
        last = h["last_t"]
        if last is not None and not op["t"] > last:
            raise Refused(f"t {op['t']} does not follow {last}")
        h["records"].append({"index": h["next"], "t": op["t"], "tiles": self.tiles(h, op["r"], op.get("vars"))})
        h["next"] += 1
        h["last_t"] = op["t"]

    def write_record_at(self, op: dict[str, Any]) -> None:
        h = self.handle(op)
        if not self.indexed:
            raise Refused("write_record_at is for indexed mode")
        i = op["index"]
        if i >= len(self.times):
            raise Refused("index outside the time axis")
        t = op.get("t", self.times[i])
        if t != self.times[i]:
            raise Refused(f"t {t} is not times[{i}]")
        entry = self.entries()[i]
        if entry["committed"] or any(x["index"] == i for x in h["records"]):
            raise Refused(f"record {i} is committed or written: invalidate it first")
        h["records"].append({"index": i, "t": t, "tiles": self.tiles(h, op["r"], op.get("vars"))})

    def write_static(self, op: dict[str, Any]) -> None:
        h = self.handle(op)
        s = self.statics[op["name"]]
        if h["kind"] == "contributor" and not self.partitioned(s, h["region"]):
            raise Refused("a replicated static is the owner's")
        if op["name"] in self.committed["statics"] or op["name"] in h["statics"]:
            raise Refused("the static is committed or written: invalidate it first")
        box = self.box(s, h["region"])
        h["statics"][op["name"]] = (box, generate(s["dtype"], s["seed"], 0, box))

    def write_blob(self, op: dict[str, Any]) -> None:
        h = self.handle(op)
        if self.label == V1:
            raise Refused("a v1 store has no blobs")
        if not BLOB_KEY.match(op["key"]):
            raise Refused(f"blob key {op['key']!r}")
        scope = "static" if op["scope"] == "static" else ("record", op["scope"]["record"])
        h["blobs"].append((scope, h["id"], op["key"], op["hex"]))

    def take_token(self, h: dict[str, Any]) -> dict[str, Any]:
        token = {"id": h["id"], "region": h["region"], "records": h["records"], "statics": h["statics"], "blobs": h["blobs"]}
        h["records"], h["statics"], h["blobs"] = [], {}, []
        return token

    def flush(self, op: dict[str, Any]) -> None:
        h = self.handle(op)
        token = self.take_token(h)
        if h["kind"] == "single":
            self.apply([token])
        elif op.get("token"):
            self.tokens[op["token"]] = token

    def named(self, names: list[str]) -> list[dict[str, Any]]:
        return [self.tokens[n] for n in names]

    def commit(self, op: dict[str, Any]) -> None:
        h = self.handle(op)
        if h["kind"] != "owner":
            raise Refused("only the owner commits")
        self.apply(self.named(op["tokens"]))

    def close(self, op: dict[str, Any]) -> None:
        h = self.handle(op)
        if h["kind"] == "contributor":
            if h["records"] or h["statics"] or h["blobs"]:
                raise Refused("a contributor closes with nothing unflushed: flush first")
        elif h["kind"] == "single":
            self.apply([self.take_token(h)])
        else:
            others = self.named(op.get("tokens", []))
            pending = self.take_token(h)
            try:
                self.apply([pending, *others])
            except Refused:
                h["records"], h["statics"], h["blobs"] = pending["records"], pending["statics"], pending["blobs"]
                raise
        h["closed"] = True

    def entries(self) -> list[dict[str, Any]]:
        if not self.committed["entries"]:
            self.committed["entries"] = [{"t": t, "generation": 0, "committed": False, "data": None} for t in self.times]
        return self.committed["entries"]

    def apply(self, tokens: list[dict[str, Any]]) -> None:
        """The owner's commit of a token set (seed §5.3): every writer once, regions tiling the grid."""
        ids = sorted(t["id"] for t in tokens)
        if ids != list(range(self.n_writers)):
            raise CommitError(f"token writers {ids}, expected 0..{self.n_writers - 1} once each")
        grid = np.zeros([n for d, n in self.schema["dims"] if d != self.time], dtype=np.int64)
        names = [d for d, _ in self.schema["dims"] if d != self.time]
        for t in tokens:
            grid[tuple(slice(*t["region"].get(d, (0, self.sch_dims[d]))) for d in names)] += 1
        if grid.size and (grid.min() != 1 or grid.max() != 1):
            raise CommitError("the token regions leave a gap or overlap")
        keys = [[(x["index"], x["t"]) for x in t["records"]] for t in tokens]
        if any(k != keys[0] for k in keys):
            raise CommitError("the tokens carry different records")
        if not self.indexed and keys[0] and keys[0][0][0] != self.n_committed():
            raise CommitError("the tokens do not follow the committed records")
        for pos, (index, t) in enumerate(keys[0]):
            data = {n: np.zeros([b - a for a, b in self.box(v, {})], dtype=NP[v["dtype"]]) for n, v in self.vars.items()}
            for tok in tokens:
                for n, (box, arr) in tok["records"][pos]["tiles"].items():
                    data[n][tuple(slice(a, b) for a, b in box)] = arr
            if self.indexed:
                e = self.entries()[index]
                e.update(committed=True, generation=e["generation"] + 1, data=data)
            else:
                self.committed["records"].append({"t": t, "data": data})
        for tok in tokens:
            for name, (box, arr) in tok["statics"].items():
                s = self.statics[name]
                full = self.committed["statics"].get(name)
                if full is None:
                    full = np.zeros([b - a for a, b in self.box(s, {})], dtype=NP[s["dtype"]])
                full[tuple(slice(a, b) for a, b in box)] = arr
                self.committed["statics"][name] = full
            for scope, wid, key, hexbytes in tok["blobs"]:
                self.committed["blobs"][(scope, wid, key)] = hexbytes
        self.committed["seq"] += 1

    def invalidate(self, op: dict[str, Any]) -> None:
        h = self.handle(op)
        if h["kind"] != "owner" or not self.indexed:
            raise Refused("invalidate is the owner's, in indexed mode")
        for i in op["indices"]:
            if not self.entries()[i]["committed"]:
                raise Refused(f"record {i} is not committed")
        for i in op["indices"]:
            self.entries()[i].update(committed=False, data=None)
        self.committed["blobs"] = {k: v for k, v in self.committed["blobs"].items() if k[0] == "static" or k[0][1] not in op["indices"]}
        self.committed["seq"] += 1

    def invalidate_statics(self, op: dict[str, Any]) -> None:
        h = self.handle(op)
        if h["kind"] != "owner" or any(n not in self.committed["statics"] for n in op["names"]):
            raise Refused("invalidate_statics: the owner's, of committed statics")
        for n in op["names"]:
            del self.committed["statics"][n]
        self.committed["seq"] += 1

    def drop(self, op: dict[str, Any]) -> None:
        del self.handles[op["writer"]]

    def run(self, op: dict[str, Any]) -> None:
        if op["op"] in ("create", "join", "resume"):
            self.open(op)
        else:
            getattr(self, op["op"])(op)


# ---------------------------------------------------------------------------------------------------------
# The store


def codec(profile: str) -> tuple[dict[str, Any], Any]:
    if profile == "wasm":
        return {"id": "zstd", "level": 5, "checksum": False}, ZstdCodec(level=5, checksum=False)
    level = 7 if profile == "checkpoint" else 5
    return {"id": "blosc", "cname": "zstd", "clevel": level, "shuffle": "shuffle"}, BloscCodec(cname="zstd", clevel=level, shuffle="shuffle")


def write_array(root: Path, name: str, dims: list[str], data: np.ndarray, chunks: list[int], shards: list[int], compressor: Any) -> None:
    a = zarr.create_array(store=str(root), name=name, shape=data.shape, dtype=data.dtype, chunks=chunks, shards=shards,
                          compressors=[compressor], dimension_names=dims, fill_value=0, overwrite=True)
    if data.size:
        a[...] = data


def time_shards(times: list[float], shard_t: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for i, t in enumerate(times):
        if out and out[-1]["index"] == i // shard_t:
            out[-1].update(t_end=t, n=out[-1]["n"] + 1)
        else:
            out.append({"index": i // shard_t, "t_start": t, "t_end": t, "n": 1})
    return out


def fingerprint(s: dict[str, Any]) -> str:
    """Seed §3.1: sha256 of the canonical JSON of what every writer of a store must agree on."""
    triples = lambda vs: [[v["name"], v["dims"], v["dtype"]] for v in vs]  # noqa: E731
    indexed = s["time_mode"] != "append"
    doc = {
        "chunk_shape": s["chunk_shape"],
        "dims": [[d, (len(s["time_mode"]["indexed"]["times"]) if indexed else 0) if d == s["time_dim"] else n] for d, n in s["dims"]],
        "profile": s["profile"], "shard_shape": s["shard_shape"], "statics": triples(s["statics"]),
        "time_dim": s["time_dim"], "time_mode": "indexed" if indexed else "append", "vars": triples(s["vars"]),
    }
    text = json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def put_page(root: Path, list_name: str, entries: list[Any], first: int) -> dict[str, Any]:
    text = json.dumps(entries, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
    sha = hashlib.sha256(text).hexdigest()
    path = root / ".zarr-stream" / "manifest" / list_name / f"{sha}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text)
    return {"first": first, "count": len(entries), "sha256": sha}


def write_store(m: Model, root: Path) -> None:
    s = m.schema
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    zarr.create_group(store=str(root), attributes=s.get("attrs", {}), zarr_format=3)
    codec_doc, compressor = codec(s["profile"])
    c = m.committed
    if m.indexed:
        index_data = [(i, e["data"]) for i, e in enumerate(m.entries()) if e["committed"]]
        times, n = list(m.times), len(m.times)
    else:
        index_data = list(enumerate(r["data"] for r in c["records"]))
        times, n = [r["t"] for r in c["records"]], len(c["records"])
    dim_len = {**m.sch_dims, m.time: n}
    for name, v in m.vars.items():
        arr = np.zeros([dim_len[d] for d in v["dims"]], dtype=NP[v["dtype"]])
        axis = v["dims"].index(m.time)
        for i, data in index_data:
            np.moveaxis(arr, axis, 0)[i] = data[name]
        write_array(root, name, v["dims"], arr, [s["chunk_shape"][d] for d in v["dims"]],
                    [s["shard_shape"][d] for d in v["dims"]], compressor)
    for name, full in c["statics"].items():
        st = m.statics[name]
        write_array(root, name, st["dims"], full, [s["chunk_shape"][d] for d in st["dims"]],
                    [s["shard_shape"][d] for d in st["dims"]], compressor)
    write_array(root, m.time, [m.time], np.array(times, dtype="<f8"), [s["chunk_shape"][m.time]],
                [s["shard_shape"][m.time]], compressor)
    blobs = []
    for (scope, wid, key), hexbytes in sorted(c["blobs"].items(), key=lambda kv: (kv[0][0] == "static", kv[0][0][1] if kv[0][0] != "static" else -1, kv[0][1], kv[0][2])):
        path = root / "blobs" / ("static" if scope == "static" else f"record/{scope[1]}") / str(wid) / key
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(bytes.fromhex(hexbytes))
        blobs.append({"scope": "static", "writer": wid, "key": key} if scope == "static" else {"scope": "record", "record": scope[1], "writer": wid, "key": key})
    shard_t = s["shard_shape"][m.time]
    committed_times = [e["t"] for e in m.entries() if e["committed"]] if m.indexed else times
    manifest: dict[str, Any] = {
        "schema": m.label, "format": "zarr", "zarr_format": 3, "profile": s["profile"], "codec": codec_doc,
        "time_dim": m.time, "dims": [{"name": d, "length": dim_len[d]} for d, _ in s["dims"]],
        "vars": [{"name": v["name"], "dims": v["dims"], "dtype": v["dtype"]} for v in s["vars"]],
        "chunk_shape": s["chunk_shape"], "shard_shape": s["shard_shape"],
        "time_shards": time_shards(times, shard_t) if not m.indexed else [],
        "last_t": committed_times[-1] if committed_times else None, "n_records": n,
    }
    manifest.update(base_url=root.resolve().as_uri(), created_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
    if m.label != V1:
        manifest.update(fingerprint=fingerprint(s), region_dims=[d for d, _ in s["dims"] if d in m.region_dims])
        manifest.update(time_mode="indexed" if m.indexed else "append", n_writers=m.n_writers, commit_seq=c["seq"],
                        statics=[{"name": x["name"], "dims": x["dims"], "dtype": x["dtype"]} for x in s["statics"]],
                        statics_committed=sorted(c["statics"]), blobs=blobs)
    if m.indexed:
        entries = [{"committed": e["committed"], "t": e["t"], "generation": e["generation"]} for e in m.entries()]
        manifest["records"] = {"entries": entries}
        manifest["time_shards"] = [ts for ts in time_shards_indexed(entries, shard_t)]
        if m.label == V2_PAGED and len(entries) > PAGE:
            refs = [put_page(root, "records", entries[i : i + PAGE], i) for i in range(0, len(entries), PAGE)]
            manifest["records"] = {"pages": refs, "entries": []}
            manifest["time_shards"] = []
    elif m.label == V2_PAGED and len(manifest["time_shards"]) > PAGE:
        shards = manifest["time_shards"]
        sealed = len(shards) // PAGE * PAGE
        manifest["time_shard_pages"] = [put_page(root, "time_shards", shards[i : i + PAGE], i) for i in range(0, sealed, PAGE)]
        manifest["time_shards"] = shards[sealed:]
    (root / "output_manifest.json").write_text(json.dumps(manifest, indent=2))


def time_shards_indexed(entries: list[dict[str, Any]], shard_t: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for i, e in enumerate(entries):
        if e["committed"]:
            if out and out[-1]["index"] == i // shard_t:
                out[-1].update(t_end=e["t"], n=out[-1]["n"] + 1)
            else:
                out.append({"index": i // shard_t, "t_start": e["t"], "t_end": e["t"], "n": 1})
    return out


# ---------------------------------------------------------------------------------------------------------
# The reader: the dump of README "The dump", from the store alone


def resolved_manifest(root: Path) -> dict[str, Any]:
    m = json.loads((root / "output_manifest.json").read_text())
    if m["schema"] != V2_PAGED:
        return m

    def pages(list_name: str, refs: list[dict[str, Any]]) -> list[Any]:
        out: list[Any] = []
        for ref in refs:
            data = (root / ".zarr-stream" / "manifest" / list_name / f"{ref['sha256']}.json").read_bytes()
            if hashlib.sha256(data).hexdigest() != ref["sha256"] or ref["first"] != len(out):
                raise ValueError(f"page {ref['sha256']} does not match its ref")
            out += json.loads(data)
        return out

    if "time_shard_pages" in m:
        m["time_shards"] = pages("time_shards", m.pop("time_shard_pages")) + m["time_shards"]
    if "pages" in m.get("records", {}):
        m["records"] = {"entries": pages("records", m["records"]["pages"]) + m["records"]["entries"]}
    return m


def array_dump(data: np.ndarray, dtype: str) -> dict[str, Any]:
    data = np.array(data, dtype=NP[dtype], order="C")
    return {"dtype": dtype, "shape": list(data.shape), "data_b64": base64.b64encode(data.tobytes()).decode()}


def dump(root: Path, case: str) -> dict[str, Any]:
    raw = json.loads((root / "output_manifest.json").read_text())
    m = resolved_manifest(root)
    group = zarr.open_group(store=str(root), mode="r")
    indexed = m.get("time_mode") == "indexed"
    entries = m["records"]["entries"] if indexed else []
    indices = [i for i, e in enumerate(entries) if e["committed"]] if indexed else list(range(m["n_records"]))
    time_values = np.asarray(group[m["time_dim"]][...])
    arrays = {v["name"]: np.asarray(group[v["name"]][...]) for v in m["vars"]}
    records = []
    for i in indices:
        rec: dict[str, Any] = {"index": i, "t": float(time_values[i])}
        if indexed:
            rec["generation"] = entries[i]["generation"]
        rec["vars"] = {v["name"]: array_dump(np.take(arrays[v["name"]], i, axis=v["dims"].index(m["time_dim"])), v["dtype"]) for v in m["vars"]}
        records.append(rec)
    dtypes = {s["name"]: s["dtype"] for s in m.get("statics", [])}
    statics = {n: array_dump(np.asarray(group[n][...]), dtypes[n]) for n in m.get("statics_committed", [])}
    blobs = []
    for b in m.get("blobs", []):
        scope = "static" if b["scope"] == "static" else {"record": b["record"]}
        where = "static" if b["scope"] == "static" else f"record/{b['record']}"
        blobs.append({"scope": scope, "writer": b["writer"], "key": b["key"], "hex": (root / "blobs" / where / str(b["writer"]) / b["key"]).read_bytes().hex()})
    return {"schema": "earthsciio/write-v2-dump/v1", "case": case, "writer": "kit-driver", "reader": "zarr-python",
            "manifest_schema": m["schema"], "commit_seq": m.get("commit_seq"), "records": records,
            "statics": statics, "blobs": blobs, "manifest": raw}


# ---------------------------------------------------------------------------------------------------------


def snapshot(m: Model) -> Any:
    c = m.committed
    return (m.label, c["seq"], [(r["t"], {n: a.tobytes() for n, a in r["data"].items()}) for r in c["records"]],
            [(e["t"], e["generation"], e["committed"]) for e in c["entries"]], {n: a.tobytes() for n, a in c["statics"].items()},
            dict(c["blobs"]))


def run_case(case: dict[str, Any], out: Path) -> None:
    m = Model(case)
    for i, op in enumerate(case["ops"]):
        where = f"op {i} ({op['op']} {op['writer']})"
        want = op.get("expect_error")
        if want is None:
            try:
                m.run(op)
            except Refused as exc:
                raise AssertionError(f"{where} failed: {exc.kind}: {exc}") from exc
            continue
        before = snapshot(m)
        handles = copy.deepcopy({k: (h["kind"], h["id"], h["region"]) for k, h in m.handles.items()})
        try:
            m.run(op)
        except Refused as exc:
            if want != "Error" and exc.kind != want:
                raise AssertionError(f"{where} failed with {exc.kind}: {exc}; expected {want}") from exc
        else:
            raise AssertionError(f"{where} succeeded, expected {want}")
        if snapshot(m) != before:
            raise AssertionError(f"{where} was refused but changed the committed state")
        if op["op"] in ("create", "join", "resume") and {k: (h["kind"], h["id"], h["region"]) for k, h in m.handles.items()} != handles:
            raise AssertionError(f"{where} was refused but opened a writer")
    store = out / case["name"] / "store"
    write_store(m, store)
    (out / case["name"] / "dump.json").write_text(json.dumps(dump(store, case["name"])) + "\n")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--corpus", required=True)
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    corpus = json.loads(Path(args.corpus).read_text())
    failed = 0
    for case in corpus["cases"]:
        try:
            run_case(case, Path(args.out))
            print(f"ok {case['name']}", flush=True)
        except Exception as exc:
            failed += 1
            print(f"FAIL {case['name']}: {exc.__class__.__name__}: {exc}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
