"""Acceptance: xarray through the engine (and read-back) equals our TypeScript reader bitwise on committed
records of append and indexed stores written by 4 writers, on FsStore and on versitygw; uncommitted
records are masked."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import xarray as xr
import zarr
from conftest import Backend, dump_array, generated, ts_dump

import zarr_stream as zs

VARS = ["temperature", "humidity", "count", "big", "flag"]


def open_ds(backend: Backend, url: str, **kw: object) -> xr.Dataset:
    return xr.open_dataset(url, engine="zarr_stream", storage_options=backend.storage_options, **kw)


@pytest.mark.parametrize("store", ["append", "indexed"])
def test_engine_equals_ts_reader_bitwise(backend: Backend, store: str) -> None:
    url = backend.store(store)
    dump = ts_dump(url, backend.env)
    ds = open_ds(backend, url).load()
    manifest = zs.read_output_manifest(url, storage_options=backend.storage_options)
    committed = [r["index"] for r in dump["records"]]
    assert committed == zs.committed_indices(manifest)
    assert len(committed) == (10 if store == "append" else 7)
    for rec in dump["records"]:
        i = rec["index"]
        assert bool(ds.committed[i])
        assert ds.time.values[i] == np.datetime64("2000-01-01T00:00:00") + np.timedelta64(int(rec["t"]), "s")
        for var in VARS:
            want = dump_array(rec["vars"][var])
            got = ds[var].isel(time=i).values
            assert got.dtype == want.dtype.newbyteorder("=")
            assert got.shape == want.shape
            assert got.astype(want.dtype).tobytes() == want.tobytes(), (var, i)
            rb = zs.read_record(url, var, i, storage_options=backend.storage_options)
            assert rb.astype(want.dtype).tobytes() == want.tobytes(), (var, i)
            # And both are the values the writers wrote.
            assert np.array_equal(got, generated(var, i))
    assert sorted(dump["statics"]) == ["landmask", "orog"]
    for name, a in dump["statics"].items():
        want = dump_array(a)
        assert ds[name].values.astype(want.dtype).tobytes() == want.tobytes()
        assert zs.read_static(url, name, storage_options=backend.storage_options).astype(want.dtype).tobytes() == want.tobytes()
    assert len(dump["blobs"]) == 8
    for b in dump["blobs"]:
        scope = "static" if b["scope"] == "static" else ("record", b["scope"]["record"])
        got = zs.read_blob(url, scope, b["writer"], b["key"], storage_options=backend.storage_options)
        assert got.hex() == b["hex"]


def test_indexed_uncommitted_records_are_masked(backend: Backend) -> None:
    url = backend.store("indexed")
    ds = open_ds(backend, url)
    mask = ds.committed.values
    assert mask.tolist() == [True] * 7 + [False] * 5
    loaded = ds.load()
    for var in VARS:
        unc = loaded[var].isel(time=~mask).values
        if loaded[var].dtype.kind == "f":
            assert np.isnan(unc).all(), var
        else:
            assert (unc == 0).all(), var
    # Records 7..9 were written and flushed by every writer, so the store's shards hold them: without the
    # mask they would show (what zarr-python alone shows).
    if backend.storage_options is None:
        raw = np.asarray(zarr.open_array(f"{url}/temperature", mode="r")[7])
        assert np.array_equal(raw, generated("temperature", 7))
    # A lazy selection that mixes committed and uncommitted records masks the same.
    part = ds.temperature.isel(time=slice(5, 10), lat=slice(1, 7, 2), lon=2).values
    assert np.array_equal(part[:2], np.stack([generated("temperature", r)[1:7:2, 2] for r in (5, 6)]))
    assert np.isnan(part[2:]).all()
    for i in (7, 11):
        with pytest.raises(zs.NotCommitted):
            zs.read_record(url, "temperature", i, storage_options=backend.storage_options)


def test_drop_uncommitted_keeps_committed_records_only(backend: Backend) -> None:
    url = backend.store("indexed")
    ds = open_ds(backend, url, drop_uncommitted=True)
    assert ds.sizes["time"] == 7
    assert bool(ds.committed.all())
    for var in VARS:
        for pos in range(7):
            assert np.array_equal(ds[var].isel(time=pos).values, generated(var, pos))


def test_append_stops_at_the_manifest_count_when_zarr_json_runs_ahead(backend: Backend) -> None:
    url = backend.store("append")
    ds = open_ds(backend, url)
    assert ds.sizes["time"] == 10
    assert ds.attrs["zarr_stream_n_records"] == 10
    if backend.storage_options is None:
        # zarr.json says 13 records (a zombie owner's refused commit grew it); zarr-python alone shows them.
        assert zarr.open_array(f"{url}/temperature", mode="r").shape[0] == 13
        assert json.loads(Path(url, "temperature", "zarr.json").read_text())["shape"][0] == 13
    assert np.array_equal(ds.flag.values, np.stack([generated("flag", r) for r in range(10)]))
    assert np.array_equal(ds.temperature[-1].values, generated("temperature", 9))
    with pytest.raises(zs.NotCommitted):
        zs.read_record(url, "temperature", 10, storage_options=backend.storage_options)


def test_regions_of_read_record_and_lazy_slices(backend: Backend) -> None:
    url = backend.store("append")
    so = backend.storage_options
    full = generated("temperature", 4)
    got = zs.read_record(url, "temperature", 4, {"lat": (2, 7), "lon": (1, 5)}, storage_options=so)
    assert np.array_equal(got, full[2:7, 1:5])
    assert np.array_equal(zs.read_record(url, "count", 4, {"lat": (3, 8)}, storage_options=so), generated("count", 4)[3:8])
    ds = open_ds(backend, url)
    assert np.array_equal(ds.big[2:9:3, ::-2, 4].values, np.stack([generated("big", r)[::-2, 4] for r in (2, 5, 8)]))
    assert ds.humidity[7, 3, 5].values == generated("humidity", 7)[3, 5]
    assert np.array_equal(
        zs.read_static(url, "orog", {"lon": (3, 6)}, storage_options=so),
        zs.read_static(url, "orog", storage_options=so)[:, 3:6],
    )
