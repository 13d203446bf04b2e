"""Each shard read comes from one version (consistent-reads.md): a local pin keeps its descriptor across a
rename-replace; an S3 pin sends If-Match and a replaced object is ObjectChanged; read_consistent starts
over, and gives up with TornRead; and a live test reads while a TS owner and 3 contributors commit."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import xarray as xr
from conftest import TS_STORE, REPO, Backend, Versitygw, generated
from zarr.abc.store import RangeByteRequest, SuffixByteRequest

import zarr_stream as zs
from zarr_stream.storage import PinnedZarrStore


def replace(path: Path, data: bytes) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def test_local_pin_reads_one_version_across_a_rename_replace(tmp_path: Path) -> None:
    store = zs.LocalStore(tmp_path)
    (tmp_path / "obj").write_bytes(b"old-version-bytes")
    pin = store.pin("obj")
    try:
        assert pin.read(SuffixByteRequest(5)) == b"bytes"
        replace(tmp_path / "obj", b"NEW-VERSION-BYTES-LONGER")
        assert pin.read(RangeByteRequest(0, 11)) == b"old-version"
    finally:
        pin.close()
    assert store.get("obj") == b"NEW-VERSION-BYTES-LONGER"
    missing = store.pin("nope")
    assert missing.read(None) is None


def test_s3_pin_refuses_a_replaced_object(versitygw: Versitygw) -> None:
    import boto3

    bucket = versitygw.make_bucket("zs-pin")
    client = boto3.client("s3", endpoint_url=versitygw.endpoint, region_name="us-east-1", aws_access_key_id="zs-test", aws_secret_access_key="zs-test")
    client.put_object(Bucket=bucket, Key="p/obj", Body=b"old-version-bytes")
    store = zs.open_store(f"s3://{bucket}/p", versitygw.storage_options)
    pin = store.pin("obj")
    assert pin.read(SuffixByteRequest(5)) == b"bytes"
    assert pin.read(RangeByteRequest(0, 3)) == b"old"
    client.put_object(Bucket=bucket, Key="p/obj", Body=b"NEW-VERSION-BYTES")
    with pytest.raises(zs.ObjectChanged):
        pin.read(RangeByteRequest(0, 3))
    # read_consistent starts over on a fresh pin, which sees the new version whole.
    calls = []

    def read(scope: PinnedZarrStore) -> bytes:
        first = scope._read("obj", SuffixByteRequest(5))
        if not calls:
            client.put_object(Bucket=bucket, Key="p/obj", Body=b"third-version-bytes")
        calls.append(first)
        rest = scope._read("obj", RangeByteRequest(0, 5))
        assert first is not None and rest is not None
        return rest + first

    assert store.read_consistent(read) == b"thirdbytes"
    assert len(calls) == 2

    def always_replaced(scope: PinnedZarrStore) -> bytes:
        scope._read("obj", SuffixByteRequest(2))
        client.put_object(Bucket=bucket, Key="p/obj", Body=os.urandom(8))
        return scope._read("obj", RangeByteRequest(0, 2)) or b""

    with pytest.raises(zs.TornRead):
        store.read_consistent(always_replaced)


def _live(backend: Backend, url: str, records: int) -> None:
    writer = subprocess.Popen(
        ["node", str(TS_STORE), "live", url, str(records)],
        cwd=REPO,
        env={**os.environ, **backend.env},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    seen: set[int] = set()
    reads = values = 0
    try:
        while writer.poll() is None or not seen or max(seen) < records:
            try:
                ds = xr.open_dataset(url, engine="zarr_stream", storage_options=backend.storage_options)
            except zs.StoreError:
                time.sleep(0.01)  # the owner has not created the store yet
                if writer.poll() not in (None, 0):
                    break
                continue
            n = ds.sizes["time"]
            seen.add(n)
            if n == 0:
                continue
            assert bool(ds.committed.all())
            # The newest record and a whole-history read of two variables, every value checked.
            for var in ("temperature", "count"):
                got = ds[var].values
                want = np.stack([generated(var, r) for r in range(n)])
                assert np.array_equal(got, want), f"{var}: a record of the {n} committed differs"
                values += got.size
                reads += n
            last = zs.read_record(url, "humidity", n - 1, storage_options=backend.storage_options)
            assert np.array_equal(last, generated("humidity", n - 1))
            reads += 1
            if writer.poll() is not None and n == records:
                break
    finally:
        if writer.poll() is None:
            writer.kill()
        _, err = writer.communicate()
    assert writer.returncode == 0, err
    assert max(seen) == records
    # Reads overlapped commits: the committed count grew under the reader.
    assert len(seen) >= records // 4, sorted(seen)
    print(f"# live {backend.name}: {reads} record reads, {values} values, committed counts seen {len(seen)}")


def test_live_reads_see_committed_records_only_fsstore(local_backend: Backend, tmp_path: Path) -> None:
    _live(local_backend, str(tmp_path / "live"), 24)


def test_live_reads_see_committed_records_only_versitygw(s3_backend: Backend) -> None:
    _live(s3_backend, f"{s3_backend.base}-live", 16)


def test_opens_under_python_W_error(local_backend: Backend) -> None:
    """A fresh interpreter with every warning an error opens, loads and reads both stores."""
    code = (
        "import sys, xarray as xr, zarr_stream as zs\n"
        "for url in sys.argv[1:]:\n"
        "    ds = xr.open_dataset(url, engine='zarr_stream').load()\n"
        "    ds2 = xr.open_dataset(url, engine='zarr_stream', drop_uncommitted=True, chunks=None)\n"
        "    ds2.temperature[-1].values\n"
        "    zs.read_static(url, 'orog'); zs.read_blob(url, 'static', 0, 'seed.bin')\n"
        "print('ok')\n"
    )
    urls = [local_backend.store("append"), local_backend.store("indexed")]
    res = subprocess.run([sys.executable, "-W", "error", "-c", code, *urls], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "ok"
    assert res.stderr == ""
