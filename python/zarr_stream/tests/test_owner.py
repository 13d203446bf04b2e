"""The Python owner on its own (zarr_stream.writer.Owner with a Python contributor): refusals before any
I/O, close (its own token committed with the others'), invalidate_statics, and the CommitError reasons the
TypeScript owner gives. The corpus runs it with TypeScript contributors (packages/conformance,
test/mixed-owner.test.ts)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import zarr_stream as zs
from zarr_stream.writer import Contributor, Owner

SCHEMA: dict[str, Any] = {
    "dims": [["time", 0], ["lat", 4], ["lon", 3]],
    "time_dim": "time",
    "time_mode": "append",
    "vars": [
        {"name": "temperature", "dims": ["time", "lat", "lon"], "dtype": "float64"},
        {"name": "total", "dims": ["time"], "dtype": "int64"},
    ],
    "statics": [{"name": "area", "dims": ["lat", "lon"], "dtype": "float32"}],
    "chunk_shape": {"time": 1, "lat": 1, "lon": 3},
    "shard_shape": {"time": 2, "lat": 2, "lon": 3},
    "profile": "diagnostic",
}
REGIONS = [{"lat": (0, 2)}, {"lat": (2, 4)}]


def temperature(r: int, writer: int) -> np.ndarray:
    lat = np.arange(*REGIONS[writer]["lat"]).reshape(-1, 1)
    return (1000.0 * r + 10 * lat + np.arange(3).reshape(1, -1)).astype("float64")


def area(writer: int, shift: float = 0.0) -> np.ndarray:
    lat = np.arange(*REGIONS[writer]["lat"]).reshape(-1, 1)
    return (lat + np.arange(3).reshape(1, -1) / 4 + shift).astype("float32")


def both(url: Path) -> tuple[Owner, Contributor]:
    owner = Owner.create(url, SCHEMA, 2, REGIONS[0])
    return owner, Contributor.join(url, 1, REGIONS[1])


def write(owner: Owner, contributor: Contributor, r: int) -> None:
    owner.write_record(3600.0 * r, {"temperature": temperature(r, 0), "total": np.int64(r)})
    contributor.write_record(3600.0 * r, {"temperature": temperature(r, 1)})


def test_create_refuses_bad_arguments_before_writing_anything(tmp_path: Path) -> None:
    url = tmp_path / "store"
    with pytest.raises(zs.RegionNotShardAligned):
        Owner.create(url, SCHEMA, 2, {"lat": (1, 3)})
    with pytest.raises(zs.SchemaError, match="non-time"):
        Owner.create(url, SCHEMA, 2, {"time": (0, 2)})
    with pytest.raises(zs.SchemaError, match="non-time"):
        Owner.create(url, SCHEMA, 2, {"depth": (0, 1)})
    with pytest.raises(zs.SchemaError):
        Owner.create(url, SCHEMA, 0, REGIONS[0])
    assert not url.exists()
    url.mkdir()
    with pytest.raises(zs.RegionNotShardAligned):
        Owner.create(url, SCHEMA, 2, {"lat": (0, 3)})
    assert list(url.iterdir()) == []


def test_close_commits_the_owners_token_with_the_others_and_survives_a_refusal(tmp_path: Path) -> None:
    url = tmp_path / "store"
    owner, contributor = both(url)
    for r in range(3):
        write(owner, contributor, r)
    token = contributor.flush()
    before = (url / "output_manifest.json").read_bytes()
    with pytest.raises(zs.CommitError) as refused:
        owner.close([])  # writer 1's token missing
    assert refused.value.reason == "writers"
    assert (url / "output_manifest.json").read_bytes() == before
    m = owner.close([token])  # the same close token, retried with the right ones
    assert m["commit_seq"] == 1 and m["n_records"] == 3
    assert np.array_equal(zs.read_record(url, "temperature", 2, {"lat": (2, 4)}), temperature(2, 1))
    assert zs.read_record(url, "total", 1) == 1
    with pytest.raises(zs.ProtocolError, match="closed"):
        owner.write_record(4 * 3600.0, {"temperature": temperature(4, 0), "total": np.int64(4)})
    with pytest.raises(zs.ProtocolError, match="closed"):
        owner.close([])


def test_errors_are_named_as_the_typescript_writer_names_them(tmp_path: Path) -> None:
    url = tmp_path / "store"
    owner, contributor = both(url)
    with pytest.raises(zs.ProtocolError, match="region dims"):
        Contributor.join(url, 1, {"lon": (0, 3)})  # the store's region dims are [lat]
    with pytest.raises(zs.SchemaError, match="non-time"):
        Contributor.join(url, 1, {"depth": (0, 1)})
    with pytest.raises(zs.SchemaError, match="lack temperature"):
        contributor.write_record(0.0, {})
    with pytest.raises(zs.ProtocolError, match="replicated"):
        contributor.write_record(0.0, {"temperature": temperature(0, 1), "total": np.int64(0)})
    write(owner, contributor, 1)
    with pytest.raises(zs.SchemaError, match="not after"):
        owner.write_record(3600.0, {"temperature": temperature(1, 0), "total": np.int64(1)})
    with pytest.raises(zs.SchemaError, match="not after"):
        contributor.write_record(0.0, {"temperature": temperature(0, 1)})


def test_invalidate_statics_lets_a_static_be_written_again(tmp_path: Path) -> None:
    url = tmp_path / "store"
    owner, contributor = both(url)
    owner.write_static("area", area(0))
    contributor.write_static("area", area(1))
    owner.commit([owner.flush(), contributor.flush()])
    assert zs.read_output_manifest(url)["statics_committed"] == ["area"]
    with pytest.raises(zs.ProtocolError, match="invalidate"):
        owner.write_static("area", area(0, 100))
    with pytest.raises(zs.SchemaError, match="unknown static"):
        owner.invalidate_statics(["nope"])
    with pytest.raises(zs.SchemaError):
        owner.invalidate_statics("area")  # a name, not a list of names
    assert zs.read_output_manifest(url)["commit_seq"] == 1
    with pytest.raises(zs.ProtocolError, match="invalidate"):  # its token was committed since its join
        contributor.write_static("area", area(1, 100))
    m = owner.invalidate_statics(["area"])
    assert m["commit_seq"] == 2 and m["statics_committed"] == []
    with pytest.raises(zs.NotCommitted):
        zs.read_static(url, "area")
    owner.write_static("area", area(0, 100))
    contributor.write_static("area", area(1, 100))  # its view re-read: invalidated since
    m = owner.commit([owner.flush(), contributor.flush()])
    assert m["commit_seq"] == 3 and m["statics_committed"] == ["area"]
    assert np.array_equal(zs.read_static(url, "area"), np.concatenate([area(0, 100), area(1, 100)]))


def test_commit_errors_carry_the_typescript_reason(tmp_path: Path) -> None:
    url = tmp_path / "store"
    owner, contributor = both(url)
    write(owner, contributor, 0)
    own, other = owner.flush(), contributor.flush()
    bad = {
        "writers": [own, own],
        "fingerprint": [own, {**other, "fingerprint": "sha256:" + "0" * 64}],
        "region-dims": [own, {**other, "region": {"lon": [0, 3]}}],
        "alignment": [own, {**other, "region": {"lat": [1, 4]}}],
        "overlap": [own, {**other, "region": {"lat": [0, 4]}}],
        "records": [own, {**other, "records": []}],
        "statics": [own, {**other, "statics": ["area"]}],
    }
    before = (url / "output_manifest.json").read_bytes()
    for reason, tokens in bad.items():
        with pytest.raises(zs.CommitError) as refused:
            owner.commit(json.loads(json.dumps(tokens)))
        assert refused.value.reason == reason
        assert (url / "output_manifest.json").read_bytes() == before, reason
    assert owner.commit([own, other])["commit_seq"] == 1
