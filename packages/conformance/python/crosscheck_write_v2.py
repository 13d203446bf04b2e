"""The v2 write conformance check (seed 000 §10) in Python: no Node, numpy only.

Compares reader dumps (earthsciio/write-v2-dump/v1) with the oracle bitwise. The oracle is computed from
the §10 generator formula and each case's `expect`, never from a writer. Prints the same lines as
`zstream conformance check`:

    python crosscheck_write_v2.py --corpus write_spec_v2.json DUMP.json...

    ok CASE reader=READER (FILE)
    FAIL CASE reader=READER (FILE): mismatch; mismatch; ... (first five, then "and N more")
    FAIL FILE: SchemaError: why             (a dump that is not a valid dump, or names no corpus case)

Exit status: 0 when every dump matches, 1 when one does not or the check cannot run (an unreadable or
invalid corpus, a missing schema file; one line on stderr names why), 2 on bad usage.

When `jsonschema` is installed the corpus and the dumps are also validated with the JSON Schemas that
ship with the corpus, `write_spec_v2.schema.json` and `write_v2_dump.schema.json`, looked for in the
directory `--schemas` names, beside this script, beside the corpus, and in `../corpus/` from this script
(the kit keeps everything in one directory; the zarr-stream package keeps this script in python/ and the
schemas in corpus/). Without `jsonschema` only the structure the comparison needs is checked. Nothing
else is read, so the script runs from any directory and any copy of the kit.
"""

from __future__ import annotations

import argparse
import base64
import json
import math
import struct
import sys
from pathlib import Path
from typing import Any, Iterable

import numpy as np

CORPUS_LABEL = "earthsciio/write-conformance-spec/v2"
DUMP_LABEL = "earthsciio/write-v2-dump/v1"
CORPUS_SCHEMA_FILE = "write_spec_v2.schema.json"
DUMP_SCHEMA_FILE = "write_v2_dump.schema.json"
# Fields of a manifest an expected manifest leaves out: they differ run to run.
MANIFEST_NOT_COMPARED = ("created_at", "base_url")

P = (3, 5, 11, 17, 23)
DTYPES = {"float64": "<f8", "float32": "<f4", "int32": "<i4", "int64": "<i8", "uint8": "u1", "uint32": "<u4", "uint64": "<u8"}


class SchemaError(Exception):
    """A corpus or dump that is not what the §10 wire formats say."""


# ---------------------------------------------------------------------------------------------------------
# Text exactly as the TypeScript check prints it (JavaScript's Number-to-String and JSON.stringify), so the
# two checks' lines can be compared verbatim.


def js_number(x: float | int) -> str:
    """ECMAScript Number::toString of a double: shortest round-trip digits, JavaScript's exponent rules."""
    if isinstance(x, bool):
        raise TypeError("a bool is not a number")
    if isinstance(x, int):
        return str(x)
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    if x == 0:
        return "0"
    sign = "-" if x < 0 else ""
    mantissa, _, exponent = repr(abs(x)).partition("e")
    whole, _, frac = mantissa.partition(".")
    digits = (whole + frac).lstrip("0")
    # n: position of the decimal point relative to the first significant digit (value = 0.DIGITS x 10^n).
    n = len(whole.lstrip("0")) if whole.strip("0") else -(len(frac) - len(frac.lstrip("0")))
    n += int(exponent) if exponent else 0
    digits = digits.rstrip("0") or "0"
    k = len(digits)
    if k <= n <= 21:
        return sign + digits + "0" * (n - k)
    if 0 < n <= 21:
        return sign + digits[:n] + "." + digits[n:]
    if -6 < n <= 0:
        return sign + "0." + "0" * (-n) + digits
    e = n - 1
    exp = ("+" if e >= 0 else "-") + str(abs(e))
    return sign + (digits if k == 1 else digits[0] + "." + digits[1:]) + "e" + exp


def js_json(value: Any) -> str:
    """JSON.stringify(value) for parsed JSON values."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, (int, float)):
        return js_number(value) if not isinstance(value, float) or math.isfinite(value) else "null"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list):
        return "[" + ",".join(js_json(v) for v in value) + "]"
    return "{" + ",".join(json.dumps(k, ensure_ascii=False) + ":" + js_json(v) for k, v in value.items()) + "}"


def json_equal(a: Any, b: Any) -> bool:
    """Equality as a JSON parser sees it: numbers by value (1 == 1.0), booleans never numbers."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


