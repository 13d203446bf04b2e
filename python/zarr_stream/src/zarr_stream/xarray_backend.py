"""``xr.open_dataset(url, engine="zarr_stream")``: a store's committed data, lazily.

- The manifest read at open decides what the dataset shows. Append mode: the time axis is the manifest's
  committed count, even when zarr.json shapes run ahead of it (a zombie owner's refused commit). Indexed
  mode: every time index, uncommitted records masked (NaN for floats, 0 — the contract's fill — for
  integers) with a boolean ``committed`` coordinate on time; ``drop_uncommitted=True`` keeps committed
  records only. Append datasets carry ``committed`` too (all True).
- Committed statics are data variables (uncommitted ones are left out); non-time coordinate arrays
  (``coords`` with values) are coordinates; the time coordinate is CF-decoded (``decode_times``).
- Variables are lazy (xarray's lazy indexing; dask arrays when ``chunks=`` is given and dask is
  installed); each read reads every shard it touches from one version (storage.py).
- No warnings: nothing is opened through zarr-python's group listing, which would meet the manifest,
  ``blobs/`` and ``.zarr-stream/`` as non-Zarr nodes.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
import xarray as xr
from xarray.backends import BackendArray, BackendEntrypoint
from xarray.core import indexing

from .errors import SchemaError
from .manifest import MANIFEST_KEY, Manifest, committed_mask, is_v2, read_manifest_from
from .readback import _dtype, read_box
from .storage import ObjectStore, open_store


class RecordArray(BackendArray):
    """A streaming variable over the dataset's time positions (store time indices `times`)."""

    def __init__(
        self,
        store: ObjectStore,
        var: Mapping[str, Any],
        time_dim: str,
        lengths: Mapping[str, int],
        times: np.ndarray,
        committed: np.ndarray,
    ) -> None:
        self.store = store
        self.name = var["name"]
        self.dims = list(var["dims"])
        self.axis = self.dims.index(time_dim)
        self.times = times
        self.committed = committed
        self.dtype = _dtype(var["dtype"])
        self.shape = tuple(len(times) if d == time_dim else lengths[d] for d in self.dims)

    def __getitem__(self, key: indexing.ExplicitIndexer) -> np.ndarray:
        return indexing.explicit_indexing_adapter(key, self.shape, indexing.IndexingSupport.BASIC, self._getitem)

    def _getitem(self, key: tuple[Any, ...]) -> np.ndarray:
        positions: list[np.ndarray] = []
        for k, n in zip(key, self.shape, strict=True):
            positions.append(np.arange(n)[k] if isinstance(k, slice) else np.asarray([int(k)]))
        tpos = positions[self.axis]
        sel: list[tuple[int, int]] = []
        for d, p in enumerate(positions):
            idx = self.times[p] if d == self.axis else p
            sel.append((int(idx.min()), int(idx.max()) + 1) if idx.size else (0, 0))
        if any(b == a for a, b in sel):
            out = np.zeros([p.size for p in positions], dtype=self.dtype)
        else:
            box = read_box(self.store, self.name, sel)
            take = [
                (self.times[p] if d == self.axis else p) - sel[d][0] for d, p in enumerate(positions)
            ]
            out = box[np.ix_(*take)].astype(self.dtype, copy=False)
            mask = ~self.committed[tpos]
            if mask.any():
                where = [slice(None)] * out.ndim
                where[self.axis] = mask
                out[tuple(where)] = np.nan if self.dtype.kind == "f" else 0
        drop = tuple(d for d, k in enumerate(key) if not isinstance(k, slice))
        return out.reshape([s for d, s in enumerate(out.shape) if d not in drop]) if drop else out


class StaticArray(BackendArray):
    def __init__(self, store: ObjectStore, var: Mapping[str, Any], lengths: Mapping[str, int]) -> None:
        self.store = store
        self.name = var["name"]
        self.dtype = _dtype(var["dtype"])
        self.shape = tuple(lengths[d] for d in var["dims"])

    def __getitem__(self, key: indexing.ExplicitIndexer) -> np.ndarray:
        return indexing.explicit_indexing_adapter(key, self.shape, indexing.IndexingSupport.BASIC, self._getitem)

    def _getitem(self, key: tuple[Any, ...]) -> np.ndarray:
        sel = [k.indices(n) if isinstance(k, slice) else (int(k), int(k) + 1, 1) for k, n in zip(key, self.shape, strict=True)]
        box = read_box(self.store, self.name, [(a, max(a, b)) for a, b, _ in sel])
        out = box[tuple(slice(None, None, s) for _, _, s in sel)].astype(self.dtype, copy=False)
        drop = tuple(d for d, k in enumerate(key) if not isinstance(k, slice))
        return out.reshape([s for d, s in enumerate(out.shape) if d not in drop]) if drop else out


def _array_attrs(store: ObjectStore, name: str) -> dict[str, Any] | None:
    import json

    raw = store.get(f"{name}/zarr.json")
    if raw is None:
        return None
    attrs = json.loads(raw).get("attributes", {})
    return {k: v for k, v in attrs.items() if k != "_ARRAY_DIMENSIONS"}


