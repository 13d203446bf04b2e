"""The corpus's op protocol over the Python package's writers (python/zarr_stream, zarr_stream.writer), for
mixed-language runs of the streaming writer contract v2 (seed 000 §4, §5, §10): either role, the other
writers being TypeScript.

It shows that the commit token is the whole interface between writers. A contributor in any language joins
the store the owner created, writes the shard objects of its region for the records it is given
(zarr-python does the encoding), and hands the owner a CommitToken as plain JSON; an owner in any language
creates the store and commits the tokens of writers in other languages after verifying them (seed §5.3).
The writers are the package's (one Python implementation of the contract); this script only turns the
corpus's ops into their calls, with arrays from the seed §10 generator and the case's seeds.

    python writer_ops.py serve        # one JSON request per stdin line, one JSON reply per stdout line

Opening requests (one per process):
          {"op": "join", "store": DIR, "writer": ID, "region": {...}, "seeds": {VAR: SEED}}      (contributor)
          {"op": "create", "store": DIR, "schema": CORPUS_SCHEMA, "n_writers": N, "region": {...}}  (owner)
Then:     {"op": "write_record", "t": T, "r": R, "vars"?: [...]}
          {"op": "write_record_at", "index": I, "t": T, "r": R, "vars"?: [...]}
          {"op": "write_static", "name": NAME}                (generator record 0 over the region)
          {"op": "write_blob", "scope": "static" | {"record": I}, "key": KEY, "hex": HEX}
          {"op": "flush"}  -> reply {"ok": true, "token": {...}}
          {"op": "commit", "tokens": [...]}                   (owner: its own token among them)
          {"op": "invalidate", "indices": [...]}, {"op": "invalidate_statics", "names": [...]}   (owner)
          {"op": "close", "tokens"?: [...]}   (a contributor fails while writes are unflushed; an owner
                                               flushes and commits its token with the given ones)
Replies:  {"ok": true, ...} or {"ok": false, "error": {"name": CLASS, "message": TEXT}} (a CommitError's
          error also carries its "reason", the TypeScript CommitError's)
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from crosscheck_write_v2 import generated_region  # noqa: E402

# The package's sources of this checkout first: this script speaks for them, and a .venv shared between
# checkouts (git worktrees) may have another checkout's copy installed; the install otherwise.
_PACKAGE_SRC = Path(__file__).resolve().parents[3] / "python" / "zarr_stream" / "src"
if (_PACKAGE_SRC / "zarr_stream" / "__init__.py").exists():
    sys.path.insert(0, str(_PACKAGE_SRC))
from zarr_stream.errors import CommitError, ProtocolError, SchemaError, ZarrStreamError  # noqa: E402
from zarr_stream.writer import Contributor, Owner  # noqa: E402


class Writer:
    """One of the package's writers, with the case's generator seeds (variables and statics)."""

    def __init__(self, inner: Contributor, seeds: dict[str, int]) -> None:
        self.inner, self.seeds = inner, seeds
        m = inner.m
        self.schema_view = {"dims": [[d["name"], d["length"]] for d in m["dims"]], "time_dim": m["time_dim"]}

    @classmethod
    def join(cls, store: str, writer: int, region: dict[str, list[int]], seeds: dict[str, int]) -> Writer:
        return cls(Contributor.join(store, writer, region), seeds)

    @classmethod
    def create(cls, store: str, schema: dict[str, Any], n_writers: int, region: dict[str, list[int]]) -> Writer:
        seeds = {v["name"]: v["seed"] for v in [*schema["vars"], *schema["statics"]]}
        strip = lambda v: {k: x for k, x in v.items() if k != "seed"}  # noqa: E731
        plain = {**schema, "vars": [strip(v) for v in schema["vars"]], "statics": [strip(s) for s in schema["statics"]]}
        return cls(Owner.create(store, plain, n_writers, region), seeds)

    def _owner(self, op: str) -> Owner:
        if not isinstance(self.inner, Owner):
            raise ProtocolError(f"{op} is the owner's")
        return self.inner

    def _arrays(self, r: int, only: list[str] | None) -> dict[str, Any]:
        """What the corpus driver gives a writer: every variable it supplies (seed §4), or `vars` when the op
        names them (to check refusals)."""
        m = self.inner.m
        names = only if only is not None else [v["name"] for v in m["vars"] if self.inner._supplies(v)]
        return {
            v["name"]: generated_region(self.schema_view, {**v, "seed": self.seeds[v["name"]]}, r, self.inner.region)
            for v in m["vars"]
            if v["name"] in names
        }

    def handle(self, req: dict[str, Any]) -> dict[str, Any]:
        op = req["op"]
        w = self.inner
        if op == "write_record":
            return {"index": w.write_record(req["t"], self._arrays(req["r"], req.get("vars")))}
        if op == "write_record_at":
            w.write_record_at(req["index"], req["t"], self._arrays(req["r"], req.get("vars")))
        elif op == "write_static":
            s = next((s for s in w.m["statics"] if s["name"] == req["name"]), None)
            if s is None:
                raise SchemaError(f"no static named {req['name']!r}")
            w.write_static(s["name"], generated_region(self.schema_view, {**s, "seed": self.seeds[s["name"]]}, 0, w.region))
        elif op == "write_blob":
            w.write_blob(req["scope"], req["key"], bytes.fromhex(req["hex"]))
        elif op == "flush":
            return {"token": w.flush()}
        elif op == "commit":
            return {"commit_seq": self._owner(op).commit(req["tokens"])["commit_seq"]}
        elif op == "invalidate":
            self._owner(op).invalidate(req["indices"])
        elif op == "invalidate_statics":
            self._owner(op).invalidate_statics(req["names"])
        elif op == "close":
            if isinstance(w, Owner):
                w.close(req.get("tokens", []))
            elif req.get("tokens"):
                raise ProtocolError("a contributor's close takes no tokens")
            else:
                w.close()
        else:
            raise ProtocolError(f"unknown op {op!r}")
        return {}


def serve(stdin=sys.stdin, stdout=sys.stdout) -> int:
    writer: Writer | None = None
    for line in stdin:
        if not line.strip():
            continue
        reply: dict[str, Any] = {"ok": True}
        try:
            req = json.loads(line)
            op = req["op"]
            if op in ("join", "create") and writer is not None:
                raise ProtocolError(f"{op}: this process already serves a writer")
            if op == "join":
                writer = Writer.join(req["store"], req["writer"], req.get("region", {}), req["seeds"])
            elif op == "create":
                writer = Writer.create(req["store"], req["schema"], req["n_writers"], req.get("region", {}))
            elif writer is None:
                raise ProtocolError(f"{op} before join or create")
            else:
                reply |= writer.handle(req)
        except Exception as exc:  # every failure is a reply: the caller decides whether it was expected
            name = type(exc).__name__ if isinstance(exc, ZarrStreamError) else f"Python{type(exc).__name__}"
            reply = {"ok": False, "error": {"name": name, "message": str(exc)}}
            if isinstance(exc, CommitError):
                reply["error"]["reason"] = exc.reason
        stdout.write(json.dumps(reply) + "\n")
        stdout.flush()
    return 0


if __name__ == "__main__":
    if sys.argv[1:] != ["serve"]:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    sys.exit(serve())
