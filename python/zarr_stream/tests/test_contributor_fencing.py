"""A Python contributor started twice (fencing.md): the handle that joined last goes on, the older one is
Fenced at its next write, its tokens are refused by the owner (CommitError "stale-token"), and every
committed record reads what the handle whose token committed it wrote. The duplicate runs as separate OS
processes (py_contributor.py), as a job submitted twice does."""

from __future__ import annotations

import json
import sys
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import LineProcess
from fencing_schema import REGIONS, SCHEMA, values

import zarr_stream as zs
from zarr_stream import fencing
from zarr_stream.writer import Contributor, Owner

HERE = Path(__file__).resolve().parent


class Proc(LineProcess):
    """py_contributor.py: one contributor handle in a process of its own."""

    def __init__(self, url: Path, writer: int) -> None:
        super().__init__([sys.executable, str(HERE / "py_contributor.py"), str(url), str(writer)], "contributor")

    def ask(self, **req: Any) -> dict[str, Any]:
        self.send(req)
        return self.read()

    def ok(self, **req: Any) -> dict[str, Any]:
        reply = self.ask(**req)
        assert reply["ok"] is True, reply
        return reply


def owner_writes(owner: Owner, rs: range) -> dict[str, Any]:
    for r in rs:
        owner.write_record(3600.0 * r, {"temperature": values(r, 0, "owner"), "total": np.int64(r)})
    return owner.flush()


def committed_values(url: Path) -> list[np.ndarray]:
    m = zs.read_output_manifest(url)
    return [zs.read_record(url, "temperature", i, REGIONS[1], manifest=m) for i in range(m["n_records"])]


def test_a_zombie_contributor_process_is_fenced_and_committed_records_keep_the_live_handles_values(tmp_path: Path) -> None:
    """Zombie A joined at n=0 and committed records 0..1; replacement B joined (same writer id) and committed
    records 2..3 in the same time shard; A wakes and writes record 2 over its stale view of that shard."""
    url = tmp_path / "store"
    owner = Owner.create(url, SCHEMA, 2, REGIONS[0])
    a, b = Proc(url, 1), Proc(url, 1)
    try:
        a.ok(op="join")
        for r in (0, 1):
            a.ok(op="write", r=r, tag="A")
        owner.commit([owner_writes(owner, range(2)), a.ok(op="flush")["token"]])
        b.ok(op="join")
        for r in (2, 3):
            b.ok(op="write", r=r, tag="B")
        owner.commit([owner_writes(owner, range(2, 4)), b.ok(op="flush")["token"]])
        expected = [values(0, 1, "A"), values(1, 1, "A"), values(2, 1, "B"), values(3, 1, "B")]
        # The zombie's view is n=2: its next record is 2, in time shard 0, which B rewrote since.
        assert a.ask(op="write", r=2, tag="A") == {"ok": True, "index": 2}
        zombie = a.ask(op="flush")
        got = committed_values(url)
        assert len(got) == 4
        for i, (g, e) in enumerate(zip(got, expected, strict=True)):
            assert np.array_equal(g, e), f"committed record {i} reads {g.tolist()}, written {e.tolist()}"
        assert zombie["ok"] is False and zombie["error"]["name"] == "Fenced", zombie
        # Fenced for good: every later call that touches the store is refused, and writes nothing.
        assert a.ask(op="blob", key="late.bin")["error"]["name"] == "Fenced"
        assert not (url / "blobs").exists()
        # The live handle goes on: record 4 commits, the earlier four unchanged.
        b.ok(op="write", r=4, tag="B")
        owner.commit([owner_writes(owner, range(4, 5)), b.ok(op="flush")["token"]])
        got = committed_values(url)
        for i, (g, e) in enumerate(zip(got, [*expected, values(4, 1, "B")], strict=True)):
            assert np.array_equal(g, e), f"committed record {i} reads {g.tolist()}, written {e.tolist()}"
    finally:
        a.close()
        b.close()


