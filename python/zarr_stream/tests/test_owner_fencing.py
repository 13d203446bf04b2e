"""The Python owner against a second one and against crashes (zarr_stream.local_writes): of two creators
racing on one store exactly one creates it; a commit over a manifest another owner replaced is refused
with nothing written, and fences this owner; objects land whole under reserved staging names; FsStore's
lock file is honoured and a stale one broken."""

from __future__ import annotations

import json
import multiprocessing
import os
import threading
import time
from pathlib import Path

import pytest

import zarr_stream as zs
from zarr_stream.local_writes import LOCK_STALE_S, TEMP_PREFIX, put, put_if_stamp, stamp_of
from zarr_stream import fencing
from zarr_stream.writer import Owner

from test_owner import REGIONS, SCHEMA, both, write


def _create(url: str, attrs: str, ready, go, out) -> None:
    """One creator of the race: waits for the start, then reports "created" or the error's name."""
    ready.set()
    go.wait()
    try:
        Owner.create(url, {**SCHEMA, "attrs": {"who": attrs}}, 2, REGIONS[0])
        out.put((attrs, "created"))
    except zs.ZarrStreamError as e:
        out.put((attrs, type(e).__name__))


def test_of_creators_racing_on_one_store_exactly_one_creates_it(tmp_path: Path) -> None:
    ctx = multiprocessing.get_context("spawn")
    for round_ in range(3):
        url = tmp_path / f"store-{round_}"
        go, out = ctx.Event(), ctx.Queue()
        readies = [ctx.Event() for _ in range(4)]
        procs = [ctx.Process(target=_create, args=(str(url), f"w{i}", readies[i], go, out)) for i in range(4)]
        for p in procs:
            p.start()
        for r in readies:
            assert r.wait(60)
        go.set()
        results = dict(out.get(timeout=120) for _ in procs)
        for p in procs:
            p.join(60)
        winners = [w for w, r in results.items() if r == "created"]
        assert len(winners) == 1, results
        assert all(r == "StoreExists" for w, r in results.items() if w not in winners), results
        # The store is the winner's throughout: its group, and a manifest that a reader accepts.
        assert json.loads((url / "zarr.json").read_bytes())["attributes"] == {"who": winners[0]}
        assert zs.read_output_manifest(url)["commit_seq"] == 0
        assert not [p.name for p in url.rglob("*") if p.name.startswith(TEMP_PREFIX)]


def test_a_commit_over_another_owners_manifest_is_refused_and_fences_this_owner(tmp_path: Path) -> None:
    url = tmp_path / "store"
    owner, contributor = both(url)
    write(owner, contributor, 0)
    owner.commit([owner.flush(), contributor.flush()])
    # Another owner of the same store (a job started twice) commits in between: its manifest stays.
    theirs = json.loads((url / "output_manifest.json").read_bytes())
    theirs["commit_seq"] += 1
    put(url, "output_manifest.json", (json.dumps(theirs, indent=2) + "\n").encode())
    before = (url / "output_manifest.json").read_bytes()
    shapes = {p: p.read_bytes() for p in url.glob("*/zarr.json")}
    write(owner, contributor, 1)
    tokens = [owner.flush(), contributor.flush()]
    with pytest.raises(zs.CommitError) as refused:
        owner.commit(tokens)
    assert refused.value.reason == "concurrent-owner"
    assert "another owner" in str(refused.value)
    assert (url / "output_manifest.json").read_bytes() == before
    # Refused before any shape grew: a plain Zarr reader sees no record that no commit published.
    assert {p: p.read_bytes() for p in url.glob("*/zarr.json")} == shapes
    # Fenced: it writes nothing more, whatever it is asked.
    with pytest.raises(zs.CommitError, match="another owner"):
        owner.commit(tokens)
    with pytest.raises(zs.CommitError, match="another owner"):
        owner.invalidate_statics([])
    assert (url / "output_manifest.json").read_bytes() == before


