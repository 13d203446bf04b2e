"""Fencing of a writer started twice (packages/spec/docs/fencing.md), in the TypeScript writer's formats, so
Python and TypeScript writers of one store fence each other.

- **Leases** (``writer-lease.ts``): each writer id has ``.zarr-stream/leases/writer-<id>.json``; a handle
  takes it at join (epoch + 1, conditional on the version it read), and every older handle of that writer is
  fenced from then on. Its bytes are ``JSON.stringify`` of the TypeScript ``LeaseDoc`` plus a newline.
- **Sealed tokens**: a contributor's flush appends the token's digest to its lease (compare-and-swap on the
  lease version it holds); the owner commits a contributor's token only when that writer's lease lists it.
- **Conditional writes** (``fenced-objects.ts``): every object a handle writes is conditional on the version
  it last wrote or read (absent: create-only), and a refusal is explained by rules 1-4 of fencing.md.
- **The commit intent** (``commit-intent.ts``): the owner announces a commit before it reads the leases, and
  a contributor that has just taken its lease waits for it before it reads the committed state.

Versions are FsStore's stamps (local_writes.py), so the conditions hold across languages on a local store.
"""

from __future__ import annotations

import hashlib
import json
import math
import numbers
import re
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime, timezone
from decimal import Decimal
from pathlib import Path
from typing import Any

from .errors import CommitError, Fenced, ProtocolError
from .local_writes import Stamp, delete_if_stamp, get_versioned, put, put_if_absent, put_if_stamp, stamp_of

LEASE_PREFIX = ".zarr-stream/leases/"
LEASE_SCHEMA = "zarr-stream/writer-lease/v1"
SEALS_KEPT = 256
"""How many seals a lease keeps, newest last: a token older than that is refused as stale (writer-lease.ts)."""

INTENT_KEY = ".zarr-stream/committing.json"
INTENT_SCHEMA = "zarr-stream/commit-intent/v1"

OVERWRITE_ATTEMPTS = 8
"""How often a lease holder replaces a key that another write keeps changing before it gives up."""


def lease_key(writer: int) -> str:
    return f"{LEASE_PREFIX}writer-{writer}.json"


# -- the TypeScript writer's JSON ---------------------------------------------------------------------------


def _js_number(x: float) -> str:
    """ECMAScript Number::toString: the shortest digits that round-trip (as Python's repr finds them),
    placed as JavaScript places them (no ".0", exponents only below 1e-6 and from 1e21)."""
    if math.isnan(x) or math.isinf(x):
        return "null"  # JSON.stringify's spelling of a non-finite number
    if x == 0:
        return "0"  # -0 too
    sign = "-" if x < 0 else ""
    _, digits, exp = Decimal(repr(abs(x))).as_tuple()
    ds = "".join(map(str, digits)).lstrip("0")
    e = int(exp)
    while len(ds) > 1 and ds.endswith("0"):
        ds, e = ds[:-1], e + 1
    k = len(ds)
    n = e + k  # the value is 0.<ds> x 10^n
    if k <= n <= 21:
        return sign + ds + "0" * (n - k)
    if 0 < n <= 21:
        return sign + ds[:n] + "." + ds[n:]
    if -6 < n <= 0:
        return sign + "0." + "0" * -n + ds
    mantissa = ds if k == 1 else ds[0] + "." + ds[1:]
    return f"{sign}{mantissa}e{'+' if n - 1 >= 0 else '-'}{abs(n - 1)}"


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _js_string(s: str) -> str:
    # json.dumps escapes what JSON.stringify escapes (quote, backslash, controls as \b \f \n \r \t or
    # \u00xx), leaves the rest raw; JSON.stringify also escapes a lone surrogate, which UTF-8 cannot carry.
    out = json.dumps(s, ensure_ascii=False)
    return _LONE_SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", out)


def _is_array_index(key: str) -> bool:
    return key.isascii() and key.isdigit() and (key == "0" or key[0] != "0") and int(key) < 2**32 - 1


def _js_key_order(keys: Iterable[str]) -> list[str]:
    """The order of ``Object.fromEntries`` over ``Object.keys(v).sort()``: sorted by UTF-16 code units, except
    that keys which are array indices come first in numeric order (a JavaScript object's own key order)."""
    keys = list(keys)
    indices = sorted((k for k in keys if _is_array_index(k)), key=int)
    rest = sorted((k for k in keys if not _is_array_index(k)), key=lambda k: k.encode("utf-16-be"))
    return indices + rest


