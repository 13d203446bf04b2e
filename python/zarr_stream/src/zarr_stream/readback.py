"""Seed 000 §7 read-back: committed records, statics and blobs, read directly from the store.

Every function takes a store (a local path, a ``file://`` or ``s3://`` URL, or an ObjectStore from
``open_store``); ``storage_options`` configure an ``s3://`` URL (``endpoint_url``, ``key``, ``secret``,
``region``, ``anon``). The manifest decides what is committed and is read first; each array read then
reads zarr.json and the shards it needs, every shard from one version (storage.py).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import zarr
from zarr.core.array import AsyncArray
from zarr.core.metadata import ArrayV3Metadata
from zarr.storage import StorePath

from .errors import NotCommitted, SchemaError, StoreError
from .manifest import Manifest, committed_mask, is_v2, read_manifest_from
from .storage import ObjectStore, PinnedZarrStore, open_store

StoreLike = str | os.PathLike[str] | ObjectStore
Region = Mapping[str, Sequence[int]]
BlobScope = str | tuple[str, int] | Mapping[str, int]
BLOB_KEY_CHARS = set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-")


def read_output_manifest(store: StoreLike, *, storage_options: Mapping[str, Any] | None = None) -> Manifest:
    """The store's v1 or v2 manifest (paged ones resolved, label kept), in the contract's spelling."""
    return read_manifest_from(open_store(store, storage_options))


def _open_zarr(scope: PinnedZarrStore, name: str) -> zarr.Array:
    raw = scope._read(f"{name}/zarr.json", None)
    if raw is None:
        raise SchemaError(f"array {name}: {name}/zarr.json is missing")
    try:
        doc = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise SchemaError(f"{name}/zarr.json: not valid JSON ({exc})") from None
    if not isinstance(doc, dict) or doc.get("zarr_format") != 3 or doc.get("node_type") != "array":
        raise SchemaError(f"{name}/zarr.json is not a Zarr v3 array")
    meta = ArrayV3Metadata.from_dict(doc)
    return zarr.Array(AsyncArray(metadata=meta, store_path=StorePath(scope, name)))


def read_box(store: ObjectStore, name: str, sel: Sequence[tuple[int, int]]) -> np.ndarray:
    """The box `sel` (per dim [start, stop)) of array `name`, each shard from one version of it."""

    def read(scope: PinnedZarrStore) -> np.ndarray:
        arr = _open_zarr(scope, name)
        if len(sel) != len(arr.shape):
            raise SchemaError(f"array {name}: selection has rank {len(sel)}, array has {len(arr.shape)}")
        for d, (a, b) in enumerate(sel):
            if not (0 <= a <= b <= arr.shape[d]):
                raise StoreError(f"array {name}: [{a}, {b}) outside dim {d} of length {arr.shape[d]} in zarr.json")
        return np.asarray(arr[tuple(slice(a, b) for a, b in sel)])

    return store.read_consistent(read)


def _selection(m: Manifest, dims: Sequence[str], region: Region | None, what: str) -> list[tuple[int, int]]:
    lengths = {d["name"]: d["length"] for d in m["dims"]}
    for d, r in (region or {}).items():
        length = lengths.get(d)
        if length is None or d == m["time_dim"]:
            raise SchemaError(f"{what}: region names {d!r}, which is not a non-time dim of the store")
        ok = (
            isinstance(r, Sequence)
            and len(r) == 2
            and all(isinstance(x, int) and not isinstance(x, bool) for x in r)
            and 0 <= r[0] < r[1] <= length
        )
        if not ok:
            raise SchemaError(f"{what}: region {d}={r!r} is not [start, stop) within [0, {length}]")
    return [(int(region[d][0]), int(region[d][1])) if region and d in region else (0, lengths[d]) for d in dims]


def _find(items: list[dict[str, Any]], name: str, kind: str) -> dict[str, Any]:
    for v in items:
        if v["name"] == name:
            return v
    raise SchemaError(f"no {kind} named {name!r} (have: {', '.join(v['name'] for v in items)})")


def _dtype(name: str) -> np.dtype[Any]:
    return np.dtype(name).newbyteorder("=")


def read_record(
    store: StoreLike,
    var: str,
    index: int,
    region: Region | None = None,
    *,
    manifest: Manifest | None = None,
    storage_options: Mapping[str, Any] | None = None,
) -> np.ndarray:
    """The region of committed record `index` of `var` (dims: var's minus time). NotCommitted otherwise."""
    if not isinstance(index, (int, np.integer)) or isinstance(index, bool) or index < 0:
        raise SchemaError(f"record index {index!r} is not a non-negative integer")
    index = int(index)
    objects = open_store(store, storage_options)
    m = manifest if manifest is not None else read_manifest_from(objects)
    v = _find(m["vars"], var, "variable")
    mask = committed_mask(m)
    if index >= len(mask) or not mask[index]:
        raise NotCommitted(f"record {index} of {objects.url} is not committed")
    sel = _selection(m, v["dims"], region, f"read_record({var})")
    axis = v["dims"].index(m["time_dim"])
    sel[axis] = (index, index + 1)
    out = read_box(objects, var, sel)
    return np.take(out, 0, axis=axis).astype(_dtype(v["dtype"]), copy=False)


def read_static(
    store: StoreLike,
    name: str,
    region: Region | None = None,
    *,
    manifest: Manifest | None = None,
    storage_options: Mapping[str, Any] | None = None,
) -> np.ndarray:
    """The region of committed static `name`. NotCommitted otherwise (a v1 store has no statics)."""
    objects = open_store(store, storage_options)
    m = manifest if manifest is not None else read_manifest_from(objects)
    if not is_v2(m):
        raise NotCommitted(f"static {name}: {objects.url} is a v1 store, which has no statics")
    v = _find(m["statics"], name, "static")
    if name not in m["statics_committed"]:
        raise NotCommitted(f"static {name} of {objects.url} is not committed")
    sel = _selection(m, v["dims"], region, f"read_static({name})")
    return read_box(objects, name, sel).astype(_dtype(v["dtype"]), copy=False)


def blob_object_key(scope: BlobScope, writer: int, key: str) -> str:
    """blobs/static/<writer>/<key> or blobs/record/<i>/<writer>/<key> (seed §7)."""
    if not isinstance(key, str) or not key or not set(key) <= BLOB_KEY_CHARS or key in (".", ".."):
        raise SchemaError(f'blob key {key!r} must match [A-Za-z0-9._-]+ and not be "." or ".."')
    if not isinstance(writer, int) or isinstance(writer, bool) or writer < 0:
        raise SchemaError(f"blob writer {writer!r} is not a non-negative integer")
    record = _blob_record(scope)
    return f"blobs/static/{writer}/{key}" if record is None else f"blobs/record/{record}/{writer}/{key}"


def _blob_record(scope: BlobScope) -> int | None:
    if scope == "static":
        return None
    if isinstance(scope, tuple) and len(scope) == 2 and scope[0] == "record":
        record: Any = scope[1]
    elif isinstance(scope, Mapping) and set(scope) == {"record"}:
        record = scope["record"]
    else:
        raise SchemaError(f'blob scope {scope!r} must be "static", ("record", i) or {{"record": i}}')
    if not isinstance(record, int) or isinstance(record, bool) or record < 0:
        raise SchemaError(f"blob record {record!r} is not a non-negative integer")
    return record


def read_blob(
    store: StoreLike,
    scope: BlobScope,
    writer: int,
    key: str,
    *,
    manifest: Manifest | None = None,
    storage_options: Mapping[str, Any] | None = None,
) -> bytes:
    """A committed blob's bytes. NotCommitted otherwise."""
    object_key = blob_object_key(scope, writer, key)
    record = _blob_record(scope)
    objects = open_store(store, storage_options)
    m = manifest if manifest is not None else read_manifest_from(objects)
    committed = is_v2(m) and any(
        b["writer"] == writer
        and b["key"] == key
        and (b["scope"] == "static" if record is None else b["scope"] == "record" and b.get("record") == record)
        for b in m["blobs"]
    )
    if not committed:
        raise NotCommitted(f"blob {object_key} of {objects.url} is not committed")
    data = objects.get(object_key)
    if data is None:
        raise StoreError(f"committed blob {object_key} is missing from {objects.url}")
    return data
