import { parseArgs } from "node:util";
import { parseJsonExact, ZarrStreamError } from "@zarr-stream/spec";
import { openStore, type Store } from "@zarr-stream/store";
import type { ClaimView } from "./claims.js";
import { ControlPlane } from "./control-plane.js";
import type { Clock, JsonObject } from "./documents.js";
import { canonicalJson } from "./pyjson.js";
import { ATTR_INDEX, type ResolvedIndexDeclaration, readResolvedIndexRecord } from "./resolved-index.js";
import type { RunView } from "./wal-reader.js";

export interface CliIo {
  out(text: string): void;
  err(text: string): void;
  /** Opens the store named by --store; default: @zarr-stream/store's openStore (a path gives an FsStore). */
  openStore?(dir: string): Store | Promise<Store>;
  now?: Clock;
}

const USAGE = `usage: <command> --store DIR [options]
  runs list [--json]
  runs abandon (--run-id ID | --all-stale) [--reason TEXT] [--dry-run] [--force]
  claims list [--json]
  claims clear (--domain PRODUCT:CATEGORY:NAME | --all-stale) [--force] [--dry-run]
  snapshots rebuild | snapshots status [--json]
  index show | index verify | index rebuild [--json]
  recover [--reason TEXT] [--dry-run]
  common: --product NAME (default: inferred from runs or claims)`;

class UsageError extends Error {}

const OPTIONS = {
  store: { type: "string" },
  product: { type: "string" },
  "run-id": { type: "string" },
  "all-stale": { type: "boolean" },
  reason: { type: "string" },
  "dry-run": { type: "boolean" },
  domain: { type: "string" },
  force: { type: "boolean" },
  json: { type: "boolean" },
  // The reference asks for this in non-interactive use; we never prompt, so it is accepted and ignored.
  "yes-i-really-mean-it": { type: "boolean" },
} as const;

type Flags = {
  store?: string;
  product?: string;
  "run-id"?: string;
  "all-stale"?: boolean;
  reason?: string;
  "dry-run"?: boolean;
  domain?: string;
  force?: boolean;
  json?: boolean;
};

function runLine(r: RunView): JsonObject {
  const row: JsonObject = { run_id: r.runId, state: r.state, stale: r.stale, events: r.events.length };
  if (r.orphanReason) row.orphan_reason = r.orphanReason;
  if (r.updatedAt !== undefined) row.updated_at = r.updatedAt;
  if (r.completedAt !== undefined) row.completed_at = r.completedAt;
  return row;
}

function claimLine(c: ClaimView): JsonObject {
  return { domain: c.claim.domain, owner_id: c.claim.owner_id, age_s: c.ageS, stale: c.stale, file: c.key };
}

async function inferProduct(store: Store, io: CliIo): Promise<string> {
  const probe = await ControlPlane.open(store, { product: "?", now: io.now ?? (() => Date.now() / 1000) });
  for (const r of await probe.listRuns()) if (r.record) return r.record.product;
  for (const c of await probe.listClaims()) return c.claim.product;
  return "unknown";
}

/** `--domain` takes the full `product:category:name` (as `claims list` prints it). */
async function declarationForRebuild(cp: ControlPlane): Promise<ResolvedIndexDeclaration | undefined> {
  const record = await readResolvedIndexRecord(cp.store);
  if (record) return record.items ? { index: record.index, items: record.items } : { index: record.index };
  const attrs = await cp.readRootAttributes();
  const payload = attrs?.[ATTR_INDEX];
  if (typeof payload === "string") return { index: parseJsonExact(payload, ATTR_INDEX) as JsonObject };
  return undefined;
}

async function indexRebuild(cp: ControlPlane, print: (v: unknown, text: string) => void): Promise<number> {
  const decl = await declarationForRebuild(cp);
  if (!decl)
    throw new UsageError("index rebuild: no index/current.json and no mirrored attributes to rebuild from");
  const runId = await cp.startRun({ meta: { operation: "index_rebuild" } });
  try {
    await cp.appendEvent(runId, "maintenance_started", { operation: "index_rebuild" });
    const result = await cp.rebuildResolvedIndex(decl, { runId });
    await cp.appendEvent(runId, "maintenance_completed", { operation: "index_rebuild" });
    await cp.completeRun(runId);
    print(
      { outcome: result.outcome, identity_hash: result.identityHash, run_id: runId },
      `${result.outcome} ${result.identityHash}`,
    );
    return 0;
  } catch (e) {
    await cp.appendEvent(runId, "maintenance_failed", { operation: "index_rebuild", error: String(e) });
    await cp.failRun(runId, (e as Error).message);
    throw e;
  }
}