def sorted_json(value: Any) -> str:
    """The TypeScript writer's ``sortedJson`` (writer-lease.ts): ``JSON.stringify`` with every object's keys
    sorted, so a token digests the same in either language, parsed from JSON or handed over in memory."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, str):
        return _js_string(value)
    if isinstance(value, numbers.Integral):
        n = int(value)
        return str(n) if abs(n) < 2**53 else _js_number(float(n))  # a JavaScript number is a double
    if isinstance(value, numbers.Real):
        return _js_number(float(value))
    if isinstance(value, Mapping):
        items = {str(k): v for k, v in value.items()}
        return "{" + ",".join(f"{_js_string(k)}:{sorted_json(items[k])}" for k in _js_key_order(items)) + "}"
    if isinstance(value, Sequence):
        return "[" + ",".join(sorted_json(v) for v in value) + "]"
    raise TypeError(f"{type(value).__name__} is not JSON")


def token_digest(token: Mapping[str, Any]) -> str:
    """The digest a lease seals a token by (writer-lease.ts ``tokenDigest``): SHA-256 of ``sorted_json``, 128
    bits kept, as lowercase hex."""
    return hashlib.sha256(sorted_json(token).encode("utf-8")).hexdigest()[:32]


# -- leases -----------------------------------------------------------------------------------------------


def _iso_now() -> str:
    """``new Date().toISOString()``: UTC, milliseconds, ``Z``."""
    now = datetime.now(timezone.utc)
    return now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{now.microsecond // 1000:03d}Z"


def _safe_int(v: Any) -> bool:
    """JavaScript's Number.isSafeInteger, for a value json.loads made (1.0 is one there too)."""
    if isinstance(v, float) and v.is_integer():
        v = int(v)
    return isinstance(v, int) and not isinstance(v, bool) and abs(v) <= 2**53 - 1


def _json_line(doc: Mapping[str, Any]) -> bytes:
    """``JSON.stringify(doc)`` and a newline, as the TypeScript writer writes its leases and intents."""
    return (json.dumps(doc, separators=(",", ":"), ensure_ascii=False) + "\n").encode("utf-8")


def _json_doc(data: bytes) -> Any:
    """The JSON value `data` holds, or None when it holds none (a torn or foreign file)."""
    try:
        return json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None


def parse_lease(data: bytes) -> dict[str, Any] | None:
    """The lease a store holds, or None for bytes that are not one (taken over, never a reason to refuse a
    store); a lease without ``sealed`` seals nothing. As the TypeScript ``parseLease``."""
    doc = _json_doc(data)
    if not isinstance(doc, dict) or doc.get("schema") != LEASE_SCHEMA:
        return None
    if not _safe_int(doc.get("writer")) or not _safe_int(doc.get("epoch")):
        return None
    sealed = doc.get("sealed")
    return {
        "schema": LEASE_SCHEMA,
        "writer": int(doc["writer"]),
        "epoch": max(0, int(doc["epoch"])),
        "acquired_at": doc["acquired_at"] if isinstance(doc.get("acquired_at"), str) else "",
        "nonce": doc["nonce"] if isinstance(doc.get("nonce"), str) else "",
        "sealed": [s for s in sealed if isinstance(s, str)] if isinstance(sealed, list) else [],
        "job": doc["job"] if isinstance(doc.get("job"), str) else None,
    }


def new_lease(writer: int, previous: bytes | None, job: str | None = None) -> dict[str, Any]:
    """A fresh lease for `writer`, one epoch past the one in `previous` (the bytes it replaces, if any). The
    nonce makes every lease body unique, so finding our own bytes there means our write landed."""
    epoch = 1 if previous is None else ((parse_lease(previous) or {}).get("epoch", 0)) + 1
    # The field order of the TypeScript LeaseDoc: the bytes are JSON.stringify's.
    return {
        "schema": LEASE_SCHEMA,
        "writer": writer,
        "epoch": epoch,
        "acquired_at": _iso_now(),
        "nonce": str(uuid.uuid4()),
        "sealed": [],
        "job": job,
    }


def lease_bytes(doc: Mapping[str, Any]) -> bytes:
    """The bytes of a lease, as the TypeScript ``leaseBytes`` writes them."""
    return _json_line(doc)


def _same_holder(a: bytes, b: bytes | None) -> bool:
    """Whether two lease bodies are one holder's (the same nonce): they differ at most by its seals."""
    if b is None:
        return False
    x, y = parse_lease(a), parse_lease(b)
    return x is not None and y is not None and x["nonce"] != "" and x["nonce"] == y["nonce"]


