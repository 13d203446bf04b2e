"""A minimal Python contributor of the streaming writer contract v2 (seed 000 §4, §5), with zarr-python.

It shows that the commit token is the whole interface between writers: a contributor in any language
joins the store the owner created, writes the shard objects of its region for the records it is given
(zarr-python does the encoding), and hands the owner a CommitToken as plain JSON. The owner, here the
TypeScript writer, verifies and commits it like any other token.

The contributor is the Python package's (python/zarr_stream, zarr_stream.writer.Contributor: one Python
implementation of the contract); this script is only the corpus's op protocol over it, for append-mode
cases with records (the package's own tests drive indexed mode, statics and blobs, and a Python owner).
What it writes follows the contract: the manifest must be v2 and its fingerprint must match the schema
rebuilt from it; the region must be shard-aligned; the open time shard's committed records are reloaded
at join; only whole shards are written (a partial time shard padded with fill); zarr.json and the
manifest are never written.

    python contributor.py serve        # one JSON request per stdin line, one JSON reply per stdout line

Requests: {"op": "join", "store": DIR, "writer": ID, "region": {...}, "seeds": {VAR: SEED}}
          {"op": "write_record", "t": T, "r": R, "vars"?: [...]}   (arrays from the §10 generator)
          {"op": "flush"}  -> reply {"ok": true, "token": {...}}
          {"op": "close"}  (fails while records are unflushed)
Replies:  {"ok": true, ...} or {"ok": false, "error": {"name": CLASS, "message": TEXT}}
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from crosscheck_write_v2 import generated_region  # noqa: E402

try:
    import zarr_stream  # noqa: F401  (installed in .venv by scripts/setup-python.sh)
except ImportError:  # a checkout without the install: the package's sources beside this one
    sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "python" / "zarr_stream" / "src"))
from zarr_stream.errors import ProtocolError, ZarrStreamError  # noqa: E402
from zarr_stream.writer import Contributor as PackageContributor  # noqa: E402


class Contributor:
    """The op protocol over the Python package's contributor (zarr_stream.writer.Contributor): arrays come
    from the seed §10 generator with the case's seeds."""

    def __init__(self, inner: PackageContributor, seeds: dict[str, int]) -> None:
        self.inner, self.seeds = inner, seeds
        m = inner.m
        self.schema_view = {"dims": [[d["name"], d["length"]] for d in m["dims"]], "time_dim": m["time_dim"]}

    @classmethod
    def join(cls, store: str, writer: int, region: dict[str, list[int]], seeds: dict[str, int]) -> "Contributor":
        inner = PackageContributor.join(store, writer, region)
        if inner.indexed:
            raise ProtocolError("the corpus's Python contributor drives append-mode stores")
        return cls(inner, seeds)

    def write_record(self, t: float, r: int, only: list[str] | None = None) -> int:
        m = self.inner.m
        names = only if only is not None else [v["name"] for v in m["vars"] if self.inner._supplies(v)]
        arrays: dict[str, Any] = {}
        for v in m["vars"]:
            if v["name"] in names:
                seeded = {**v, "seed": self.seeds[v["name"]]}
                arrays[v["name"]] = generated_region(self.schema_view, seeded, r, self.inner.region)
        return self.inner.write_record(t, arrays)

    def flush(self) -> dict[str, Any]:
        return self.inner.flush()

    def close(self) -> None:
        self.inner.close()


def serve(stdin=sys.stdin, stdout=sys.stdout) -> int:
    contributor: Contributor | None = None
    for line in stdin:
        if not line.strip():
            continue
        reply: dict[str, Any] = {"ok": True}
        try:
            req = json.loads(line)
            op = req["op"]
            if op == "join":
                contributor = Contributor.join(req["store"], req["writer"], req.get("region", {}), req["seeds"])
            elif contributor is None:
                raise ProtocolError(f"{op} before join")
            elif op == "write_record":
                reply["index"] = contributor.write_record(req["t"], req["r"], req.get("vars"))
            elif op == "flush":
                reply["token"] = contributor.flush()
            elif op == "close":
                contributor.close()
            else:
                raise ProtocolError(f"unknown op {op!r}")
        except Exception as exc:  # every failure is a reply: the caller decides whether it was expected
            name = type(exc).__name__ if isinstance(exc, ZarrStreamError) else f"Python{type(exc).__name__}"
            reply = {"ok": False, "error": {"name": name, "message": str(exc)}}
        stdout.write(json.dumps(reply) + "\n")
        stdout.flush()
    return 0


if __name__ == "__main__":
    if sys.argv[1:] != ["serve"]:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    sys.exit(serve())
