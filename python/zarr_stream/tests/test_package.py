"""The README's example runs as written, and the package builds as a typed wheel with the engine's entry point."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import xarray as xr
from conftest import Backend

PACKAGE = Path(__file__).resolve().parents[1]


def readme_example() -> str:
    text = (PACKAGE / "README.md").read_text()
    blocks = re.findall(r"## Example\n.*?```python\n(.*?)```", text, flags=re.S)
    assert len(blocks) == 1
    return blocks[0]


def test_readme_example_runs(local_backend: Backend) -> None:
    store = local_backend.store("indexed")
    res = subprocess.run(
        [sys.executable, "-W", "error", "-c", readme_example()],
        env={"ZARR_STREAM_EXAMPLE_STORE": store, "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert res.returncode == 0, res.stderr
    out = res.stdout.splitlines()
    assert out[0] == "earthsciio/output-manifest/v2 commit 3 committed records: 7"
    assert out[1] == "temperature (4, 6) float64"
    assert out[2].startswith("not committed: record 12 of ")
    assert out[3] == "{'time': 12, 'lat': 8, 'lon': 6} committed: 7"


def test_builds_a_typed_wheel_with_the_xarray_entry_point(tmp_path: Path) -> None:
    # From a copy of the sources: a build leaves build/ beside them, which would change the suite's inputs.
    src = tmp_path / "src-copy"
    shutil.copytree(PACKAGE, src, ignore=shutil.ignore_patterns("tests", "test-output", "build", "*.egg-info", "__pycache__"))
    res = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--disable-pip-version-check", "-q", "-w", str(tmp_path), str(src)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert res.returncode == 0, res.stderr
    (wheel,) = tmp_path.glob("zarr_stream-0.1.0-py3-none-any.whl")
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        assert "zarr_stream/py.typed" in names
        for mod in ("__init__", "errors", "manifest", "readback", "storage", "xarray_backend"):
            assert f"zarr_stream/{mod}.py" in names
        assert not any(n.startswith("tests/") for n in names)
        entry = z.read("zarr_stream-0.1.0.dist-info/entry_points.txt").decode()
        assert "[xarray.backends]" in entry
        assert "zarr_stream = zarr_stream.xarray_backend:ZarrStreamBackendEntrypoint" in entry


def test_engine_is_registered() -> None:
    engines = xr.backends.list_engines()
    assert "zarr_stream" in engines
    assert type(engines["zarr_stream"]).__name__ == "ZarrStreamBackendEntrypoint"
