"""Mixed-language writers: a TypeScript owner commits the tokens of 3 Python contributors (zarr_stream.writer)
in append and indexed mode, with statics and blobs; the store reads bitwise equal to the all-TypeScript
4-writer store; a bad token from Python is refused by the TypeScript owner with CommitError."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import xarray as xr
from conftest import REPO, TS_STORE, Backend, LineProcess, generated

import zarr_stream as zs
from zarr_stream.writer import Contributor, FingerprintMismatch

REGIONS = [
    {"lat": (0, 4), "lon": (0, 3)},
    {"lat": (0, 4), "lon": (3, 6)},
    {"lat": (4, 8), "lon": (0, 3)},
    {"lat": (4, 8), "lon": (3, 6)},
]
PARTITIONED = {"temperature": ("lat", "lon"), "humidity": ("lat", "lon"), "count": ("lat",), "big": ("lat", "lon")}


def region_arrays(writer: int, r: int) -> dict[str, np.ndarray]:
    reg = REGIONS[writer]
    out = {}
    for var, dims in PARTITIONED.items():
        full = generated(var, r)
        out[var] = full[tuple(slice(*reg[d]) for d in dims)]
    return out


def static_region(writer: int, name: str) -> np.ndarray:
    reg = REGIONS[writer]
    lat = np.arange(*reg["lat"]).reshape(-1, 1)
    if name == "orog":  # seed 11, dims [lat, lon], float64
        lon = np.arange(*reg["lon"]).reshape(1, -1)
        return (11 + (lat + 1) * 3 + (lon + 1) * 5 + 0.25).astype("float64")
    return ((12 + (lat.ravel() + 1) * 3) % 251).astype("uint8")  # landmask: seed 12, [lat], uint8


class Owner(LineProcess):
    """ts_store.mjs mixed-owner: a TypeScript owner taking tokens as JSON lines."""

    def __init__(self, url: str, mode: str, records: int, committed: int) -> None:
        super().__init__(["node", str(TS_STORE), "mixed-owner", url, mode, str(records), str(committed)], "owner", REPO)
        assert self.read() == {"created": True}

    def commit(self, tokens: list[dict[str, Any]]) -> dict[str, Any]:
        self.send({"tokens": tokens})
        return self.read()


def python_contributor(
    url: str, writer: int, committed: int, mode: str = "append", extra_blob: str | None = None
) -> tuple[Contributor, dict[str, Any]]:
    """Contributor `writer` (Python): its statics, blobs (and `extra_blob`, to make its token differ) and
    records 0..committed-1 (in reverse in indexed mode, which takes any order); the handle and its token."""
    w = Contributor.join(url, writer, REGIONS[writer])
    for name in ("orog", "landmask"):
        w.write_static(name, static_region(writer, name))
    w.write_blob("static", "seed.bin", bytes([writer, 1, 2, 3]))
    if extra_blob is not None:
        w.write_blob("static", extra_blob, bytes([writer]))
    order = list(range(committed))
    if mode == "indexed":
        order.reverse()
    for r in order:
        if mode == "indexed":
            w.write_record_at(r, 3600.0 * r, region_arrays(writer, r))
        else:
            w.write_record(3600.0 * r, region_arrays(writer, r))
        if r == 1:
            w.write_blob(("record", 1), "rng", bytes([1, writer, 42]))
    return w, w.flush()


def python_contributors(url: str, mode: str, committed: int) -> list[dict[str, Any]]:
    tokens = []
    for writer in (1, 2, 3):
        w, token = python_contributor(url, writer, committed, mode)
        w.close()
        tokens.append(token)
    return tokens


@pytest.mark.parametrize("mode,records,committed", [("append", 10, 10), ("indexed", 12, 7)])
def test_ts_owner_with_python_contributors_equals_the_all_ts_store(
    local_backend: Backend, tmp_path: Path, mode: str, records: int, committed: int
) -> None:
    url = str(tmp_path / "mixed")
    owner = Owner(url, mode, records, committed)
    try:
        tokens = python_contributors(url, mode, committed)
        for tok in tokens:
            assert tok["schema"] == "earthsciio/commit-token/v1"
            assert [r["index"] for r in tok["records"]] == list(range(committed))
            assert tok["statics"] == ["landmask", "orog"]
            assert tok["blobs"] == [{"scope": "record", "record": 1, "key": "rng"}, {"scope": "static", "key": "seed.bin"}]
            assert tok["objects"] == sorted(tok["objects"]) and tok["objects"]
        # A token from Python naming a region that overlaps another writer's: the TS owner refuses it.
        bad = [dict(tokens[0], region={"lat": [4, 8], "lon": [0, 3]}), *tokens[1:]]
        refused = owner.commit(bad)
        assert refused["ok"] is False and refused["error"]["name"] == "CommitError", refused
        assert zs.read_output_manifest(url)["commit_seq"] == 0
        # A token whose records differ from the others' (one record dropped): refused too.
        short = [dict(tokens[0], records=tokens[0]["records"][:-1]), *tokens[1:]]
        assert owner.commit(short)["error"]["name"] == "CommitError"
        done = owner.commit(tokens)
        assert done["ok"] is True, done
        assert done["commit_seq"] == 1 and done["n_committed"] == committed
    finally:
        owner.close()
    reference = local_backend.store(mode)
    ref = xr.open_dataset(reference, engine="zarr_stream", drop_uncommitted=True).load()
    got = xr.open_dataset(url, engine="zarr_stream", drop_uncommitted=True).load()
    assert got.sizes == ref.sizes and got.sizes["time"] == committed
    for name in ["temperature", "humidity", "count", "big", "flag", "orog", "landmask", "time", "lat", "lon"]:
        assert got[name].dtype == ref[name].dtype
        assert got[name].values.tobytes() == ref[name].values.tobytes(), name
    for w in range(4):
        assert zs.read_blob(url, "static", w, "seed.bin") == zs.read_blob(reference, "static", w, "seed.bin")
        assert zs.read_blob(url, ("record", 1), w, "rng") == zs.read_blob(reference, ("record", 1), w, "rng")


def test_contributor_refuses_what_the_contract_refuses(local_backend: Backend, tmp_path: Path) -> None:
    url = str(tmp_path / "s")
    owner = Owner(url, "indexed", 12, 7)
    try:
        with pytest.raises(zs.RegionNotShardAligned):
            Contributor.join(url, 1, {"lat": (0, 3), "lon": (3, 6)})
        with pytest.raises(zs.ProtocolError):
            Contributor.join(url, 4, REGIONS[1])
        w = Contributor.join(url, 1, REGIONS[1])
        with pytest.raises(zs.ProtocolError, match="times"):
            w.write_record_at(2, 7200.5, region_arrays(1, 2))
        with pytest.raises(zs.ProtocolError, match="indexed"):
            w.write_record(0.0, region_arrays(1, 0))
        with pytest.raises(zs.SchemaError):
            w.write_record_at(2, 7200.0, {**region_arrays(1, 2), "temperature": np.zeros((4, 3), "float32")})
        with pytest.raises(zs.ProtocolError, match="replicated"):
            w.write_record_at(2, 7200.0, {**region_arrays(1, 2), "flag": np.uint8(1)})
        w.write_record_at(2, 7200.0, region_arrays(1, 2))
        with pytest.raises(zs.ProtocolError, match="flush"):
            w.close()
        raw = json.loads((Path(url) / "output_manifest.json").read_text())
        (Path(url) / "output_manifest.json").write_text(json.dumps(raw | {"fingerprint": "sha256:" + "0" * 64}))
        with pytest.raises(FingerprintMismatch):
            Contributor.join(url, 2, REGIONS[2])
        (Path(url) / "output_manifest.json").write_text(json.dumps(raw))
    finally:
        owner.close()


SCHEMA: dict[str, Any] = {
    "dims": [["time", 0], ["lat", 8], ["lon", 6]],
    "time_dim": "time",
    "vars": [
        {"name": "temperature", "dims": ["time", "lat", "lon"], "dtype": "float64", "attrs": {"units": "K"}},
        {"name": "humidity", "dims": ["time", "lat", "lon"], "dtype": "float32"},
        {"name": "count", "dims": ["time", "lat"], "dtype": "int32"},
        {"name": "big", "dims": ["time", "lat", "lon"], "dtype": "int64"},
        {"name": "flag", "dims": ["time"], "dtype": "uint8"},
    ],
    "statics": [
        {"name": "orog", "dims": ["lat", "lon"], "dtype": "float64", "attrs": {"units": "m"}},
        {"name": "landmask", "dims": ["lat"], "dtype": "uint8"},
    ],
    "chunk_shape": {"time": 2, "lat": 2, "lon": 3},
    "shard_shape": {"time": 4, "lat": 4, "lon": 3},
    "profile": "diagnostic",
    "coords": {
        "time": {"attrs": {"units": "seconds since 2000-01-01 00:00:00", "calendar": "standard"}},
        "lat": {"values": [-70 + 20 * i for i in range(8)]},
        "lon": {"values": [30 * i for i in range(6)]},
    },
}


def ts_contributor(url: str, mode: str, writer: int, committed: int, extra_blob: str | None = None) -> dict[str, Any]:
    blob = [] if extra_blob is None else ["--blob", extra_blob]
    res = subprocess.run(
        ["node", str(TS_STORE), "contributor", url, mode, str(writer), str(committed), *blob],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


@pytest.mark.parametrize("mode,records,committed", [("append", 10, 10), ("indexed", 12, 7)])
def test_python_owner_with_ts_contributors_equals_the_all_ts_store(
    local_backend: Backend, tmp_path: Path, mode: str, records: int, committed: int
) -> None:
    from conftest import ts_dump

    from zarr_stream.writer import Owner

    url = str(tmp_path / "py-owner")
    schema = dict(SCHEMA)
    if mode == "indexed":
        schema["time_mode"] = {"indexed": {"times": [3600.0 * r for r in range(records)]}}
    else:
        schema["time_mode"] = "append"
    owner = Owner.create(url, schema, 4, REGIONS[0])
    reference = local_backend.store(mode)
    # The TS writers join the Python owner's store: its manifest's fingerprint is the TS owner's.
    assert zs.read_output_manifest(url)["fingerprint"] == zs.read_output_manifest(reference)["fingerprint"]
    tokens = [ts_contributor(url, mode, w, committed) for w in (1, 2, 3)]
    for name in ("orog", "landmask"):
        owner.write_static(name, static_region(0, name))
    owner.write_blob("static", "seed.bin", bytes([0, 1, 2, 3]))
    for r in range(committed):
        arrays = {**region_arrays(0, r), "flag": generated("flag", r)}
        if mode == "indexed":
            owner.write_record_at(r, 3600.0 * r, arrays)
        else:
            owner.write_record(3600.0 * r, arrays)
        if r == 1:
            owner.write_blob(("record", 1), "rng", bytes([1, 0, 42]))
    own = owner.flush()
    # Bad TS tokens: refused with CommitError, nothing written.
    bad_cases = {
        "overlap": [own, dict(tokens[0], region={"lat": [0, 4], "lon": [0, 3]}), *tokens[1:]],
        "missing writer": [own, *tokens[1:]],
        "divergent records": [own, dict(tokens[0], records=tokens[0]["records"][1:]), *tokens[1:]],
        "fingerprint": [own, dict(tokens[0], fingerprint="sha256:" + "0" * 64), *tokens[1:]],
        "static missing": [own, dict(tokens[0], statics=["orog"]), *tokens[1:]],
    }
    before = (Path(url) / "output_manifest.json").read_bytes()
    for case, bad in bad_cases.items():
        with pytest.raises(zs.CommitError):
            owner.commit(bad)
        assert (Path(url) / "output_manifest.json").read_bytes() == before, case
    m = owner.commit([own, *tokens])
    assert m["commit_seq"] == 1
    # Our TS reader reads the mixed store bitwise equal to the all-TS one (records, statics, blobs).
    got, ref = ts_dump(url), ts_dump(reference)
    assert got["records"] == ref["records"] and len(got["records"]) == committed
    assert got["statics"] == ref["statics"] and got["blobs"] == ref["blobs"]
    a = xr.open_dataset(url, engine="zarr_stream", drop_uncommitted=True).load()
    b = xr.open_dataset(reference, engine="zarr_stream", drop_uncommitted=True).load()
    for name in ["temperature", "humidity", "count", "big", "flag", "orog", "landmask", "time", "lat", "lon"]:
        assert a[name].values.tobytes() == b[name].values.tobytes(), name


def test_python_owner_invalidates_and_ts_rewrites_a_record(tmp_path: Path) -> None:
    """Indexed: the Python owner invalidates record 3; readers (engine and TS) stop showing it; a TS
    contributor may then rewrite it (a committed record it may not), and the next commit bumps generation."""
    from conftest import ts_dump

    from zarr_stream.writer import Owner

    url = str(tmp_path / "inv")
    owner = Owner.create(url, dict(SCHEMA, time_mode={"indexed": {"times": [3600.0 * r for r in range(8)]}}), 4, REGIONS[0])
    tokens = [ts_contributor(url, "indexed", w, 5) for w in (1, 2, 3)]
    for name in ("orog", "landmask"):
        owner.write_static(name, static_region(0, name))
    owner.write_blob("static", "seed.bin", bytes([0, 1, 2, 3]))
    for r in range(5):
        owner.write_record_at(r, 3600.0 * r, {**region_arrays(0, r), "flag": generated("flag", r)})
        if r == 1:
            owner.write_blob(("record", 1), "rng", bytes([1, 0, 42]))
    owner.commit([owner.flush(), *tokens])
    with pytest.raises(zs.ProtocolError, match="invalidate"):
        owner.write_record_at(3, 10800.0, {**region_arrays(0, 3), "flag": generated("flag", 3)})
    m = owner.invalidate([3, 1])
    assert m["commit_seq"] == 2 and zs.committed_indices(m) == [0, 2, 4]
    assert all(b["scope"] == "static" for b in m["blobs"])
    ds = xr.open_dataset(url, engine="zarr_stream")
    assert ds.committed.values.tolist() == [True, False, True, False, True, False, False, False]
    assert np.isnan(ds.temperature.isel(time=3).values).all()
    assert [r["index"] for r in ts_dump(url)["records"]] == [0, 2, 4]
    with pytest.raises(zs.NotCommitted):
        zs.read_blob(url, ("record", 1), 2, "rng")
    # Rewrite record 3 with the same values from every writer and commit again: generation 2.
    owner.write_record_at(3, 10800.0, {**region_arrays(0, 3), "flag": generated("flag", 3)})
    contributors = [Contributor.join(url, w, REGIONS[w]) for w in (1, 2, 3)]
    for c in contributors:
        c.write_record_at(3, 10800.0, region_arrays(c.writer, 3))
    m = owner.commit([owner.flush(), *(c.flush() for c in contributors)])
    assert m["records"]["entries"][3] == {"committed": True, "t": 10800.0, "generation": 2}
    assert np.array_equal(xr.open_dataset(url, engine="zarr_stream").temperature.isel(time=3).values, generated("temperature", 3))


def test_open_datatree_has_the_dataset_at_its_root(local_backend: Backend) -> None:
    url = local_backend.store("indexed")
    tree = xr.open_datatree(url, engine="zarr_stream", drop_uncommitted=True)
    ds = xr.open_dataset(url, engine="zarr_stream", drop_uncommitted=True)
    assert tree.to_dataset().identical(ds)
    assert list(tree.children) == []


# -- a writer started twice, across languages (fencing.md, "Sealed tokens") ---------------------------------


def ts_leases(tokens: list[dict[str, Any]], leases: list[bytes]) -> dict[str, Any]:
    """The TypeScript writer's digests of `tokens`, and its reading of `leases` (ts_store.mjs leases)."""
    import base64

    res = subprocess.run(
        ["node", str(TS_STORE), "leases"],
        input=json.dumps({"tokens": tokens, "leases": [base64.b64encode(b).decode() for b in leases]}),
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    out = json.loads(res.stdout)
    out["leases"] = [dict(x, bytes=None if x["bytes"] is None else base64.b64decode(x["bytes"])) for x in out["leases"]]
    return out


def lease_of(url: str, writer: int) -> bytes:
    return (Path(url) / f".zarr-stream/leases/writer-{writer}.json").read_bytes()


def test_ts_owner_refuses_the_stale_token_of_a_python_contributor_started_twice(tmp_path: Path) -> None:
    url = str(tmp_path / "twice")
    owner = Owner(url, "append", 4, 2)
    try:
        old, stale = python_contributor(url, 1, 2, extra_blob="old.bin")
        new, live = python_contributor(url, 1, 2)
        others = [python_contributor(url, w, 2)[1] for w in (2, 3)]
        refused = owner.commit([stale, *others])
        assert refused["ok"] is False, refused
        assert refused["error"]["name"] == "CommitError" and refused["error"]["reason"] == "stale-token", refused
        assert zs.read_output_manifest(url)["commit_seq"] == 0
        assert not (Path(url) / ".zarr-stream/committing.json").exists()  # the TS owner withdrew its intent
        with pytest.raises(zs.Fenced):
            old.write_blob("static", "late.bin", b"x")
        done = owner.commit([live, *others])
        assert done["ok"] is True and done["n_committed"] == 2, done
    finally:
        owner.close()
    ds = xr.open_dataset(url, engine="zarr_stream")
    for r in range(2):
        assert np.array_equal(ds.temperature.isel(time=r).values, generated("temperature", r))
        assert np.array_equal(ds.big.isel(time=r).values, generated("big", r))


def test_python_owner_refuses_the_stale_token_of_a_ts_contributor_started_twice(tmp_path: Path) -> None:
    from zarr_stream.writer import Owner as PyOwner

    url = str(tmp_path / "twice")
    owner = PyOwner.create(url, dict(SCHEMA, time_mode="append"), 4, REGIONS[0])
    stale = ts_contributor(url, "append", 1, 2, "old.bin")
    live = ts_contributor(url, "append", 1, 2)
    others = [ts_contributor(url, "append", w, 2) for w in (2, 3)]
    for name in ("orog", "landmask"):
        owner.write_static(name, static_region(0, name))
    owner.write_blob("static", "seed.bin", bytes([0, 1, 2, 3]))
    for r in range(2):
        owner.write_record(3600.0 * r, {**region_arrays(0, r), "flag": generated("flag", r)})
        if r == 1:
            owner.write_blob(("record", 1), "rng", bytes([1, 0, 42]))
    own = owner.flush()
    before = (Path(url) / "output_manifest.json").read_bytes()
    with pytest.raises(zs.CommitError) as refused:
        owner.commit([own, stale, *others])
    assert refused.value.reason == "stale-token" and refused.value.writers == [1]
    assert (Path(url) / "output_manifest.json").read_bytes() == before
    assert not (Path(url) / ".zarr-stream/committing.json").exists()
    m = owner.commit([own, live, *others])
    assert m["commit_seq"] == 1 and m["n_records"] == 2
    assert not (Path(url) / ".zarr-stream/committing.json").exists()
    ds = xr.open_dataset(url, engine="zarr_stream")
    for r in range(2):
        assert np.array_equal(ds.temperature.isel(time=r).values, generated("temperature", r))
        assert np.array_equal(ds["count"].isel(time=r).values, generated("count", r))


def test_digests_and_leases_are_the_same_bytes_in_both_languages(tmp_path: Path) -> None:
    """A Python seal is the TypeScript digest of the token and the other way round; each language's lease
    parses in the other and serializes back to the same bytes; a takeover in either language counts on from
    the other's epoch."""
    import random
    import struct

    from zarr_stream import fencing
    from zarr_stream.writer import Owner as PyOwner

    url = str(tmp_path / "leases")
    PyOwner.create(url, dict(SCHEMA, time_mode="append"), 4, REGIONS[0])
    _, py_token = python_contributor(url, 1, 2)
    py_lease = lease_of(url, 1)
    ts_token = ts_contributor(url, "append", 1, 2, "b.bin")  # takes writer 1's lease over from Python
    ts_lease = lease_of(url, 1)
    # Tokens the owner may meet: t values of every magnitude, odd dim names and blob keys.
    rng = random.Random(7)
    ts_values = [0.0, -0.0, 0.1, 1e21, 1e-7, 123456789.125, 2.0**53 + 2, 5e-324]
    while len(ts_values) < 300:
        x = struct.unpack("<d", rng.getrandbits(64).to_bytes(8, "little"))[0]
        if np.isfinite(x):
            ts_values.append(x)
    odd = dict(py_token, records=[{"index": i, "t": t} for i, t in enumerate(ts_values)])
    odd["region"] = {"lat": [0, 4], "10": [0, 1], "9": [1, 2], "Z": [0, 1], "é": [0, 1], "\U0001f600": [0, 1], "\uff01": [0, 1]}
    odd["blobs"] = [{"scope": "static", "key": 'a"b\\c\n\x01\u2028é😀'}]
    seen = ts_leases([py_token, ts_token, odd], [py_lease, ts_lease])
    assert seen["digests"] == [fencing.token_digest(t) for t in (py_token, ts_token, odd)]
    py_doc, ts_doc = fencing.parse_lease(py_lease), fencing.parse_lease(ts_lease)
    assert py_doc is not None and ts_doc is not None
    assert py_doc["sealed"] == [fencing.token_digest(py_token)] and py_doc["epoch"] == 1
    assert ts_doc["sealed"] == [fencing.token_digest(ts_token)] and ts_doc["epoch"] == 2
    for (ts_reads, doc, raw) in zip(seen["leases"], (py_doc, ts_doc), (py_lease, ts_lease), strict=True):
        assert ts_reads["doc"] == doc and ts_reads["bytes"] == raw == fencing.lease_bytes(doc)
        assert ts_reads["next_epoch"] == doc["epoch"] + 1
    # Python takes the lease over from TypeScript, one epoch on.
    Contributor.join(url, 1, REGIONS[1])
    again = fencing.parse_lease(lease_of(url, 1))
    assert again is not None and again["epoch"] == 3 and again["sealed"] == [] and again["nonce"] != ts_doc["nonce"]
