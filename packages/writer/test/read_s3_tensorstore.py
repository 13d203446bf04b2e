"""Reads whole arrays of a store in an S3 bucket with TensorStore's s3 kvstore driver.

argv: endpoint bucket prefix out_dir array... ; credentials and region come from the AWS_* environment.
Writes <out_dir>/<array>.bin (C order, little-endian) and prints a JSON list of shapes.
"""

import json
import sys
from pathlib import Path

import tensorstore as ts


def main() -> None:
    endpoint, bucket, prefix, out_dir, *arrays = sys.argv[1:]
    shapes = []
    for name in arrays:
        spec = {
            "driver": "zarr3",
            "kvstore": {
                "driver": "s3",
                "bucket": bucket,
                "path": f"{prefix}/{name}/",
                "endpoint": endpoint,
                "aws_region": "us-east-1",
            },
        }
        array = ts.open(spec, open=True, read=True).result().read().result()
        little = array.astype(array.dtype.newbyteorder("<"), copy=False)
        Path(out_dir, f"{name}.bin").write_bytes(little.tobytes(order="C"))
        shapes.append(list(array.shape))
    print(json.dumps(shapes))


main()