def open_zarr_stream(
    store: str | os.PathLike[str] | ObjectStore,
    *,
    storage_options: Mapping[str, Any] | None = None,
    drop_uncommitted: bool = False,
    drop_variables: Iterable[str] | None = None,
    decode_times: bool = True,
) -> xr.Dataset:
    """The committed data of a store as an xarray Dataset (see the module docstring)."""
    objects = open_store(store, storage_options)
    m: Manifest = read_manifest_from(objects)
    drop = set(drop_variables or ())
    time_dim = m["time_dim"]
    lengths = {d["name"]: d["length"] for d in m["dims"]}
    indexed = is_v2(m) and m["time_mode"] == "indexed"
    committed_all = np.asarray(committed_mask(m), dtype=bool)
    if indexed:
        times_all = np.asarray([e["t"] for e in m["records"]["entries"]], dtype="<f8")
    else:
        n = m["n_records"]
        times_all = read_box(objects, time_dim, [(0, n)]).astype("<f8") if n else np.zeros(0, "<f8")
    positions = np.flatnonzero(committed_all) if drop_uncommitted else np.arange(len(committed_all))
    time_attrs = _array_attrs(objects, time_dim) or {}
    coords: dict[str, Any] = {
        time_dim: xr.Variable((time_dim,), times_all[positions], attrs=time_attrs),
        "committed": xr.Variable((time_dim,), committed_all[positions]),
    }
    for d in lengths:
        if d == time_dim or d in drop:
            continue
        attrs = _array_attrs(objects, d)
        if attrs is not None:  # a non-time coordinate array the writer wrote at create
            coords[d] = xr.Variable((d,), read_box(objects, d, [(0, lengths[d])]), attrs=attrs)
    data_vars: dict[str, xr.Variable] = {}
    for v in m["vars"]:
        if v["name"] in drop:
            continue
        arr = RecordArray(objects, v, time_dim, lengths, positions, committed_all[positions])
        data_vars[v["name"]] = xr.Variable(
            v["dims"], indexing.LazilyIndexedArray(arr), attrs=dict(v.get("attrs") or {})
        )
    if is_v2(m):
        for s in m["statics"]:
            if s["name"] in drop or s["name"] not in m["statics_committed"]:
                continue
            arr = StaticArray(objects, s, lengths)
            data_vars[s["name"]] = xr.Variable(
                s["dims"], indexing.LazilyIndexedArray(arr), attrs=dict(s.get("attrs") or {})
            )
    attrs = {
        "zarr_stream_manifest": m["schema"],
        "zarr_stream_url": objects.url,
        "zarr_stream_n_records": m["n_records"],
    }
    if is_v2(m):
        attrs["zarr_stream_commit_seq"] = m["commit_seq"]
        attrs["zarr_stream_time_mode"] = m["time_mode"]
    ds = xr.Dataset(data_vars, coords=coords, attrs=attrs)
    if decode_times and "units" in time_attrs:
        ds = xr.decode_cf(ds, decode_times=xr.coders.CFDatetimeCoder(use_cftime=None), mask_and_scale=False, decode_coords=False)
    return ds


class ZarrStreamBackendEntrypoint(BackendEntrypoint):
    """The ``zarr_stream`` engine of ``xr.open_dataset``."""

    description = "Committed data of zarr-stream (streaming multi-writer Zarr v3) stores"
    url = "https://github.com/zarr-stream/zarr-stream/blob/main/python/zarr_stream/README.md"
    open_dataset_parameters = ("filename_or_obj", "drop_variables", "storage_options", "drop_uncommitted", "decode_times")

    def open_dataset(  # type: ignore[override]
        self,
        filename_or_obj: Any,
        *,
        drop_variables: str | Iterable[str] | None = None,
        storage_options: Mapping[str, Any] | None = None,
        drop_uncommitted: bool = False,
        decode_times: bool = True,
    ) -> xr.Dataset:
        if isinstance(filename_or_obj, (str, os.PathLike, ObjectStore)):
            drops = [drop_variables] if isinstance(drop_variables, str) else drop_variables
            return open_zarr_stream(
                filename_or_obj,
                storage_options=storage_options,
                drop_uncommitted=drop_uncommitted,
                drop_variables=drops,
                decode_times=decode_times,
            )
        raise SchemaError(f"engine zarr_stream opens a path, a file:// or s3:// URL, not {type(filename_or_obj).__name__}")

    def open_groups_as_dict(  # type: ignore[override]
        self,
        filename_or_obj: Any,
        *,
        drop_variables: str | Iterable[str] | None = None,
        storage_options: Mapping[str, Any] | None = None,
        drop_uncommitted: bool = False,
        decode_times: bool = True,
    ) -> dict[str, xr.Dataset]:
        """A store is one group: the root node holds the dataset open_dataset gives."""
        ds = self.open_dataset(
            filename_or_obj,
            drop_variables=drop_variables,
            storage_options=storage_options,
            drop_uncommitted=drop_uncommitted,
            decode_times=decode_times,
        )
        return {"/": ds}

    def open_datatree(  # type: ignore[override]
        self,
        filename_or_obj: Any,
        *,
        drop_variables: str | Iterable[str] | None = None,
        storage_options: Mapping[str, Any] | None = None,
        drop_uncommitted: bool = False,
        decode_times: bool = True,
    ) -> xr.DataTree:
        groups = self.open_groups_as_dict(
            filename_or_obj,
            drop_variables=drop_variables,
            storage_options=storage_options,
            drop_uncommitted=drop_uncommitted,
            decode_times=decode_times,
        )
        return xr.DataTree.from_dict(groups)

    def guess_can_open(self, filename_or_obj: Any) -> bool:
        if not isinstance(filename_or_obj, (str, os.PathLike)):
            return False
        text = os.fspath(filename_or_obj)
        if "://" in text:
            return False
        return os.path.isfile(os.path.join(text, MANIFEST_KEY))
