"""Runs single-writer append cases of the v2 corpus through EarthSciIO's own Python v1 writer.

That writer (PyPI `earthsciio`, backends/zarr_write.py) spells its manifest the Python way
(`total_records`, `written_at`, `dims` as pairs, `time_shards[].n_records`); such stores exist in the wild
and our readers must read them bitwise. Only the ops a v1 Single writer has are accepted: create with
role single, write_record, flush and close.

    python write_earthsciio_v1.py CORPUS.json CASE OUT_DIR
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from crosscheck_write_v2 import DTYPES, generated_region  # noqa: E402


def output_schema(schema: dict):
    from earthsciio.backends.zarr_write import OutputSchema, OutputVar

    coords = [
        (name, (np.asarray(c.get("values", []), dtype=np.float64), c.get("attrs", {})))
        for name, c in schema.get("coords", {}).items()
    ]
    return OutputSchema(
        dims=[(d, n) for d, n in schema["dims"]],
        time_dim=schema["time_dim"],
        vars=[(v["name"], OutputVar(v["dims"], np.dtype(DTYPES[v["dtype"]]).newbyteorder("="))) for v in schema["vars"]],
        chunk_shape=schema["chunk_shape"],
        shard_shape=schema["shard_shape"],
        coords=coords,
        profile=schema["profile"],
        attrs=schema.get("attrs", {}),
    )


def run(case: dict, out: Path) -> None:
    from earthsciio.backends.zarr_write import ZarrWriter

    schema = case["schema"]
    if schema["time_mode"] != "append" or schema["statics"]:
        raise ValueError(f"{case['name']}: EarthSciIO's v1 writer has append mode only and no statics")
    writer, handle = ZarrWriter(), None
    for op in case["ops"]:
        kind = op["op"]
        if kind == "create" and op["role"] == {"single": True} and handle is None:
            handle = writer.write_open(str(out), output_schema(schema))
        elif kind == "write_record" and handle is not None and "expect_error" not in op:
            arrays = {v["name"]: generated_region(schema, v, op["r"], {}) for v in schema["vars"]}
            writer.write_record(handle, op["t"], arrays)
        elif kind == "flush" and handle is not None:
            writer.write_flush(handle)
        elif kind == "close" and handle is not None:
            writer.write_close(handle)
            handle = None
        else:
            raise ValueError(f"{case['name']}: op {kind} is not one a v1 Single writer has")


def main(argv: list[str]) -> int:
    if len(argv) != 4:
        print(f"usage: {argv[0]} CORPUS.json CASE OUT_DIR", file=sys.stderr)
        return 2
    corpus = json.loads(Path(argv[1]).read_text())
    case = next((c for c in corpus["cases"] if c["name"] == argv[2]), None)
    if case is None:
        print(f"no case {argv[2]!r}", file=sys.stderr)
        return 2
    run(case, Path(argv[3]).resolve())
    print(f"ok {case['name']}: {argv[3]}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
