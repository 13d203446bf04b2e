"""Manifest forms: v1 (Julia/Rust and EarthSciIO's Python spelling), v2, paged v2 under its own label; the
label pinned; the contract's errors as exceptions."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import xarray as xr
from conftest import ts, ts_dump, dump_array, generated

import zarr_stream as zs

VARS = ["temperature", "humidity", "count", "big", "flag"]


@pytest.fixture(scope="module")
def v1_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("v1") / "store"
    ts("write", str(root), "v1", "7")
    return root


@pytest.fixture(scope="module")
def paged_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """600 indexed records (past one 512-entry page) from 4 writers, 3 flushed but uncommitted, pages on."""
    root = tmp_path_factory.mktemp("paged") / "store"
    ts("write", str(root), "indexed", "600", "--uncommitted", "3", "--pages", timeout=600)
    return root


def python_spelled(m: dict) -> dict:
    """A Julia/Rust-spelled v1 manifest in EarthSciIO's Python spelling (python-v1-spelling.ts)."""
    out = {k: v for k, v in m.items() if k not in ("n_records", "created_at", "dims", "time_shards")}
    out["dims"] = [[d["name"], 0 if d["name"] == m["time_dim"] else d["length"]] for d in m["dims"]]
    out["time_shards"] = [{**{k: v for k, v in s.items() if k != "n"}, "n_records": s["n"]} for s in m["time_shards"]]
    out["total_records"] = m["n_records"]
    out["written_at"] = m["created_at"]
    return out


def test_v1_store_in_both_spellings(v1_store: Path, tmp_path: Path) -> None:
    julia = zs.read_output_manifest(v1_store)
    assert julia["schema"] == zs.MANIFEST_V1
    assert julia["n_records"] == 7
    py_store = tmp_path / "py"
    shutil.copytree(v1_store, py_store)
    raw = json.loads((v1_store / "output_manifest.json").read_text())
    (py_store / "output_manifest.json").write_text(json.dumps(python_spelled(raw)))
    assert zs.read_output_manifest(py_store) == julia
    dump = ts_dump(str(py_store))  # our TS reader reads the Python spelling too
    for store in (v1_store, py_store):
        ds = xr.open_dataset(store, engine="zarr_stream")
        assert ds.sizes["time"] == 7
        for rec in dump["records"]:
            for var in VARS:
                want = dump_array(rec["vars"][var])
                assert ds[var].isel(time=rec["index"]).values.astype(want.dtype).tobytes() == want.tobytes()
        with pytest.raises(zs.NotCommitted):
            zs.read_static(store, "orog")
        with pytest.raises(zs.NotCommitted):
            zs.read_blob(store, "static", 0, "seed.bin")
    mixed = python_spelled(raw) | {"n_records": 7}
    (py_store / "output_manifest.json").write_text(json.dumps(mixed))
    with pytest.raises(zs.SchemaError, match="both total_records and n_records"):
        zs.read_output_manifest(py_store)


def test_paged_manifest_is_resolved_and_read_bitwise(paged_store: Path) -> None:
    raw = json.loads((paged_store / "output_manifest.json").read_text())
    assert raw["schema"] == zs.MANIFEST_V2_PAGED
    assert raw["records"]["entries"] == [] and len(raw["records"]["pages"]) == 2
    m = zs.read_output_manifest(paged_store)
    assert m["schema"] == zs.MANIFEST_V2_PAGED
    assert len(m["records"]["entries"]) == 600
    assert zs.committed_indices(m) == list(range(595))
    dump = ts_dump(str(paged_store))
    assert [r["index"] for r in dump["records"]] == list(range(595))
    ds = xr.open_dataset(paged_store, engine="zarr_stream")
    assert ds.committed.values.tolist() == [True] * 595 + [False] * 5
    for pos in (0, 511, 512, 513, 594):
        for var in VARS:
            want = dump_array(dump["records"][pos]["vars"][var])
            assert ds[var].isel(time=pos).values.astype(want.dtype).tobytes() == want.tobytes()
    assert np.isnan(ds.temperature.isel(time=slice(595, 600)).values).all()
    assert np.array_equal(ds["count"].isel(time=550).values, generated("count", 550))


