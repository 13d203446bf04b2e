"""``output_manifest.json``: the seed's v1 and v2 labels, EarthSciIO's Python v1 spelling, and the paged form.

Readers pin the label exactly (seed 000 §8.1). Accepted:

- ``earthsciio/output-manifest/v1`` in the Julia/Rust spelling or EarthSciIO's Python spelling
  (``total_records``, ``written_at``, ``dims`` as ``[name, length]`` pairs, ``time_shards[].n_records``),
  which is read in the contract's spelling (packages/reader/src/python-v1-spelling.ts);
- ``earthsciio/output-manifest/v2``, every list inline (page refs under this label are refused);
- ``zarr-stream/output-manifest/v2-paged`` (packages/spec/docs/manifest-pages.md): its pages are fetched,
  checked against the sha256 their refs name, and resolved; the label is kept.
"""

from __future__ import annotations

import hashlib
import json
import math
from typing import Any

from .errors import CorruptStore, SchemaError, StoreError
from .storage import ObjectStore

MANIFEST_KEY = "output_manifest.json"
MANIFEST_V1 = "earthsciio/output-manifest/v1"
MANIFEST_V2 = "earthsciio/output-manifest/v2"
MANIFEST_V2_PAGED = "zarr-stream/output-manifest/v2-paged"
LABELS = (MANIFEST_V1, MANIFEST_V2, MANIFEST_V2_PAGED)
PAGE_PREFIX = ".zarr-stream/manifest/"
DTYPES = ("float64", "float32", "int32", "int64", "uint8", "uint32", "uint64")

Manifest = dict[str, Any]


class _MissingPage(Exception):
    pass


def _refuse(pointer: str, reason: str) -> SchemaError:
    return SchemaError(f"{MANIFEST_KEY}: {pointer}: {reason}")


def uses_python_v1_spelling(doc: Any) -> bool:
    """True when a v1 manifest uses any of EarthSciIO's Python spellings."""
    if not isinstance(doc, dict) or doc.get("schema") != MANIFEST_V1:
        return False
    dims = doc.get("dims")
    shards = doc.get("time_shards")
    return (
        "total_records" in doc
        or "written_at" in doc
        or (isinstance(dims, list) and any(isinstance(d, list) for d in dims))
        or (isinstance(shards, list) and any(isinstance(s, dict) and "n_records" in s for s in shards))
    )


def normalize_python_v1_spelling(doc: Any) -> Any:
    """The document in the Julia/Rust spelling (a document mixing both spellings of a field is refused)."""
    if not uses_python_v1_spelling(doc):
        return doc
    renames = {"total_records": "n_records", "written_at": "created_at"}
    out: dict[str, Any] = {}
    for key, value in doc.items():
        renamed = renames.get(key)
        if renamed is not None and renamed in doc:
            raise _refuse(f"/{renamed}", f"both {key} and {renamed} are present")
        out[renamed or key] = value
    if isinstance(doc.get("dims"), list):
        dims = []
        for i, d in enumerate(doc["dims"]):
            if isinstance(d, list):
                if len(d) != 2 or not isinstance(d[0], str) or not isinstance(d[1], int):
                    raise _refuse(f"/dims/{i}", "a Python-spelled dim must be [name, length]")
                # The Python binding records the schema's placeholder (0) for the growing time axis.
                length = out.get("n_records") if d[0] == doc.get("time_dim") and isinstance(out.get("n_records"), int) else d[1]
                dims.append({"name": d[0], "length": length})
            else:
                dims.append(d)
        out["dims"] = dims
    if isinstance(doc.get("time_shards"), list):
        shards = []
        for i, s in enumerate(doc["time_shards"]):
            if isinstance(s, dict) and "n_records" in s:
                if "n" in s:
                    raise _refuse(f"/time_shards/{i}/n", "both n_records and n are present")
                s = {**{k: v for k, v in s.items() if k != "n_records"}, "n": s["n_records"]}
            shards.append(s)
        out["time_shards"] = shards
    return out