# ---------------------------------------------------------------------------------------------------------
# The oracle


def dims_no_time(schema: dict[str, Any], var: dict[str, Any]) -> list[str]:
    return [d for d in var["dims"] if d != schema["time_dim"]]


def dim_length(schema: dict[str, Any], dim: str) -> int:
    return next((n for d, n in schema["dims"] if d == dim), 0)


def generated(dtype: str, seed: int, r: int, box: list[tuple[int, int]]) -> np.ndarray:
    """Seed §10 values of generator record r over global index ranges `box` (one per non-time dim)."""
    if len(box) > len(P):
        raise SchemaError(f"generator: {len(box)} non-time dims, the seed §10 generator defines at most {len(P)}")
    base = np.full([stop - start for start, stop in box], seed + 13 * r, dtype=np.int64)
    for j, (start, stop) in enumerate(box):
        shape = [1] * len(box)
        shape[j] = stop - start
        base = base + ((np.arange(start, stop, dtype=np.int64) + 1) * P[j]).reshape(shape)
    if dtype in ("float64", "float32"):
        return (base.astype(np.float64) + 0.25).astype(DTYPES[dtype])
    if dtype == "uint8":
        return np.mod(base, 251).astype(np.uint8)  # numpy's mod, like Python's, takes the divisor's sign
    return base.astype(DTYPES[dtype])  # int32 wraps like a JavaScript Int32Array store


def generated_region(schema: dict[str, Any], var: dict[str, Any], r: int, region: dict[str, Any]) -> np.ndarray:
    """Generator record r of `var` over `region` (global [start, stop) per dim; the full extent elsewhere)."""
    box = [tuple(region[d]) if d in region else (0, dim_length(schema, d)) for d in dims_no_time(schema, var)]
    return generated(var["dtype"], var["seed"], r, box)


def array_dump(data: np.ndarray, dtype: str) -> dict[str, Any]:
    data = np.asarray(data, dtype=DTYPES[dtype], order="C")  # keeps a 0-d array 0-d
    return {"dtype": dtype, "shape": list(data.shape), "data_b64": base64.b64encode(data.tobytes()).decode()}


def _append_times(case: dict[str, Any]) -> dict[int, list[float]]:
    """The t each generator record r is written with by write_record ops that must succeed."""
    out: dict[int, list[float]] = {}
    for op in case["ops"]:
        if op["op"] == "write_record" and "expect_error" not in op:
            ts = out.setdefault(op["r"], [])
            if not any(_same_float(t, op["t"]) for t in ts):
                ts.append(op["t"])
    return out


def _same_float(a: float, b: float) -> bool:
    return struct.pack("<d", float(a)) == struct.pack("<d", float(b))


def expected_time(case: dict[str, Any], rec: dict[str, Any]) -> float:
    """times[index] in indexed mode; else the record's t, or the t its write_record ops give generator record r."""
    mode = case["schema"]["time_mode"]
    if mode != "append":
        return mode["indexed"]["times"][rec["index"]]
    written = _append_times(case).get(rec["r"], [])
    at = f"/cases/{case['name']}/expect/records"
    if "t" in rec:
        if written and not any(_same_float(t, rec["t"]) for t in written):
            raise SchemaError(f"{at}: t {js_number(rec['t'])} is not a t that write_record ops write generator record {rec['r']} with")
        return rec["t"]
    if len(written) != 1:
        raise SchemaError(f"{at}: generator record {rec['r']} is written at {len(written)} t values: the case must give t")
    return written[0]


def _blob_order(b: dict[str, Any]) -> tuple[int, int, int, str]:
    # scope ("record" < "static"), record, writer, key: the manifest's blob order. Keys are ASCII
    # ([A-Za-z0-9._-]), so code-unit and code-point order agree.
    return (1, -1, b["writer"], b["key"]) if b["scope"] == "static" else (0, b["scope"]["record"], b["writer"], b["key"])