async function dispatch(cp: ControlPlane, words: string[], f: Flags, io: CliIo): Promise<number> {
  const print = (value: unknown, text: string) => io.out(f.json ? `${JSON.stringify(value)}\n` : `${text}\n`);
  const cmd = words.join(" ");
  switch (cmd) {
    case "runs list": {
      const runs = (await cp.listRuns()).map(runLine);
      print(
        runs,
        runs
          .map(
            (r) =>
              `${r.run_id}\t${r.state}${r.stale ? " (stale)" : ""}${r.orphan_reason ? ` ${r.orphan_reason}` : ""}\t${r.events} events`,
          )
          .join("\n") || "no runs",
      );
      return 0;
    }
    case "runs abandon": {
      if (!f["run-id"] === !f["all-stale"])
        throw new UsageError("runs abandon needs exactly one of --run-id or --all-stale");
      const runs = await cp.listRuns();
      const targets = f["run-id"]
        ? [f["run-id"]]
        : runs.filter((r) => (r.state === "live" || r.state === "orphaned") && r.stale).map((r) => r.runId);
      const done: string[] = [];
      for (const id of targets) {
        if (!f["dry-run"])
          await cp.abandonRun(id, { reason: f.reason ?? "abandoned by operator", force: f.force ?? false });
        done.push(id);
      }
      print(
        { abandoned: done, dry_run: f["dry-run"] ?? false },
        `${f["dry-run"] ? "would abandon" : "abandoned"}: ${done.join(", ") || "none"}`,
      );
      return 0;
    }
    case "claims list": {
      const list = (await cp.listClaims()).map(claimLine);
      print(
        list,
        list
          .map(
            (c) =>
              `${c.domain}\t${c.owner_id}\t${(c.age_s as number).toFixed(1)} s${c.stale ? " (stale)" : ""}`,
          )
          .join("\n") || "no claims",
      );
      return 0;
    }
    case "claims clear": {
      if (!f.domain === !f["all-stale"])
        throw new UsageError("claims clear needs exactly one of --domain or --all-stale");
      if (f["all-stale"]) {
        const cleared = await cp.sweepStaleClaims({ dryRun: f["dry-run"] ?? false });
        const names = cleared.map((c) => c.claim.domain);
        print(
          { cleared: names, dry_run: f["dry-run"] ?? false },
          `${f["dry-run"] ? "would clear" : "cleared"}: ${names.join(", ") || "none"}`,
        );
        return 0;
      }
      if (f["dry-run"]) {
        print({ cleared: [f.domain], dry_run: true }, `would clear: ${f.domain}`);
        return 0;
      }
      const cleared = await cp.clearClaim(f.domain!, { force: f.force ?? false });
      print(
        { cleared: cleared ? [f.domain] : [] },
        cleared ? `cleared: ${f.domain}` : `no claim for ${f.domain}`,
      );
      return 0;
    }
    case "snapshots rebuild": {
      const r = await cp.rebuildSnapshot();
      print(
        r,
        r.rebuilt
          ? `generation ${r.generation}: ${r.records} records`
          : `skipped: compact.lock held by ${r.holder}`,
      );
      return r.rebuilt ? 0 : 1;
    }
    case "snapshots status": {
      const s = await cp.snapshotStatus();
      print(
        s,
        s.valid
          ? `generation ${s.latest!.generation}: ${s.records} records (${s.generations.length} generations)`
          : `no usable snapshot: ${s.problem}`,
      );
      return 0;
    }
    case "index show": {
      const record = await readResolvedIndexRecord(cp.store);
      print(record ?? null, record ? canonicalJson(record) : "no index/current.json");
      return 0;
    }
    case "index verify": {
      const v = await cp.verifyResolvedIndex();
      print(v, `record ${v.record}${v.identityHash ? ` ${v.identityHash}` : ""}; attrs ${v.attrs}`);
      return v.attrs === "drift" || (v.record === "absent" && v.attrs !== "absent") ? 1 : 0;
    }
    case "index rebuild":
      return indexRebuild(cp, print);
    case "recover": {
      const dry = f["dry-run"] ?? false;
      const stale = (await cp.listRuns()).filter(
        (r) => (r.state === "live" || r.state === "orphaned") && r.stale,
      );
      for (const r of stale)
        if (!dry) await cp.abandonRun(r.runId, { reason: f.reason ?? "abandoned by recover" });
      const cleared = await cp.sweepStaleClaims({ dryRun: dry });
      let snapshot: unknown = "skipped (dry run)";
      if (!dry) {
        try {
          snapshot = await cp.rebuildSnapshot();
        } catch (e) {
          snapshot = `refused: ${(e as Error).message}`;
        }
      }
      const report = {
        abandoned: stale.map((r) => r.runId),
        cleared: cleared.map((c) => c.claim.domain),
        snapshot,
        dry_run: dry,
      };
      print(
        report,
        `abandoned: ${report.abandoned.join(", ") || "none"}\ncleared: ${report.cleared.join(", ") || "none"}\nsnapshot: ${typeof snapshot === "string" ? snapshot : JSON.stringify(snapshot)}`,
      );
      return 0;
    }
    default:
      throw new UsageError(`unknown command: ${cmd || "(none)"}`);
  }
}

/** The control-plane commands of the later CLI, in-process: returns the exit code (0 ok, 1 refused, 2 usage). */
export async function runControlPlaneCli(argv: string[], io: CliIo): Promise<number> {
  let flags: Flags;
  let words: string[];
  try {
    const parsed = parseArgs({ args: argv, options: OPTIONS, allowPositionals: true, strict: true });
    flags = parsed.values as Flags;
    words = parsed.positionals;
    if (!flags.store) throw new UsageError("--store DIR is required");
  } catch (e) {
    io.err(`${(e as Error).message}\n${USAGE}\n`);
    return 2;
  }
  try {
    const store = await (io.openStore ?? openStore)(flags.store);
    const product = flags.product ?? (await inferProduct(store, io));
    const opts = {
      product,
      claimHeartbeatIntervalS: 0,
      runHeartbeatIntervalS: 0,
      ...(io.now ? { now: io.now } : {}),
    };
    const cp = await ControlPlane.open(store, opts);
    try {
      return await dispatch(cp, words, flags, io);
    } finally {
      await cp.close();
    }
  } catch (e) {
    if (e instanceof UsageError) {
      io.err(`${e.message}\n${USAGE}\n`);
      return 2;
    }
    if (e instanceof ZarrStreamError) {
      io.err(`${e.name}: ${e.message}\n`);
      return 1;
    }
    throw e;
  }
}
