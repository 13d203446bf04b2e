"""Cross-check helpers: read and write sharded Zarr v3 arrays with zarr-python 3 and TensorStore.

Values cross the language boundary as raw little-endian C-order bytes in .bin files, so comparisons on
the TypeScript side are bitwise (NaN payloads, -0.0 and int64 extremes survive).

Usage as a batch runner (one Python start-up for many arrays):

    python zsinterop.py jobs.json      # prints a JSON list with one result per job

Jobs:
    {"op": "read",  "engine": "zarr" | "tensorstore", "root": DIR, "array": NAME, "out": FILE}
        -> {"shape": [...], "dtype": "float64", "bytes": N}; FILE holds the whole array.
    {"op": "write", "engine": "zarr" | "tensorstore", "root": DIR, "array": NAME, "input": FILE,
     "dtype": "float64", "shape": [...], "shard_shape": [...], "chunk_shape": [...], "dims": [...],
     "compressor": {"blosc": {"clevel": 5, "shuffle": "shuffle"}} | {"zstd": {"level": 5, "checksum": false}},
     "index_location": "end" | "start"}
        -> {"written": true}
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import numpy as np


def _little(dtype: str) -> np.dtype:
    return np.dtype(dtype).newbyteorder("<")


def load_bin(path: str, dtype: str, shape: list[int]) -> np.ndarray:
    data = np.fromfile(path, dtype=_little(dtype))
    return data.reshape(shape)


def save_bin(path: str, array: np.ndarray) -> int:
    raw = np.ascontiguousarray(array.astype(_little(str(array.dtype)), copy=False)).tobytes(order="C")
    Path(path).write_bytes(raw)
    return len(raw)


def read_zarr(root: str, array: str) -> np.ndarray:
    import zarr

    arr = zarr.open_array(store=root, path=array, mode="r", zarr_format=3)
    return arr[...]


def read_tensorstore(root: str, array: str) -> np.ndarray:
    import tensorstore as ts

    spec = {"driver": "zarr3", "kvstore": {"driver": "file", "path": str(Path(root) / array) + "/"}}
    store = ts.open(spec, open=True, read=True).result()
    return store.read().result()


def write_zarr(job: dict[str, Any], data: np.ndarray) -> None:
    import zarr
    from zarr.codecs import BloscCodec, ZstdCodec

    comp = job["compressor"]
    if "blosc" in comp:
        b = comp["blosc"]
        compressor = BloscCodec(cname="zstd", clevel=b["clevel"], shuffle=b.get("shuffle", "shuffle"))
    else:
        z = comp["zstd"]
        compressor = ZstdCodec(level=z["level"], checksum=z.get("checksum", False))
    if job.get("index_location", "end") != "end":
        # zarr-python only exposes index_location through an explicit ShardingCodec serializer.
        from zarr.codecs import BytesCodec, Crc32cCodec, ShardingCodec

        arr = zarr.create_array(
            store=job["root"],
            name=job["array"],
            shape=tuple(job["shape"]),
            dtype=job["dtype"],
            chunks=tuple(job["shard_shape"]),
            serializer=ShardingCodec(
                chunk_shape=tuple(job["chunk_shape"]),
                codecs=[BytesCodec(endian="little"), compressor],
                index_codecs=[BytesCodec(endian="little"), Crc32cCodec()],
                index_location=job["index_location"],
            ),
            compressors=None,
            fill_value=0,
            dimension_names=job["dims"],
            zarr_format=3,
            overwrite=True,
        )
    else:
        arr = zarr.create_array(
            store=job["root"],
            name=job["array"],
            shape=tuple(job["shape"]),
            dtype=job["dtype"],
            shards=tuple(job["shard_shape"]),
            chunks=tuple(job["chunk_shape"]),
            compressors=[compressor],
            fill_value=0,
            dimension_names=job["dims"],
            zarr_format=3,
            overwrite=True,
        )
    arr[...] = data


def write_tensorstore(job: dict[str, Any], data: np.ndarray) -> None:
    import tensorstore as ts

    comp = job["compressor"]
    if "blosc" in comp:
        b = comp["blosc"]
        inner = {
            "name": "blosc",
            "configuration": {
                "cname": "zstd",
                "clevel": b["clevel"],
                "shuffle": b.get("shuffle", "shuffle"),
                "typesize": np.dtype(job["dtype"]).itemsize,
                "blocksize": 0,
            },
        }
    else:
        z = comp["zstd"]
        inner = {"name": "zstd", "configuration": {"level": z["level"], "checksum": z.get("checksum", False)}}
    metadata = {
        "shape": job["shape"],
        "data_type": job["dtype"],
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": job["shard_shape"]}},
        "chunk_key_encoding": {"name": "default"},
        "fill_value": 0,
        "dimension_names": job["dims"],
        "codecs": [
            {
                "name": "sharding_indexed",
                "configuration": {
                    "chunk_shape": job["chunk_shape"],
                    "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, inner],
                    "index_codecs": [
                        {"name": "bytes", "configuration": {"endian": "little"}},
                        {"name": "crc32c"},
                    ],
                    "index_location": job.get("index_location", "end"),
                },
            }
        ],
    }
    spec = {
        "driver": "zarr3",
        "kvstore": {"driver": "file", "path": str(Path(job["root"]) / job["array"]) + "/"},
        "metadata": metadata,
    }
    store = ts.open(spec, create=True, delete_existing=True).result()
    store.write(data).result()


def run_job(job: dict[str, Any]) -> dict[str, Any]:
    engine = job["engine"]
    if job["op"] == "read":
        array = read_zarr(job["root"], job["array"]) if engine == "zarr" else read_tensorstore(job["root"], job["array"])
        n = save_bin(job["out"], array)
        return {"shape": list(array.shape), "dtype": str(array.dtype), "bytes": n}
    if job["op"] == "write":
        data = load_bin(job["input"], job["dtype"], job["shape"])
        (write_zarr if engine == "zarr" else write_tensorstore)(job, data)
        return {"written": True}
    raise ValueError(f"unknown op {job['op']!r}")


def main(argv: list[str]) -> int:
    jobs = json.loads(Path(argv[1]).read_text())
    results = []
    for job in jobs:
        try:
            results.append(run_job(job))
        except Exception as e:  # reported per job so one failure does not hide the others
            results.append({"error": f"{type(e).__name__}: {e}"})
    print(json.dumps(results))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