def oracle_dump(case: dict[str, Any]) -> dict[str, Any]:
    schema, expect = case["schema"], case["expect"]
    full = lambda v, r: array_dump(generated_region(schema, v, r, {}), v["dtype"])  # noqa: E731
    records = []
    for rec in sorted(expect["records"], key=lambda x: x["index"]):
        out: dict[str, Any] = {"index": rec["index"], "t": expected_time(case, rec)}
        if "generation" in rec:
            out["generation"] = rec["generation"]
        out["vars"] = {v["name"]: full(v, rec["r"]) for v in schema["vars"]}
        records.append(out)
    statics = {name: full(next(s for s in schema["statics"] if s["name"] == name), 0) for name in sorted(expect["statics"])}
    dump = {
        "schema": DUMP_LABEL,
        "case": case["name"],
        "writer": "oracle",
        "reader": "oracle",
        "manifest_schema": expect["manifest_schema"],
        "commit_seq": expect["commit_seq"],
        "records": records,
        "statics": statics,
        "blobs": sorted(expect["blobs"], key=_blob_order),
    }
    if "manifest" in expect:
        dump["manifest"] = expect["manifest"]
    return dump


# ---------------------------------------------------------------------------------------------------------
# The comparison (same lines, same order as the TypeScript check)


def _multi_index(flat: int, shape: list[int]) -> list[int]:
    out = [0] * len(shape)
    for d in range(len(shape) - 1, -1, -1):
        n = shape[d]
        out[d] = 0 if n == 0 else flat % n
        flat = 0 if n == 0 else flat // n
    return out


def _element_text(data: bytes, dtype: str, i: int) -> str:
    fmt = np.dtype(DTYPES[dtype])
    if (i + 1) * fmt.itemsize > len(data):
        return "<absent>"
    value = np.frombuffer(data, dtype=fmt, count=1, offset=i * fmt.itemsize)[0]
    return js_number(float(value)) if fmt.kind == "f" else str(int(value))


def compare_array(expected: dict[str, Any], actual: dict[str, Any]) -> str | None:
    if "error" in actual:
        return f"reader error: {actual['error']}"
    if "error" in expected:
        return f"oracle has no value ({expected['error']})"
    if actual["dtype"] != expected["dtype"]:
        return f"dtype {actual['dtype']}, expected {expected['dtype']}"
    if actual["shape"] != expected["shape"]:
        return f"shape {js_json(actual['shape'])}, expected {js_json(expected['shape'])}"
    if actual["data_b64"] == expected["data_b64"]:
        return None
    a, e = base64.b64decode(actual["data_b64"]), base64.b64decode(expected["data_b64"])
    if len(a) != len(e):
        return f"{len(a)} data bytes, expected {len(e)}"
    if a == e:
        return None
    first = next(i for i, (x, y) in enumerate(zip(a, e)) if x != y)
    element = first // np.dtype(DTYPES[expected["dtype"]]).itemsize
    where = js_json(_multi_index(element, expected["shape"]))
    return f"element {where} is {_element_text(a, actual['dtype'], element)}, expected {_element_text(e, expected['dtype'], element)} (bitwise)"


def _blob_text(b: dict[str, Any]) -> str:
    scope = "static" if b["scope"] == "static" else f"record {b['scope']['record']}"
    return f"{scope}/writer {b['writer']}/{b['key']}"


def _compare_manifest(expected: dict[str, Any], actual: dict[str, Any] | None) -> list[str]:
    if actual is None:
        return ["manifest: not in the dump"]
    out = []
    for k, e in expected.items():
        if k not in actual:
            out.append(f"manifest {k}: missing, expected {js_json(e)}")
        elif not json_equal(actual[k], e):
            out.append(f"manifest {k}: {js_json(actual[k])}, expected {js_json(e)}")
    out += [f"manifest {k}: unexpected field" for k in actual if k not in expected and k not in MANIFEST_NOT_COMPARED]
    return out


def _text(x: Any) -> str:
    """A value in a JavaScript template string."""
    return "null" if x is None else js_number(x) if isinstance(x, (int, float)) and not isinstance(x, bool) else str(x)


