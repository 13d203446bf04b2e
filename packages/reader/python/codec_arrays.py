"""Writes Zarr v3 arrays with zarr-python 3 over the codecs the reader's codec model covers, then reads
each back with zarr-python, whole and one box, as raw little-endian C-order bytes.

    python codec_arrays.py ROOT     # prints a JSON list: {name, shape, dtype, box, whole, part}
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import zarr
from zarr.codecs import (
    BloscCodec,
    BytesCodec,
    Crc32cCodec,
    GzipCodec,
    ShardingCodec,
    TransposeCodec,
    ZstdCodec,
)


def data(shape, dtype):
    n = int(np.prod(shape))
    values = (np.arange(n, dtype=np.float64) * 1.25 - n / 3).reshape(shape)
    return values.astype(dtype)


CASES = [
    # name, shape, chunks, dtype, create_array kwargs, box, which part to write (None: all)
    ("gzip", (7, 5), (3, 2), "float64", {"compressors": [GzipCodec(level=5)]}, ((1, 6), (1, 4)), None),
    (
        "transpose_zstd",
        (6, 4, 3),
        (4, 3, 2),
        "int32",
        {"filters": [TransposeCodec(order=(2, 0, 1))], "compressors": [ZstdCodec(level=3)]},
        ((2, 6), (0, 4), (1, 3)),
        None,
    ),
    ("zstd_checksum", (10,), (4,), "uint32", {"compressors": [ZstdCodec(level=1, checksum=True)]}, ((3, 9),), None),
    ("crc32c", (5, 6), (2, 3), "float32", {"compressors": [Crc32cCodec()]}, ((1, 4), (2, 5)), None),
    (
        "blosc_lz4_unsharded",
        (6, 5),
        (3, 5),
        "float32",
        {"compressors": [BloscCodec(cname="lz4", clevel=5, shuffle="bitshuffle")]},
        ((1, 5), (0, 3)),
        None,
    ),
    (
        "big_endian_gzip",
        (9,),
        (4,),
        "int64",
        {"serializer": BytesCodec(endian="big"), "compressors": [GzipCodec()]},
        ((2, 7),),
        None,
    ),
    (
        "sharded_transpose_big_start",
        (8, 6),
        (4, 6),
        "float32",
        {
            "serializer": ShardingCodec(
                chunk_shape=(2, 3),
                codecs=[TransposeCodec(order=(1, 0)), BytesCodec(endian="big"), GzipCodec()],
                index_codecs=[BytesCodec(endian="little"), Crc32cCodec()],
                index_location="start",
            ),
            "compressors": None,
        },
        ((1, 7), (2, 6)),
        None,
    ),
    (
        "fill_partial",
        (6, 6),
        (3, 3),
        "float64",
        {"compressors": [GzipCodec()], "fill_value": -1.5},
        ((2, 5), (1, 6)),
        ((0, 3), (0, 3)),
    ),
    (
        "sharded_fill_partial",
        (8, 8),
        (4, 4),
        "uint64",
        {"shards": (4, 8), "compressors": [ZstdCodec(level=2)], "fill_value": 9},
        ((3, 7), (0, 8)),
        ((0, 2), (0, 2)),
    ),
]


def main(root: str) -> None:
    out = []
    for name, shape, chunks, dtype, kwargs, box, part in CASES:
        kwargs = dict(kwargs)
        fill = kwargs.pop("fill_value", 0)
        arr = zarr.create_array(
            store=root,
            name=name,
            shape=shape,
            chunks=chunks,
            dtype=dtype,
            fill_value=fill,
            zarr_format=3,
            overwrite=True,
            **kwargs,
        )
        values = data(shape, dtype)
        if part is None:
            arr[...] = values
        else:
            sl = tuple(slice(a, b) for a, b in part)
            arr[sl] = values[sl]
        back = zarr.open_array(store=root, path=name, mode="r", zarr_format=3)
        whole = Path(root) / f"{name}.whole.bin"
        part_path = Path(root) / f"{name}.box.bin"
        little = np.dtype(dtype).newbyteorder("<")
        whole.write_bytes(np.ascontiguousarray(back[...].astype(little)).tobytes())
        box_sl = tuple(slice(a, b) for a, b in box)
        part_path.write_bytes(np.ascontiguousarray(back[box_sl].astype(little)).tobytes())
        out.append(
            {
                "name": name,
                "shape": list(shape),
                "dtype": dtype,
                "box": [list(b) for b in box],
                "whole": str(whole),
                "part": str(part_path),
            }
        )
    print(json.dumps(out))


if __name__ == "__main__":
    main(sys.argv[1])
