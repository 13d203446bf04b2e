"""A reader that knows seed 000 §8 and nothing of zarr-stream: the test's stand-in for another binding.

It reads output_manifest.json only. It pins the label exactly (seed §8.1: "Readers MUST pin the label
exactly"), validates the manifest with the seed's JSON Schema (schemas/output-manifest.schema.json, passed
in), recomputes the fingerprint (§3.1), and takes from it what join and read-back take (§5.1, §8.2): the
record count, the committed records (append: 0 .. n_records-1; indexed: the records.entries marked
committed), the record times (indexed: records.entries[*].t; append: last_t) and the time shards. It has
no notion of pages.

    python seed_only_reader.py SCHEMA.json < JOBS.json     # JOBS: ["store dir", ...]

Prints one JSON list: per store either {"refused": why} or what it read.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any

SEED_LABELS = ("earthsciio/output-manifest/v1", "earthsciio/output-manifest/v2")


def fingerprint(m: dict[str, Any]) -> str:
    """§3.1, from the manifest's schema fields; the time dim's length is 0 in append mode, n_records indexed."""
    triples = lambda specs: [[v["name"], list(v["dims"]), v["dtype"]] for v in specs]  # noqa: E731
    append = m["time_mode"] == "append"
    doc = {
        "chunk_shape": m["chunk_shape"],
        "dims": [[d["name"], 0 if d["name"] == m["time_dim"] and append else d["length"]] for d in m["dims"]],
        "profile": m["profile"],
        "shard_shape": m["shard_shape"],
        "statics": triples(m["statics"]),
        "time_dim": m["time_dim"],
        "time_mode": m["time_mode"],
        "vars": triples(m["vars"]),
    }
    text = json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def read(root: Path, validator: Any) -> dict[str, Any]:
    m = json.loads((root / "output_manifest.json").read_text())
    label = m.get("schema") if isinstance(m, dict) else None
    if label not in SEED_LABELS:
        return {"refused": f"label {label!r} is not one of the seed's"}
    error = next(iter(validator.iter_errors(m)), None)
    if error is not None:
        return {"refused": f"schema: {'/'.join(map(str, error.absolute_path))}: {error.message}"}
    v2 = label.endswith("/v2")
    if v2 and fingerprint(m) != m["fingerprint"]:
        return {"refused": "fingerprint"}
    n = m["n_records"]
    if v2 and m["time_mode"] == "indexed":
        entries = m["records"]["entries"]
        if len(entries) != n:
            return {"refused": f"{len(entries)} record entries for n_records {n}"}
        committed = [i for i, e in enumerate(entries) if e["committed"]]
        times = [e["t"] for e in entries]
    else:
        committed = list(range(n))
        times = None
    return {
        "label": label,
        "n_records": n,
        "committed": committed,
        "times": times,
        "last_t": m["last_t"],
        "shards": [[s["index"], s["t_start"], s["t_end"], s["n"]] for s in m["time_shards"]],
    }


def main() -> int:
    from jsonschema import Draft202012Validator

    validator = Draft202012Validator(json.loads(Path(sys.argv[1]).read_text()))
    print(json.dumps([read(Path(store), validator) for store in json.load(sys.stdin)]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