def test_paged_refs_under_the_seed_label_and_bad_pages_are_refused(paged_store: Path, tmp_path: Path) -> None:
    store = tmp_path / "s"
    shutil.copytree(paged_store, store)
    raw = json.loads((store / "output_manifest.json").read_text())
    (store / "output_manifest.json").write_text(json.dumps(raw | {"schema": zs.MANIFEST_V2}))
    with pytest.raises(zs.SchemaError, match="page refs belong to"):
        zs.read_output_manifest(store)
    (store / "output_manifest.json").write_text(json.dumps(raw))
    page = store / ".zarr-stream" / "manifest" / "records" / f"{raw['records']['pages'][0]['sha256']}.json"
    data = bytearray(page.read_bytes())
    data[data.index(b"true")] = ord("T")
    page.write_bytes(bytes(data))
    with pytest.raises(zs.CorruptStore, match="do not hash"):
        zs.read_output_manifest(store)
    page.unlink()
    with pytest.raises(zs.CorruptStore, match="is missing"):
        zs.read_output_manifest(store)


def test_labels_are_pinned_and_errors_are_the_contracts(copy_store, tmp_path: Path) -> None:  # noqa: ANN001
    store = copy_store("indexed")
    raw = json.loads((store / "output_manifest.json").read_text())
    for label in ("earthsciio/output-manifest/v3", "zarr-stream/output-manifest/v2", None):
        (store / "output_manifest.json").write_text(json.dumps(raw | {"schema": label}))
        with pytest.raises(zs.SchemaError, match="label"):
            zs.read_output_manifest(store)
        with pytest.raises(zs.SchemaError):
            xr.open_dataset(store, engine="zarr_stream")
    (store / "output_manifest.json").write_text("{not json")
    with pytest.raises(zs.SchemaError, match="not valid UTF-8 JSON"):
        zs.read_output_manifest(store)
    (store / "output_manifest.json").write_text(json.dumps(raw))
    with pytest.raises(zs.StoreError, match="no output_manifest.json"):
        zs.read_output_manifest(tmp_path)
    with pytest.raises(zs.SchemaError, match="no variable named"):
        zs.read_record(store, "nope", 0)
    with pytest.raises(zs.SchemaError, match="not a non-negative integer"):
        zs.read_record(store, "temperature", -1)
    with pytest.raises(zs.SchemaError, match="region"):
        zs.read_record(store, "temperature", 0, {"lat": (4, 2)})
    with pytest.raises(zs.SchemaError, match="not a non-time dim"):
        zs.read_record(store, "temperature", 0, {"time": (0, 1)})
    with pytest.raises(zs.SchemaError, match="blob key"):
        zs.read_blob(store, "static", 0, "..")
    with pytest.raises(zs.NotCommitted):
        zs.read_blob(store, ("record", 2), 0, "rng")
    assert zs.read_blob(store, {"record": 1}, 3, "rng") == bytes([1, 3, 42])
    # A committed blob whose object is gone: the store contradicts its manifest.
    (store / "blobs" / "static" / "2" / "seed.bin").unlink()
    with pytest.raises(zs.StoreError, match="missing"):
        zs.read_blob(store, "static", 2, "seed.bin")
    # Every contract error is a ZarrStreamError.
    for e in (zs.NotCommitted, zs.SchemaError, zs.ProtocolError, zs.CommitError, zs.TornRead, zs.CorruptStore):
        assert issubclass(e, zs.ZarrStreamError)
    # An uncommitted static is not shown and not read.
    raw2 = raw | {"statics_committed": ["orog"]}
    (store / "output_manifest.json").write_text(json.dumps(raw2))
    with pytest.raises(zs.NotCommitted):
        zs.read_static(store, "landmask")
    ds = xr.open_dataset(store, engine="zarr_stream")
    assert "orog" in ds and "landmask" not in ds
