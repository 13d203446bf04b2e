"""The reference (firecube 0.1.7) as a peer on a product we share, driven one command at a time.

Importing firecube costs seconds, so one process serves a whole test file: it reads one JSON command per
line on stdin and answers one JSON line on stdout, `{"ok": true, "value": ...}` or `{"ok": false,
"error": <exception class>, "message": ...}`. Every command names the product root and product; a fresh
ChunkManager serves each (closed after, which flushes the WAL writers it opened), except the claims
`hold` keeps, whose heartbeat threads run until `release_held`. CLI commands run in-process through
click's CliRunner, so their exit codes are the reference's own.

Commands: init, write_run, maintenance, consolidate, mark_replaced, runs, claims, state, replay_state,
rebuild, recover, clear_claim, hold, release_held, ensure_index, ensure_slot, cli.
"""

import json
import sys
import time
import traceback
from pathlib import Path

import zarr
from click.testing import CliRunner
from firecube.cli.main import cli
from firecube.core.controlplane.manager import ChunkManager
from firecube.core.controlplane.types import (
    ItemManifestEntry,
    ResolvedIndexRecord,
    SpanCoverage,
    WriteDomain,
    compute_resolved_index_identity_hash,
)
from firecube.core.product.identity import ProductIdentity
from firecube.core.slot_index import SlotAxis, SlotIndexModel
from firecube.core.storage.binding import StorageBinding
from firecube.core.storage.driver_config import StorageDriverConfig
from firecube.core.uris import storage_uri_from_target

HELD = []


def canonical(value):
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def manager(root, product):
    uri = storage_uri_from_target(f"file://{root}")
    binding = StorageBinding(
        identity=ProductIdentity.from_uri(uri, "zarr", product_name=product),
        driver=StorageDriverConfig.from_storage_config_or_default(None),
    )
    return ChunkManager(binding=binding, workspace=Path(root).parent)


def init(m, root, product, a):
    zarr.open_group(root, mode="w", zarr_format=3)


def write_run(m, root, product, a):
    run_id = a["run_id"]
    m.record_run_started(product=product, run_id=run_id, output_path=root, output_format="zarr", size=0, meta={})
    for i in range(a.get("spans", 0)):
        m.record_span(
            product=product, run_id=run_id, batch_id=str(i), group=a.get("group", "g"), status="active",
            coverage=SpanCoverage(group=a.get("group", "g"), arrays=["x"], time_index_ranges=[[i, i]]),
        )
    if a.get("replaces"):
        m.record_replacement_committed(
            product=product, run_id=run_id, replacing_run_id=run_id, replaced_span_keys=a["replaces"]
        )
    if a.get("live"):
        m.repo._writers[(product, run_id)].flush()
        return run_id
    m.record_run_terminal(
        product=product, run_id=run_id, output_path=root, output_format="zarr", size=0, meta={}, status="complete"
    )
    return run_id


def maintenance(m, root, product, a):
    run_id = a["run_id"]
    m.record_maintenance_started(product=product, run_id=run_id, op="delete")
    if a["status"] == "complete":
        m.record_maintenance_completed(product=product, run_id=run_id, op="delete")
    else:
        m.record_maintenance_failed(product=product, run_id=run_id, op="delete", error="boom")


def consolidate(m, root, product, a):
    m.record_time_coord_consolidation(groups=tuple(a["groups"]), timestamp_iso="2026-01-01T00:00:00Z")


def mark_replaced(m, root, product, a):
    return m.mark_chunks_replaced(a["keys"], product, time.time())


def runs(m, root, product, a):
    return sorted(
        ({"run_id": r.run_id, "status": r.status, "stale": r.stale} for r in m.list_runs(product=product)),
        key=lambda r: r["run_id"],
    )


def claims(m, root, product, a):
    return [{"domain": c.domain, "owner_id": c.owner_id, "stale": c.stale} for c in m.list_claims(product=product)]


def state(m, root, product, a):
    """Current state as readers get it (snapshot plus later runs), in canonical JSON."""
    return canonical(m.repo._load_current_state(product))


def replay_state(m, root, product, a):
    """Current state from the WAL alone."""
    return canonical(m.repo._project_records_from_runs(m.repo._list_run_entries(product)))


def rebuild(m, root, product, a):
    out = m.rebuild_snapshot(product)
    return {"skipped": bool(out.get("skipped")), "locked": bool(out.get("locked")), "records": out.get("records")}


def recover(m, root, product, a):
    cleared = m.clear_stale_claims(product=product, dry_run=False)
    abandoned = m.abandon_stale_runs(product=product, reason="interop recover", dry_run=False)
    return {"cleared": cleared.cleared, "abandoned": abandoned.abandoned}


def clear_claim(m, root, product, a):
    return m.clear_claim(product=product, domain_id=a["domain"], force=a.get("force", False))


def hold(m, root, product, a):
    domain = WriteDomain(product=product, category=a["category"], name=a["name"])
    HELD.append(m.acquire_claim(product=product, domain=domain, owner_id=a["owner"]))
    return domain.identifier


def release_held(m, root, product, a):
    while HELD:
        HELD.pop().release()


def ensure_index(m, root, product, a):
    items = None
    if a.get("items") is not None:
        items = tuple(ItemManifestEntry(**item) for item in a["items"])
    record = ResolvedIndexRecord(
        recorded_at="2026-01-01T00:00:00Z",
        recorded_by_run_id=a["run_id"],
        identity_hash=compute_resolved_index_identity_hash(a["index"], items),
        index=a["index"],
        items=items,
    )
    persisted, outcome = m.ensure_resolved_index(product=product, record=record, run_id=a["run_id"])
    return {"outcome": outcome, "identity_hash": persisted.identity_hash}


def ensure_slot(m, root, product, a):
    model = a["model"]
    slot_model = SlotIndexModel(
        name=model["name"],
        epoch=model["epoch"],
        groups={g: SlotAxis(cadence_s=v["cadence_s"], mode=v["mode"]) for g, v in model["groups"].items()},
        time_unit=model.get("time_unit"),
    )
    return m.ensure_slot_index_model(product=product, model=slot_model, run_id=a["run_id"]).identity_hash


def run_cli(m, root, product, a):
    result = CliRunner().invoke(cli, a["argv"])
    return {"code": result.exit_code, "output": result.output}


COMMANDS = {
    "init": init, "write_run": write_run, "maintenance": maintenance, "consolidate": consolidate,
    "mark_replaced": mark_replaced, "runs": runs, "claims": claims, "state": state,
    "replay_state": replay_state, "rebuild": rebuild, "recover": recover, "clear_claim": clear_claim,
    "hold": hold, "release_held": release_held, "ensure_index": ensure_index, "ensure_slot": ensure_slot,
    "cli": run_cli,
}


def main():
    print(json.dumps({"ok": True, "value": "ready"}), flush=True)
    for line in sys.stdin:
        command = json.loads(line)
        m = manager(command["root"], command["product"])
        try:
            value = COMMANDS[command["op"]](m, command["root"], command["product"], command.get("args", {}))
            answer = {"ok": True, "value": value}
        except Exception as exc:  # the outcome is the reference's answer, whatever it is
            answer = {"ok": False, "error": type(exc).__name__, "message": str(exc),
                      "trace": traceback.format_exc(limit=3)}
        finally:
            try:
                m.close()
            except Exception:
                pass
        print(json.dumps(answer), flush=True)


if __name__ == "__main__":
    main()