def _is_int(x: Any, minimum: int = 0) -> bool:
    return isinstance(x, int) and not isinstance(x, bool) and x >= minimum


def _is_number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def _check_variables(m: Manifest, field: str, dims: set[str]) -> None:
    items = m.get(field)
    if not isinstance(items, list):
        raise _refuse(f"/{field}", "must be a list")
    for i, v in enumerate(items):
        if not (isinstance(v, dict) and isinstance(v.get("name"), str) and isinstance(v.get("dims"), list)):
            raise _refuse(f"/{field}/{i}", "must be {name, dims, dtype}")
        if v.get("dtype") not in DTYPES:
            raise _refuse(f"/{field}/{i}/dtype", f"{v.get('dtype')!r} is not a contract dtype")
        for d in v["dims"]:
            if d not in dims:
                raise _refuse(f"/{field}/{i}/dims", f"{d!r} is not a dim of the store")


def validate(m: Any) -> Manifest:
    """Checks the fields read-back relies on (the full schemas: packages/spec/schemas/)."""
    if not isinstance(m, dict):
        raise _refuse("", "must be a JSON object")
    label = m.get("schema")
    if label not in LABELS:
        raise _refuse("/schema", f"{label!r} is not a manifest label this reader pins ({', '.join(LABELS)})")
    if not isinstance(m.get("time_dim"), str):
        raise _refuse("/time_dim", "must be a string")
    dims = m.get("dims")
    if not isinstance(dims, list) or not all(
        isinstance(d, dict) and isinstance(d.get("name"), str) and _is_int(d.get("length")) for d in dims
    ):
        raise _refuse("/dims", "must be a list of {name, length}")
    names = {d["name"] for d in dims}
    if m["time_dim"] not in names:
        raise _refuse("/time_dim", f"{m['time_dim']!r} is not in dims")
    if not _is_int(m.get("n_records")):
        raise _refuse("/n_records", "must be a non-negative integer")
    _check_variables(m, "vars", names)
    if label == MANIFEST_V1:
        return m
    _check_variables(m, "statics", names)
    if m.get("time_mode") not in ("append", "indexed"):
        raise _refuse("/time_mode", "must be 'append' or 'indexed'")
    if not _is_int(m.get("commit_seq")):
        raise _refuse("/commit_seq", "must be a non-negative integer")
    if not isinstance(m.get("statics_committed"), list):
        raise _refuse("/statics_committed", "must be a list")
    blobs = m.get("blobs")
    if not isinstance(blobs, list):
        raise _refuse("/blobs", "must be a list")
    for i, b in enumerate(blobs):
        ok = isinstance(b, dict) and b.get("scope") in ("static", "record") and _is_int(b.get("writer"))
        if not ok or (b["scope"] == "record") != _is_int(b.get("record")) or not isinstance(b.get("key"), str):
            raise _refuse(f"/blobs/{i}", "must be {scope, record?, writer, key}")
    if m["time_mode"] == "indexed":
        records = m.get("records")
        entries = records.get("entries") if isinstance(records, dict) else None
        if not isinstance(entries, list):
            raise _refuse("/records/entries", "an indexed manifest lists one entry per record")
        for i, e in enumerate(entries):
            if not (
                isinstance(e, dict)
                and isinstance(e.get("committed"), bool)
                and _is_number(e.get("t"))
                and _is_int(e.get("generation"))
            ):
                raise _refuse(f"/records/entries/{i}", "must be {committed, t, generation}")
        if len(entries) != m["n_records"]:
            raise _refuse("/records/entries", f"{len(entries)} entries for n_records {m['n_records']}")
    elif "records" in m:
        raise _refuse("/records", "an append manifest has no records")
    return m