def test_a_zombie_writing_before_the_replacements_commit_is_fenced_and_its_token_refused(tmp_path: Path) -> None:
    """Both handles write record 0 (different values); the zombie writes again after the replacement
    flushed: its flush is Fenced, and the token it flushed before the takeover is refused as stale."""
    url = tmp_path / "store"
    owner = Owner.create(url, SCHEMA, 2, REGIONS[0])
    a, b = Proc(url, 1), Proc(url, 1)
    try:
        a.ok(op="join")
        a.ok(op="write", r=0, tag="A")
        stale = a.ok(op="flush")["token"]
        b.ok(op="join")
        b.ok(op="write", r=0, tag="B")
        b.ok(op="blob", key="b.bin")  # the live token differs from the stale one (same records, one blob more)
        live = b.ok(op="flush")["token"]
        assert live != stale and live["records"] == stale["records"]
        a.ok(op="write", r=1, tag="A")
        assert a.ask(op="flush")["error"]["name"] == "Fenced"
        own = owner_writes(owner, range(1))
        before = (url / "output_manifest.json").read_bytes()
        with pytest.raises(zs.CommitError) as refused:
            owner.commit([own, stale])
        assert refused.value.reason == "stale-token" and refused.value.writers == [1]
        assert (url / "output_manifest.json").read_bytes() == before
        m = owner.commit([own, live])
        assert m["n_records"] == 1
        assert [g.tolist() for g in committed_values(url)] == [values(0, 1, "B").tolist()]
    finally:
        a.close()
        b.close()


def test_the_python_owner_refuses_a_stale_python_token(tmp_path: Path) -> None:
    """Two handles of writer 1 in one process (the lease is the store's, not the process's): the older
    handle's token, sealed before the takeover, is CommitError "stale-token" with nothing written and the
    intent withdrawn; the newer handle's token commits."""
    url = tmp_path / "store"
    owner = Owner.create(url, SCHEMA, 2, REGIONS[0])
    old = Contributor.join(url, 1, REGIONS[1])
    for r in (0, 1):
        old.write_record(3600.0 * r, {"temperature": values(r, 1, "A")})
    stale = old.flush()
    lease = fencing.parse_lease((url / ".zarr-stream/leases/writer-1.json").read_bytes())
    assert lease is not None and lease["epoch"] == 1 and lease["sealed"] == [fencing.token_digest(stale)]
    new = Contributor.join(url, 1, REGIONS[1])
    lease = fencing.parse_lease((url / ".zarr-stream/leases/writer-1.json").read_bytes())
    assert lease is not None and lease["epoch"] == 2 and lease["sealed"] == []
    own = owner_writes(owner, range(2))
    before = (url / "output_manifest.json").read_bytes()
    with pytest.raises(zs.CommitError) as refused:
        owner.commit([own, stale])
    assert refused.value.reason == "stale-token" and refused.value.writers == [1]
    assert "epoch 2" in str(refused.value)
    assert (url / "output_manifest.json").read_bytes() == before
    assert not (url / ".zarr-stream/committing.json").exists()
    # The older handle is fenced at its next write; the newer one writes the records and commits them.
    with pytest.raises(zs.Fenced):
        old.write_blob("static", "late.bin", b"x")
    for r in (0, 1):
        new.write_record(3600.0 * r, {"temperature": values(r, 1, "B")})
    m = owner.commit([own, new.flush()])
    assert m["n_records"] == 2 and m["commit_seq"] == 1
    assert not (url / ".zarr-stream/committing.json").exists()
    for i, g in enumerate(committed_values(url)):
        assert np.array_equal(g, values(i, 1, "B")), i


