"""Stores written by the TypeScript writer (ts_store.mjs, 4 writers) on a local directory and on versitygw."""

from __future__ import annotations

import base64
import json
import os
import shutil
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
TS_STORE = HERE / "ts_store.mjs"
VERSITYGW = REPO / ".tools" / "gopath" / "bin" / "versitygw"
CREDENTIALS = {"AWS_ACCESS_KEY_ID": "zs-test", "AWS_SECRET_ACCESS_KEY": "zs-test"}

# The stores every backend gets: (name, ts_store.mjs write arguments).
STORES = {
    "append": ["append", "10", "--ahead", "3"],
    "indexed": ["indexed", "12", "--uncommitted", "3"],
}


def ts(*args: str, env: dict[str, str] | None = None, timeout: float = 120) -> str:
    """Runs ts_store.mjs; its stdout."""
    res = subprocess.run(
        ["node", str(TS_STORE), *args],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=timeout,
        cwd=REPO,
    )
    if res.returncode != 0:
        raise RuntimeError(f"ts_store.mjs {' '.join(args)} failed ({res.returncode}):\n{res.stderr}")
    return res.stdout


def ts_dump(url: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    """What our TypeScript reader reads from the store (earthsciio/write-v2-dump/v1)."""
    return json.loads(ts("dump", url, env=env))


def dump_array(a: dict[str, Any]) -> np.ndarray:
    assert "error" not in a, a
    dt = np.dtype(a["dtype"]).newbyteorder("<")
    return np.frombuffer(base64.b64decode(a["data_b64"]), dtype=dt).reshape(a["shape"])


P = [3, 5, 11, 17, 23]
SEEDS = {"temperature": 1, "humidity": 2, "count": 3, "big": 4, "flag": 5}
DTYPES = {"temperature": "float64", "humidity": "float32", "count": "int32", "big": "int64", "flag": "uint8"}
SHAPES = {"temperature": (8, 6), "humidity": (8, 6), "count": (8,), "big": (8, 6), "flag": ()}


def generated(var: str, r: int) -> np.ndarray:
    """Seed 000 §10's generator values of record r of `var` over its full extent (what ts_store.mjs writes)."""
    shape = SHAPES[var]
    base = np.full(shape, SEEDS[var] + 13 * r, dtype=np.int64)
    for j, n in enumerate(shape):
        idx = np.arange(n).reshape([n if k == j else 1 for k in range(len(shape))])
        base = base + (idx + 1) * P[j]
    dtype = DTYPES[var]
    if dtype.startswith("float"):
        return (base + 0.25).astype(dtype)
    if dtype == "uint8":
        return (base % 251).astype(dtype)
    return base.astype(dtype)


class LineProcess:
    """A writer in a process of its own that answers each JSON line on stdin with one on stdout."""

    def __init__(self, argv: list[str], who: str, cwd: Path | None = None) -> None:
        self.who = who
        self.proc = subprocess.Popen(argv, cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def send(self, req: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(req) + "\n")
        self.proc.stdin.flush()

    def read(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"the {self.who} exited: {self.proc.stderr.read() if self.proc.stderr else ''}")
        return json.loads(line)

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        assert self.proc.wait(30) == 0, self.proc.stderr.read() if self.proc.stderr else ""
        for f in (self.proc.stdout, self.proc.stderr):
            if f is not None:
                f.close()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Versitygw:
    """Versity's S3 gateway over a temporary directory (built by scripts/setup-test-env.sh)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        port = _free_port()
        self.endpoint = f"http://127.0.0.1:{port}"
        env = {**os.environ, "ROOT_ACCESS_KEY": "zs-test", "ROOT_SECRET_KEY": "zs-test"}
        args = [str(VERSITYGW), "--port", f"127.0.0.1:{port}", "--access", "zs-test", "--secret", "zs-test", "posix", str(root)]
        self.log = root.parent / f"{root.name}.log"
        with self.log.open("wb") as log:
            self.proc = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=log)
        deadline = time.monotonic() + 20
        while True:
            try:
                with urllib.request.urlopen(self.endpoint + "/", timeout=1):
                    break
            except urllib.error.HTTPError as answer:
                answer.close()
                break  # any answer (403 to an unsigned request) means the port is served
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"versitygw did not start: {self.log.read_text()}") from None
                time.sleep(0.1)
        self.env = {
            "AWS_ENDPOINT_URL_S3": self.endpoint,
            "AWS_REGION": "us-east-1",
            "AWS_S3_FORCE_PATH_STYLE": "true",
            **CREDENTIALS,
        }

    def make_bucket(self, name: str) -> str:
        import boto3

        client = boto3.client(
            "s3",
            endpoint_url=self.endpoint,
            region_name="us-east-1",
            aws_access_key_id="zs-test",
            aws_secret_access_key="zs-test",
        )
        client.create_bucket(Bucket=name)
        return name

    @property
    def storage_options(self) -> dict[str, str]:
        return {"endpoint_url": self.endpoint, "key": "zs-test", "secret": "zs-test", "region": "us-east-1"}

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture(scope="session")
def versitygw(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Versitygw]:
    if not VERSITYGW.exists():
        if os.environ.get("CI"):
            pytest.fail(f"{VERSITYGW} is missing: run bash scripts/setup-test-env.sh")
        pytest.skip(f"{VERSITYGW} is missing (bash scripts/setup-test-env.sh builds it)")
    gw = Versitygw(tmp_path_factory.mktemp("versitygw"))
    try:
        yield gw
    finally:
        gw.stop()


class Backend:
    """Where a test's stores live: a URL per store, the env the TS side needs, the options Python needs."""

    def __init__(self, name: str, base: str, env: dict[str, str], storage_options: dict[str, str] | None) -> None:
        self.name = name
        self.base = base
        self.env = env
        self.storage_options = storage_options
        self.written: dict[str, str] = {}

    def url(self, store: str) -> str:
        return f"{self.base}/{store}"

    def store(self, store: str) -> str:
        """The URL of `store`, written by the TS writer on first use."""
        if store not in self.written:
            ts("write", self.url(store), *STORES[store], env=self.env)
            self.written[store] = self.url(store)
        return self.written[store]


@pytest.fixture(scope="session")
def local_backend(tmp_path_factory: pytest.TempPathFactory) -> Backend:
    return Backend("FsStore", str(tmp_path_factory.mktemp("stores")), {}, None)


@pytest.fixture(scope="session")
def s3_backend(versitygw: Versitygw) -> Backend:
    bucket = versitygw.make_bucket("zs-python")
    return Backend("versitygw", f"s3://{bucket}/stores", versitygw.env, versitygw.storage_options)


@pytest.fixture(scope="session", params=["FsStore", "versitygw"])
def backend(request: pytest.FixtureRequest) -> Backend:
    return request.getfixturevalue("local_backend" if request.param == "FsStore" else "s3_backend")


@pytest.fixture
def copy_store(local_backend: Backend, tmp_path: Path):  # noqa: ANN201
    """A private copy of a local store, for tests that change it."""

    def make(name: str) -> Path:
        dst = tmp_path / name
        shutil.copytree(local_backend.store(name), dst)
        return dst

    return make