def _page(store: ObjectStore, list_name: str, ref: Any, at: int) -> list[Any]:
    if not (isinstance(ref, dict) and isinstance(ref.get("sha256"), str) and _is_int(ref.get("first")) and _is_int(ref.get("count"), 1)):
        raise _refuse(f"/{list_name} page ref", "must be {first, count, sha256}")
    key = f"{PAGE_PREFIX}{list_name}/{ref['sha256']}.json"
    data = store.get(key)
    if data is None:
        raise _MissingPage(key)
    if hashlib.sha256(data).hexdigest() != ref["sha256"]:
        raise CorruptStore(f"{key}: its bytes do not hash to the sha256 the manifest names")
    entries = json.loads(data)
    if ref["first"] != at or not isinstance(entries, list) or len(entries) != ref["count"]:
        raise CorruptStore(f"{key}: expected {ref['count']} entries from position {at}")
    return entries


def _resolve_list(store: ObjectStore, list_name: str, refs: Any, tail: list[Any]) -> list[Any]:
    if not isinstance(refs, list):
        raise _refuse(f"/{list_name}", "page refs must be a list")
    out: list[Any] = []
    for ref in refs:
        out += _page(store, list_name, ref, len(out))
    return out + tail


def _indexed_time_shards(entries: list[dict[str, Any]], shard_t: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for i, e in enumerate(entries):
        if not e.get("committed"):
            continue
        index = i // shard_t
        if out and out[-1]["index"] == index:
            out[-1]["t_end"] = e["t"]
            out[-1]["n"] += 1
        else:
            out.append({"index": index, "t_start": e["t"], "t_end": e["t"], "n": 1})
    return out


def _resolve(store: ObjectStore, m: Any) -> Any:
    if not isinstance(m, dict):
        return m
    records = m.get("records")
    paged_fields = "time_shard_pages" in m or (isinstance(records, dict) and ("pages" in records or "page_index" in records))
    if m.get("schema") != MANIFEST_V2_PAGED:
        if paged_fields:
            raise _refuse("/schema", f"{m.get('schema')!r} keeps every list inline: page refs belong to {MANIFEST_V2_PAGED}")
        return m
    out = dict(m)
    refs = out.pop("time_shard_pages", None)
    if refs is not None:
        out["time_shards"] = _resolve_list(store, "time_shards", refs, list(m.get("time_shards") or []))
    if isinstance(records, dict) and "page_index" in records:
        records = {**records, "pages": _resolve_list(store, "record_pages", records["page_index"], [])}
    if isinstance(records, dict) and "pages" in records:
        entries = _resolve_list(store, "records", records["pages"], list(records.get("entries") or []))
        out["records"] = {"entries": entries}
        shard = m.get("shard_shape", {}).get(m.get("time_dim"), 1)
        out["time_shards"] = _indexed_time_shards(entries, shard if _is_int(shard, 1) else 1)
    return out


def parse_manifest(data: bytes) -> Any:
    try:
        return json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise SchemaError(f"{MANIFEST_KEY}: not valid UTF-8 JSON ({exc})") from None


def read_manifest_from(store: ObjectStore) -> Manifest:
    """The manifest of `store`, its pages resolved, in the contract's spelling, checked."""
    for attempt in range(2):
        data = store.get(MANIFEST_KEY)
        if data is None:
            raise StoreError(f"no {MANIFEST_KEY} in {store.url}")
        try:
            return validate(_resolve(store, normalize_python_v1_spelling(parse_manifest(data))))
        except _MissingPage as missing:
            # A newer manifest may have landed and its owner collected the page: read it again once.
            if attempt == 1:
                raise CorruptStore(f"{missing} is missing, yet the store's manifest refers to it") from None
    raise AssertionError("unreachable")


def is_v2(m: Manifest) -> bool:
    return m["schema"] in (MANIFEST_V2, MANIFEST_V2_PAGED)


def committed_mask(m: Manifest) -> list[bool]:
    """Per time index of the store's time axis in this manifest: whether the record is committed."""
    if is_v2(m) and m["time_mode"] == "indexed":
        return [bool(e["committed"]) for e in m["records"]["entries"]]
    return [True] * m["n_records"]


def committed_indices(m: Manifest) -> list[int]:
    return [i for i, c in enumerate(committed_mask(m)) if c]