def compare_dump(expected: dict[str, Any], dump: dict[str, Any]) -> list[str]:
    """Every way `dump` differs from the oracle `expected`, one line each; empty when bitwise equal."""
    out: list[str] = []
    if dump["case"] != expected["case"]:
        out.append(f"case is {dump['case']}, expected {expected['case']}")
    if dump["manifest_schema"] != expected["manifest_schema"]:
        out.append(f"manifest_schema {dump['manifest_schema']}, expected {expected['manifest_schema']}")
    if not json_equal(dump["commit_seq"], expected["commit_seq"]):
        out.append(f"commit_seq {_text(dump['commit_seq'])}, expected {_text(expected['commit_seq'])}")
    got = {r["index"]: r for r in dump["records"]}
    want = {r["index"]: r for r in expected["records"]}
    out += [f"record {i}: committed, expected not committed" for i in got if i not in want]
    for i, e in want.items():
        a = got.get(i)
        if a is None:
            out.append(f"record {i}: not committed")
            continue
        if not _same_float(a["t"], e["t"]):
            out.append(f"record {i}: t {js_number(a['t'])}, expected {js_number(e['t'])} (bitwise)")
        if "generation" in e and a.get("generation") != e["generation"]:
            out.append(f"record {i}: generation {_text(a.get('generation', 'undefined'))}, expected {e['generation']}")
        out += [f"record {i} var {name}: unexpected variable" for name in a["vars"] if name not in e["vars"]]
        for name, ev in e["vars"].items():
            av = a["vars"].get(name)
            why = compare_array(ev, av) if av is not None else "missing"
            if why:
                out.append(f"record {i} var {name}: {why}")
    out += [f"static {name}: committed, expected not" for name in dump["statics"] if name not in expected["statics"]]
    for name, ev in expected["statics"].items():
        av = dump["statics"].get(name)
        why = compare_array(ev, av) if av is not None else "not committed"
        if why:
            out.append(f"static {name}: {why}")
    got_blobs = {_blob_text(b): b["hex"] for b in sorted(dump["blobs"], key=_blob_order)}
    want_blobs = {_blob_text(b): b["hex"] for b in sorted(expected["blobs"], key=_blob_order)}
    out += [f"blob {k}: committed, expected not" for k in got_blobs if k not in want_blobs]
    for k, h in want_blobs.items():
        a = got_blobs.get(k)
        if a is None:
            out.append(f"blob {k}: not committed")
        elif a != h:
            out.append(f"blob {k}: bytes {a}, expected {h}")
    if "manifest" in expected:
        out += _compare_manifest(expected["manifest"], dump.get("manifest"))
    return out


# ---------------------------------------------------------------------------------------------------------
# Documents


def schema_dirs(corpus_path: str, given: str | None = None) -> list[Path]:
    """Where the shipped schema files are looked for, in order (see the module's text)."""
    here = Path(__file__).resolve().parent
    dirs = [Path(given).resolve()] if given else []
    dirs += [here, Path(corpus_path).resolve().parent, here.parent / "corpus"]
    return list(dict.fromkeys(dirs))


def _validator(name: str, dirs: list[Path]):
    """The shipped JSON Schema's validator, or None when jsonschema is not installed.

    A missing or unreadable schema file is a SchemaError: with jsonschema installed the check promises
    schema validation, and silently skipping it would pass documents the schema refuses.
    """
    try:
        from jsonschema import Draft202012Validator
    except ImportError:
        return None
    path = next((d / name for d in dirs if (d / name).is_file()), None)
    if path is None:
        raise SchemaError(f"{name} is not beside the script or the corpus (looked in {', '.join(map(str, dirs))}; --schemas DIR names another)")
    try:
        schema = json.loads(path.read_text())
        Draft202012Validator.check_schema(schema)
    except Exception as exc:
        raise SchemaError(f"{path}: not a usable JSON Schema ({exc.__class__.__name__}: {exc})") from exc
    return Draft202012Validator(schema)


def _schema_check(validator: Any, doc: Any, what: str) -> None:
    if validator is None:
        return
    error = next(iter(sorted(validator.iter_errors(doc), key=lambda e: list(e.absolute_path))), None)
    if error is not None:
        pointer = "".join(f"/{p}" for p in error.absolute_path)
        raise SchemaError(f"{what}: {pointer}: {error.message}")