def stored_lease(root: Path, writer: int) -> tuple[bool, dict[str, Any] | None]:
    """(whether `writer` has a lease object, the lease parsed or None when it does not parse)."""
    got = get_versioned(root, lease_key(writer))
    return (False, None) if got is None else (True, parse_lease(got[0]))


def seal_problem(root: Path, token: Mapping[str, Any]) -> str | None:
    """Why the live handle of the token's writer did not seal this token, or None when it did. A writer with
    no lease object at all took none (an older writer of another language) and is fenced by the manifest only."""
    present, lease = stored_lease(root, token["writer"])
    if not present:
        return None
    if lease is not None and token_digest(token) in lease["sealed"]:
        return None
    w = token["writer"]
    holder = "its lease does not parse" if lease is None else f"its lease is at epoch {lease['epoch']}, taken {lease['acquired_at']}"
    records = ",".join(str(r["index"]) for r in token.get("records", []))
    return (
        f"writer {w}'s token (records [{records}]) was not flushed by the handle that holds writer {w}'s lease now"
        f" ({holder}): a second process of writer {w} took over, or that handle resumed since"
    )


def assert_tokens_sealed(root: Path, tokens: Iterable[Mapping[str, Any]], owner: int = 0) -> None:
    """Seed §5.3 with fencing.md's sealed tokens: refuses, before anything is written, a token no live handle
    made (CommitError "stale-token", the TypeScript owner's reason)."""
    found = [(t["writer"], why) for t in tokens if t["writer"] != owner and (why := seal_problem(root, t)) is not None]
    if found:
        raise CommitError("; ".join(why for _, why in found), "stale-token", [w for w, _ in found])


# -- the commit intent ------------------------------------------------------------------------------------


def _intent_bytes(commit_seq: int, owner_nonce: str) -> bytes:
    return _json_line({"schema": INTENT_SCHEMA, "commit_seq": commit_seq, "owner": owner_nonce})


def _parse_intent(data: bytes) -> dict[str, Any] | None:
    doc = _json_doc(data)
    ok = isinstance(doc, dict) and doc.get("schema") == INTENT_SCHEMA and _safe_int(doc.get("commit_seq")) and isinstance(doc.get("owner"), str)
    return doc if ok else None


def announce_commit(root: Path, commit_seq: int, owner_nonce: str) -> None:
    """The owner, before it checks seals: the commit of `commit_seq` is in flight."""
    put(root, INTENT_KEY, _intent_bytes(commit_seq, owner_nonce))


def withdraw_commit(root: Path, commit_seq: int, owner_nonce: str) -> None:
    """The owner, after a refused commit: nothing of `commit_seq` lands, so nobody need wait for it."""
    got = get_versioned(root, INTENT_KEY)
    doc = None if got is None else _parse_intent(got[0])
    if doc is not None and doc["commit_seq"] == commit_seq and doc["owner"] == owner_nonce:
        delete_if_stamp(root, INTENT_KEY, got[1])  # type: ignore[index]


def _pending_commit(root: Path, committed_seq: Callable[[], int]) -> int | None:
    """The commit_seq of an owner's intent that can still land, or None: none, already landed, withdrawn, or
    written under an owner lease that has been taken over since (a fenced owner's manifest write cannot land)."""
    got = get_versioned(root, INTENT_KEY)
    doc = None if got is None else _parse_intent(got[0])
    if doc is None or doc["commit_seq"] <= committed_seq():
        return None
    present, owner = stored_lease(root, 0)
    if not present or owner is None or owner["nonce"] != doc["owner"]:
        return None
    return int(doc["commit_seq"])


def wait_for_commit_in_flight(root: Path, committed_seq: Callable[[], int], timeout_s: float) -> None:
    """A contributor that has just taken its lease: waits until the owner's commit in flight (if any) has
    landed or been refused, at most `timeout_s` (commit-intent.ts ``waitForCommitInFlight``)."""
    started = time.monotonic()
    pause = 0.005
    while True:
        pending = _pending_commit(root, committed_seq)
        if pending is None:
            return
        waited = time.monotonic() - started
        if waited >= timeout_s:
            raise ProtocolError(
                f"{root.as_uri()}: writer 0's commit of commit_seq {pending} has been in flight for {waited * 1000:.0f} ms"
                f" ({INTENT_KEY}): writer 0 stopped mid-commit; restart writer 0 (it resumes), then this writer"
            )
        time.sleep(pause)
        pause = min(pause * 2, 0.1)