def test_a_takeover_while_the_owner_commits_waits_for_that_commit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """fencing.md, "A takeover during a commit": the owner has checked the older handle's seal and not yet
    written the manifest when a newer handle joins. The newer handle waits for the owner's intent to settle,
    so it goes on from the state that commit publishes (n=2), never one commit behind."""
    url = tmp_path / "store"
    owner = Owner.create(url, SCHEMA, 2, REGIONS[0])
    old = Contributor.join(url, 1, REGIONS[1])
    for r in (0, 1):
        old.write_record(3600.0 * r, {"temperature": values(r, 1, "A")})
    tokens = [owner_writes(owner, range(2)), old.flush()]
    sealed, go = threading.Event(), threading.Event()
    apply = Owner._apply

    def held(self: Owner, *args: Any) -> None:  # between the seal check and the shapes and manifest
        sealed.set()
        assert go.wait(30)
        apply(self, *args)

    monkeypatch.setattr(Owner, "_apply", held)
    committing = threading.Thread(target=owner.commit, args=(tokens,))
    committing.start()
    assert sealed.wait(30)
    intent = json.loads((url / ".zarr-stream/committing.json").read_bytes())
    assert intent["commit_seq"] == 1 and intent["owner"] == owner.fences.lease_nonce
    # Not settled within the wait: the join names the commit in flight.
    with pytest.raises(zs.ProtocolError, match="commit_seq 1 has been in flight"):
        Contributor.join(url, 1, REGIONS[1], commit_wait_s=0.2)
    threading.Timer(0.3, go.set).start()
    t0 = time.monotonic()
    new = Contributor.join(url, 1, REGIONS[1])
    assert time.monotonic() - t0 >= 0.25
    committing.join(30)
    assert zs.read_output_manifest(url)["n_records"] == 2
    assert new.n == 2 and not (url / ".zarr-stream/committing.json").exists()
    # It goes on from there: record 2 lands beside the committed 0..1 in time shard 0.
    new.write_record(7200.0, {"temperature": values(2, 1, "B")})
    owner.commit([owner_writes(owner, range(2, 3)), new.flush()])
    assert [g.tolist() for g in committed_values(url)] == [values(0, 1, "A").tolist(), values(1, 1, "A").tolist(), values(2, 1, "B").tolist()]
    with pytest.raises(zs.Fenced):
        old.flush()


def test_a_landed_commit_removes_its_own_intent_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Between this owner's manifest write and its clean-up, an owner that resumed meanwhile announces its own
    commit (this one is then a zombie whose last write landed): that intent stays."""
    url = tmp_path / "store"
    owner = Owner.create(url, SCHEMA, 2, REGIONS[0])
    c = Contributor.join(url, 1, REGIONS[1])
    c.write_record(0.0, {"temperature": values(0, 1, "A")})
    tokens = [owner_writes(owner, range(1)), c.flush()]
    foreign = b'{"schema":"zarr-stream/commit-intent/v1","commit_seq":2,"owner":"another-owner"}\n'
    write_manifest = Owner._write_manifest

    def then_another_owner(self: Owner) -> None:
        write_manifest(self)
        (url / ".zarr-stream/committing.json").write_bytes(foreign)

    monkeypatch.setattr(Owner, "_write_manifest", then_another_owner)
    owner.commit(tokens)
    assert (url / ".zarr-stream/committing.json").read_bytes() == foreign
    monkeypatch.setattr(Owner, "_write_manifest", write_manifest)
    (url / ".zarr-stream/committing.json").unlink()
    c.write_record(3600.0, {"temperature": values(1, 1, "A")})
    owner.commit([owner_writes(owner, range(1, 2)), c.flush()])
    assert not (url / ".zarr-stream/committing.json").exists()


def test_an_intent_written_under_another_owner_lease_does_not_hold_up_a_join(tmp_path: Path) -> None:
    url = tmp_path / "store"
    Owner.create(url, SCHEMA, 2, REGIONS[0])
    stray = {"schema": "zarr-stream/commit-intent/v1", "commit_seq": 5, "owner": "a-taken-over-owner"}
    (url / ".zarr-stream/committing.json").write_text(json.dumps(stray) + "\n")
    t0 = time.monotonic()
    Contributor.join(url, 1, REGIONS[1], commit_wait_s=5)
    assert time.monotonic() - t0 < 2