def _need(cond: bool, what: str) -> None:
    if not cond:
        raise SchemaError(what)


def load_corpus(path: str, schemas: str | None = None) -> dict[str, Any]:
    try:
        doc = json.loads(Path(path).read_text())
    except (OSError, ValueError) as exc:
        raise SchemaError(f"corpus {path}: cannot read ({exc})") from exc
    _schema_check(_validator(CORPUS_SCHEMA_FILE, schema_dirs(path, schemas)), doc, CORPUS_LABEL)
    _need(isinstance(doc, dict) and doc.get("schema") == CORPUS_LABEL, f"corpus {path}: schema must be {CORPUS_LABEL}")
    names = [c["name"] for c in doc["cases"]]
    _need(len(set(names)) == len(names), f"corpus {path}: duplicate case name")
    for case in doc["cases"]:
        for rec in case["expect"]["records"]:
            expected_time(case, rec)  # refuses an append record whose t cannot be told
    return doc


def load_dump(path: str, validator: Any) -> dict[str, Any]:
    doc = json.loads(Path(path).read_text())
    _schema_check(validator, doc, DUMP_LABEL)
    _need(isinstance(doc, dict) and doc.get("schema") == DUMP_LABEL, f"{DUMP_LABEL}: /schema: must be {DUMP_LABEL}")
    for key, kind in (("case", str), ("reader", str), ("records", list), ("statics", dict), ("blobs", list)):
        _need(isinstance(doc.get(key), kind), f"{DUMP_LABEL}: /{key}: must be {kind.__name__}")
    return doc


def _summary(mismatches: list[str]) -> str:
    shown = "; ".join(mismatches[:5])
    return f"{shown}; and {len(mismatches) - 5} more" if len(mismatches) > 5 else shown


def check(corpus: dict[str, Any], files: Iterable[str], dump_validator: Any = None) -> tuple[list[str], int]:
    """One line per dump file, and how many did not match the oracle (validated with `dump_validator` if given)."""
    cases = {c["name"]: c for c in corpus["cases"]}
    validator = dump_validator
    lines, failed = [], 0
    for file in files:
        try:
            dump = load_dump(file, validator)
            case = cases.get(dump["case"])
            if case is None:
                raise SchemaError(f"corpus has no case {json.dumps(dump['case'])}")
            mismatches = compare_dump(oracle_dump(case), dump)
            if mismatches:
                failed += 1
                lines.append(f"FAIL {dump['case']} reader={dump['reader']} ({file}): {_summary(mismatches)}")
            else:
                lines.append(f"ok {dump['case']} reader={dump['reader']} ({file})")
        except Exception as exc:  # a broken dump fails its own line, never the whole run
            failed += 1
            lines.append(f"FAIL {file}: {exc.__class__.__name__}: {exc}")
    return lines, failed


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description="Compare write-v2 dumps with the §10 oracle bitwise.")
    parser.add_argument("--corpus", required=True)
    parser.add_argument("--schemas", help="directory of the two schema files, looked in before the others")
    parser.add_argument("dumps", nargs="+")
    args = parser.parse_args(argv)
    try:
        corpus = load_corpus(args.corpus, args.schemas)
        dump_validator = _validator(DUMP_SCHEMA_FILE, schema_dirs(args.corpus, args.schemas))
    except SchemaError as exc:
        print(f"crosscheck_write_v2: SchemaError: {exc}", file=sys.stderr)
        return 1
    except Exception as exc:  # a corpus the schema let through but the oracle cannot use, or I/O
        print(f"crosscheck_write_v2: corpus {args.corpus}: {exc.__class__.__name__}: {exc}", file=sys.stderr)
        return 1
    try:
        lines, failed = check(corpus, args.dumps, dump_validator)
        for line in lines:
            print(line)
    except Exception as exc:  # check() reports each dump's own failure; this is anything else (e.g. stdout)
        print(f"crosscheck_write_v2: {exc.__class__.__name__}: {exc}", file=sys.stderr)
        return 1
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