def test_an_owner_taken_over_after_its_checks_changes_no_shape(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Another handle takes writer 0's lease and rewrites a time-axis zarr.json after this owner's lease and
    manifest checks and before its shape writes: the shape write is conditional on the version this owner
    wrote, so it is Fenced and the other handle's zarr.json stays."""
    url = tmp_path / "store"
    owner, contributor = both(url)
    write(owner, contributor, 0)
    owner.commit([owner.flush(), contributor.flush()])
    write(owner, contributor, 1)
    tokens = [owner.flush(), contributor.flush()]
    manifest = (url / "output_manifest.json").read_bytes()
    theirs: dict[str, bytes] = {}
    checked = Owner._assert_manifest_unchanged

    def then_taken_over(self: Owner) -> None:
        checked(self)
        other = fencing.FencedWrites(url)
        other.take_lease(0, create=False)
        doc = (url / "time" / "zarr.json").read_bytes()
        theirs["time"] = doc + b"\n"  # a resumed owner's rewrite: the same document, other bytes
        put(url, "time/zarr.json", theirs["time"])

    monkeypatch.setattr(Owner, "_assert_manifest_unchanged", then_taken_over)
    with pytest.raises(zs.Fenced):
        owner.commit(tokens)
    assert (url / "time" / "zarr.json").read_bytes() == theirs["time"]
    assert (url / "output_manifest.json").read_bytes() == manifest


def test_the_owner_commits_on_after_its_own_writes_and_a_reader_sees_each(tmp_path: Path) -> None:
    url = tmp_path / "store"
    owner, contributor = both(url)
    for r in range(3):
        write(owner, contributor, r)
        owner.commit([owner.flush(), contributor.flush()])
        assert zs.read_output_manifest(url)["n_records"] == r + 1
    assert not [p.name for p in url.rglob("*") if p.name.startswith(TEMP_PREFIX)]


def test_put_if_stamp_waits_for_a_held_lock_and_breaks_a_stale_one(tmp_path: Path) -> None:
    put(tmp_path, "obj", b"one")
    v1 = stamp_of(tmp_path / "obj")
    lock = tmp_path / f"{TEMP_PREFIX}lock-obj"
    # A stale lock (a holder that died): broken, and the write goes through.
    lock.write_text("12345 long ago\n")
    old = time.time() - LOCK_STALE_S - 5
    os.utime(lock, (old, old))
    v2 = put_if_stamp(tmp_path, "obj", b"two", v1)
    assert v2 is not None and v2 != v1 and stamp_of(tmp_path / "obj") == v2
    assert (tmp_path / "obj").read_bytes() == b"two"
    assert not lock.exists()
    # A stamp that is not the object's: refused, the object unchanged, no staging file left.
    assert put_if_stamp(tmp_path, "obj", b"three", v1) is None
    assert (tmp_path / "obj").read_bytes() == b"two"
    # A fresh lock (a live holder) is waited for: the write lands only once it is released.
    lock.write_text(f"{os.getpid()} now\n")
    release = threading.Timer(0.3, lock.unlink)
    release.start()
    t0 = time.monotonic()
    assert put_if_stamp(tmp_path, "obj", b"four", v2) is not None
    assert time.monotonic() - t0 >= 0.25
    release.join()
    assert (tmp_path / "obj").read_bytes() == b"four"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["obj"]


def test_a_new_version_never_carries_the_old_stamp(tmp_path: Path) -> None:
    # Same size, written within one timestamp tick, possibly on a reused inode: the stamp still moves.
    put(tmp_path, "obj", b"aaaa")
    stamp = stamp_of(tmp_path / "obj")
    for i in range(50):
        new = put_if_stamp(tmp_path, "obj", b"bbbb" if i % 2 == 0 else b"aaaa", stamp)
        assert new is not None and new != stamp
        stamp = new
