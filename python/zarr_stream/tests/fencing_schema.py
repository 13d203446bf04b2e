"""The store of the fencing tests: 2 writers over lat, append, 4 records per time shard, so a replacement
handle's records and a zombie's stale rewrite meet in one time shard object."""

from __future__ import annotations

from typing import Any

import numpy as np

SCHEMA: dict[str, Any] = {
    "dims": [["time", 0], ["lat", 4], ["lon", 3]],
    "time_dim": "time",
    "time_mode": "append",
    "vars": [
        {"name": "temperature", "dims": ["time", "lat", "lon"], "dtype": "float64"},
        {"name": "total", "dims": ["time"], "dtype": "int64"},
    ],
    "statics": [],
    "chunk_shape": {"time": 2, "lat": 2, "lon": 3},
    "shard_shape": {"time": 4, "lat": 2, "lon": 3},
    "profile": "diagnostic",
}
REGIONS = [{"lat": (0, 2)}, {"lat": (2, 4)}]
TAGS = {"owner": 0, "A": 1, "B": 2}


def values(r: int, writer: int, tag: str) -> np.ndarray:
    """Record r of `temperature` over `writer`'s region as the handle `tag` writes it: two handles of one
    writer write different values, so a committed record tells which handle's bytes it holds."""
    lat = np.arange(*REGIONS[writer]["lat"]).reshape(-1, 1)
    return (1000.0 * r + 10 * lat + np.arange(3).reshape(1, -1) + 0.25 * TAGS[tag]).astype("float64")
