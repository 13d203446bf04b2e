"""Reads output_manifest.json with its pages resolved (packages/spec/docs/manifest-pages.md), in plain Python.

Only a manifest labelled zarr-stream/output-manifest/v2-paged has pages; under the seed's labels every list
is inline, and page refs there are refused. A paged manifest whose list outgrew a page keeps that list in immutable pages under .zarr-stream/manifest/:
indexed stores page records.entries whole (time_shards is then derived from the entries; with more
record pages than an index page holds, their refs are themselves paged under records.page_index), append
stores page time_shards (the manifest keeps the tail). Each page is checked against the sha256 its ref names.
A page found missing may have been collected after a newer manifest landed, so the manifest is read
again once before the store is called corrupt.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

PAGE_PREFIX = ".zarr-stream/manifest/"
MANIFEST_V2 = "earthsciio/output-manifest/v2"
MANIFEST_V2_PAGED = "zarr-stream/output-manifest/v2-paged"


class CorruptStore(Exception):
    """A page the manifest refers to is missing, or its bytes are not the ones the manifest names."""


class _MissingPage(Exception):
    pass


def _page(root: Path, list_name: str, ref: dict[str, Any], at: int) -> list[dict[str, Any]]:
    key = f"{PAGE_PREFIX}{list_name}/{ref['sha256']}.json"
    path = root / key
    if not path.is_file():
        raise _MissingPage(key)
    data = path.read_bytes()
    if hashlib.sha256(data).hexdigest() != ref["sha256"]:
        raise CorruptStore(f"{key}: its bytes do not hash to the sha256 the manifest names")
    entries = json.loads(data)
    if ref["first"] != at or not isinstance(entries, list) or len(entries) != ref["count"]:
        raise CorruptStore(f"{key}: expected {ref['count']} entries from position {at}")
    return entries


def _resolve_list(root: Path, list_name: str, refs: list[dict[str, Any]], tail: list[Any]) -> list[Any]:
    out: list[Any] = []
    for ref in refs:
        out += _page(root, list_name, ref, len(out))
    return out + tail


def indexed_time_shards(entries: list[dict[str, Any]], shard_t: int) -> list[dict[str, Any]]:
    """One summary per time shard holding a committed record (docs/output-manifest-v2.md)."""
    out: list[dict[str, Any]] = []
    for i, e in enumerate(entries):
        if not e["committed"]:
            continue
        index = i // shard_t
        if out and out[-1]["index"] == index:
            out[-1]["t_end"] = e["t"]
            out[-1]["n"] += 1
        else:
            out.append({"index": index, "t_start": e["t"], "t_end": e["t"], "n": 1})
    return out


def resolve(root: Path, m: dict[str, Any]) -> dict[str, Any]:
    """The manifest `m` read from `root` with its paged list resolved (its label kept); an inline one as it is."""
    records = m.get("records")
    paged_fields = "time_shard_pages" in m or (isinstance(records, dict) and ("pages" in records or "page_index" in records))
    if m.get("schema") != MANIFEST_V2_PAGED:
        if paged_fields:
            raise ValueError(f"{m.get('schema')!r} keeps every list inline: page refs belong to {MANIFEST_V2_PAGED}")
        return m
    out = dict(m)
    refs = out.pop("time_shard_pages", None)
    if refs is not None:
        out["time_shards"] = _resolve_list(root, "time_shards", refs, m["time_shards"])
    records = m.get("records")
    if isinstance(records, dict) and "page_index" in records:
        # More record pages than an index page holds: their refs live in index pages.
        records = {**records, "pages": _resolve_list(root, "record_pages", records["page_index"], [])}
    if isinstance(records, dict) and "pages" in records:
        entries = _resolve_list(root, "records", records["pages"], records["entries"])
        out["records"] = {"entries": entries}
        out["time_shards"] = indexed_time_shards(entries, m["shard_shape"][m["time_dim"]])
    return out


def read_manifest(root: Path) -> dict[str, Any]:
    """output_manifest.json of the store at `root`, its pages resolved."""
    path = root / "output_manifest.json"
    try:
        return resolve(root, json.loads(path.read_text()))
    except _MissingPage:
        pass
    try:
        return resolve(root, json.loads(path.read_text()))
    except _MissingPage as missing:
        raise CorruptStore(f"{missing} is missing, yet the store's manifest refers to it") from None