# -- fenced writes ----------------------------------------------------------------------------------------


class FencedWrites:
    """Every object one writer handle writes on a local store, fenced (``FencedObjects`` of the TypeScript
    writer): each write is conditional on the stamp of the object this handle last wrote or read (absent when
    it has seen neither), so a write made by anyone else in between makes ours fail instead of silently
    replacing theirs. A refused write is explained before it is reported (fencing.md, "Versions"):

    1. the object holds exactly our bytes: our write landed; success;
    2. it holds the bytes of an earlier attempt of ours that raised: that attempt landed; retried on it;
    3. this handle still holds its lease and ``may_overwrite`` (no commit it did not see since its view):
       the object is a leftover of a dropped handle, or a stale write of a fenced one; replaced;
    4. otherwise another handle of this writer is live: ``Fenced``, and the handle refuses every further call.
    """

    def __init__(self, root: Path) -> None:
        self.root = root
        self._versions: dict[str, Stamp | None] = {}
        # sha256 of the bytes of a write that raised: it may have landed.
        self._uncertain: dict[str, bytes] = {}
        self._lease: tuple[str, Stamp, dict[str, Any]] | None = None
        # A seal whose write raised: it may have landed, and then the lease holds exactly these bytes.
        self._unsettled_seal: tuple[bytes, dict[str, Any]] | None = None
        self._fenced: Fenced | None = None
        # Asked before a lease holder replaces an object another write changed; False means Fenced.
        self.may_overwrite: Callable[[str], bool] = lambda key: True

    @property
    def lease_nonce(self) -> str | None:
        return None if self._lease is None else self._lease[2]["nonce"]

    def assert_unfenced(self) -> None:
        if self._fenced is not None:
            raise self._fenced

    def fence(self, key: str, why: str) -> Fenced:
        """Marks the handle fenced and returns the error it raises from now on."""
        if self._fenced is None:
            self._fenced = Fenced(f"{why}: this handle writes nothing more; join again to go on", key)
        return self._fenced

    # -- the lease --

    def _put_lease(self, key: str, body: bytes, expected: Stamp | None) -> Stamp | None:
        """A conditional lease write; a refusal whose bytes are ours is our own write (it landed)."""
        stamp = put_if_absent(self.root, key, body) if expected is None else put_if_stamp(self.root, key, body, expected)
        if stamp is not None:
            return stamp
        now = get_versioned(self.root, key)
        return now[1] if now is not None and now[0] == body else None

    def take_lease(self, writer: int, create: bool) -> bool:
        """Takes `writer`'s lease: creates it (`create`; False when it exists) or replaces whatever holds it
        now, which fences the handle that held it before."""
        key = lease_key(writer)
        current = None if create else get_versioned(self.root, key)
        attempt = 0
        while True:
            doc = new_lease(writer, None if current is None else current[0])
            stamp = self._put_lease(key, lease_bytes(doc), None if current is None else current[1])
            if stamp is not None:
                self._hold(key, stamp, doc)
                return True
            if create:
                return False
            # The handle being taken over may have sealed a token meanwhile (same nonce, one more seal): take
            # over from that. A lease with another nonce is another takeover that won the race.
            now = get_versioned(self.root, key)
            if attempt < OVERWRITE_ATTEMPTS and now is not None and _same_holder(now[0], None if current is None else current[0]):
                current, attempt = now, attempt + 1
                continue
            raise self.fence(key, f"writer {writer}'s lease was taken by another handle at the same moment")

    def _hold(self, key: str, stamp: Stamp, doc: dict[str, Any]) -> None:
        self._lease = (key, stamp, doc)
        self._versions[key] = stamp
        self._unsettled_seal = None

    def seal_token(self, digest: str) -> None:
        """Seals a token this handle flushed into its lease: a compare-and-swap on the lease stamp it holds, so
        a handle whose lease was taken is Fenced here, before its token leaves."""
        if self._unsettled_seal is not None:
            self.assert_lease()
        self.assert_unfenced()
        if self._lease is None:
            return
        key, _, doc = self._lease
        if digest in doc["sealed"]:
            return
        sealed = {**doc, "sealed": [*doc["sealed"], digest][-SEALS_KEPT:]}
        body = lease_bytes(sealed)
        for attempt in range(2):
            try:
                stamp = self._put_lease(key, body, self._lease[1])
            except BaseException:
                self._unsettled_seal = (body, sealed)
                raise
            if stamp is not None:
                self._hold(key, stamp, sealed)
                return
            # Refused: our own lease bytes under a new stamp are still ours (a byte-identical rewrite).
            if attempt > 0 or not self._adopt_restored():
                raise self.fence(key, "another handle has taken this writer's lease")

    def _adopt_restored(self) -> bool:
        """The lease holds this handle's own bytes under another stamp: the nonce makes them ours alone, so
        this handle holds the lease still, at the new stamp."""
        assert self._lease is not None
        key, _, doc = self._lease
        now = get_versioned(self.root, key)
        if now is None or now[0] != lease_bytes(doc):
            return False
        self._hold(key, now[1], doc)
        return True

    def holds_lease(self) -> bool:
        """True while no other handle has taken this handle's lease since it took it (one stat)."""
        if self._lease is None:
            return False
        key, held, _ = self._lease
        if self._unsettled_seal is None:
            return stamp_of(self.root / key) == held or self._adopt_restored()
        now = get_versioned(self.root, key)
        if now is None:
            return False
        if now[1] == held:
            return True
        body, doc = self._unsettled_seal
        if now[0] != body:
            return False
        self._hold(key, now[1], doc)
        return True

    def assert_lease(self) -> None:
        """Refuses (Fenced) once another handle has taken this handle's lease."""
        self.assert_unfenced()
        if self._lease is not None and not self.holds_lease():
            raise self.fence(self._lease[0], "another handle has taken this writer's lease")

    # -- objects --

    def note_read(self, key: str, stamp: Stamp | None) -> None:
        """The stamp of an object this handle read, taken before the read: the next write of it is
        conditional on that. (A write landing between the stamp and the read only makes ours refused, and
        the refusal rules then decide.)"""
        self._versions[key] = stamp

    def put(self, key: str, data: bytes) -> None:
        """Writes `data` at `key` conditional on the stamp last seen; Fenced when another live handle changed it."""
        self.assert_unfenced()
        expected = self._versions.get(key)
        for attempt in range(OVERWRITE_ATTEMPTS + 2):
            try:
                if expected is None:
                    stamp = put_if_absent(self.root, key, data)
                else:
                    stamp = put_if_stamp(self.root, key, data, expected)
            except BaseException:
                self._uncertain[key] = hashlib.sha256(data).digest()
                raise
            if stamp is not None:
                self._versions[key] = stamp
                self._uncertain.pop(key, None)
                return
            current = get_versioned(self.root, key)
            if current is not None and current[0] == data:  # rule 1
                self._versions[key] = current[1]
                self._uncertain.pop(key, None)
                return
            earlier = self._uncertain.pop(key, None)
            if current is not None and earlier is not None and earlier == hashlib.sha256(current[0]).digest():  # rule 2
                expected = current[1]
                continue
            if attempt < OVERWRITE_ATTEMPTS and self.holds_lease() and self.may_overwrite(key):  # rule 3
                expected = None if current is None else current[1]
                continue
            break
        raise self.fence(key, f"{key} was changed by another handle since this one last wrote or read it")

    def delete(self, key: str) -> None:
        """Removes the object at `key` (an all-fill shard is erased), conditional as `put` is."""
        self.assert_unfenced()
        expected = self._versions.get(key)
        for attempt in range(OVERWRITE_ATTEMPTS + 1):
            if delete_if_stamp(self.root, key, expected):
                self._versions[key] = None
                return
            current = stamp_of(self.root / key)
            if current is None:  # absent, as we meant it to be
                self._versions[key] = None
                return
            if attempt < OVERWRITE_ATTEMPTS and self.holds_lease() and self.may_overwrite(key):
                expected = current
                continue
            break
        raise self.fence(key, f"{key} was changed by another handle since this one last wrote or read it")

    def forget(self, keys: Iterable[str]) -> None:
        """Forgets keys this handle writes no more, so their stamps do not pile up over a long run."""
        for key in keys:
            self._versions.pop(key, None)
            self._uncertain.pop(key, None)


__all__ = [
    "INTENT_KEY",
    "LEASE_PREFIX",
    "LEASE_SCHEMA",
    "SEALS_KEPT",
    "FencedWrites",
    "announce_commit",
    "assert_tokens_sealed",
    "lease_bytes",
    "lease_key",
    "new_lease",
    "parse_lease",
    "seal_problem",
    "sorted_json",
    "token_digest",
    "wait_for_commit_in_flight",
    "withdraw_commit",
]
