import { parseArgs } from "node:util";
import { ProtocolError, parseJsonExact, stringifyJsonExact, ZarrStreamError } from "@zarr-stream/spec";
import { openStore, type Store } from "@zarr-stream/store";
import type { ClaimObserver } from "./claim-observer.js";
import type { ClaimView, ClearedClaim } from "./claims.js";
import { ControlPlane } from "./control-plane.js";
import { type Clock, isObject, type JsonObject } from "./documents.js";
import { ClaimConflict, ManifestError, NoControlPlane, SnapshotRebuildRefused } from "./errors.js";
import { INDEX_KEY, ROOT, SLOT_INDEX_KEY } from "./layout.js";
import { canonicalJson } from "./pyjson.js";
import { ATTR_INDEX, type ResolvedIndexDeclaration, readResolvedIndexRecord } from "./resolved-index.js";
import { readSlotIndexRecord } from "./slot-index.js";
import type { RunView } from "./wal-reader.js";

export interface CliIo {
  out(text: string): void;
  err(text: string): void;
  /** Opens the store named by --store; default: @zarr-stream/store's openStore (a path gives an FsStore). */
  openStore?(dir: string): Store | Promise<Store>;
  now?: Clock;
  /** The monotonic clock that judges claim staleness (see ClaimObserver); default the process's own. */
  observer?: ClaimObserver;
}

/** The help text of `zstream cp` (zstream prints it for --help on cp and every cp subcommand). */
export const CONTROL_PLANE_USAGE = `Usage: zstream cp <subcommand> --store STORE [options]

The .firecube control plane of a store: runs, claims, snapshots and the resolved index. STORE must exist
and have a control plane (a .firecube/ object); a cp command never creates one.

Subcommands:
  runs list [--json]
  runs abandon (--run-id ID | --all-stale) [--reason TEXT] [--dry-run] [--force]
  claims list [--json]
  claims clear (--domain PRODUCT:CATEGORY:NAME | --all-stale) [--force] [--dry-run]
  snapshots rebuild | snapshots status [--json]
  index show | index verify | index rebuild [--json]   (show and verify exit 3 when there is no index record)
  recover [--reason TEXT] [--dry-run] [--json]

Options on every subcommand:
  --store STORE   a directory, file:// or s3:// URL (required)
  --product NAME  default: inferred from runs or claims
  -h, --help      show this help

Read only: runs list, claims list, snapshots status, index show, index verify, and --dry-run.
Exit codes: 0 ok, 1 refused or incomplete (a fresh run or claim, recover left something), 2 usage,
3 store or contract error (no control plane, ControlPlaneCorrupt, StoreError, ...).

Example:
  zstream cp runs list --store /tmp/run.zarr --json
`;
const USAGE = CONTROL_PLANE_USAGE;

/** Every subcommand, so a misspelt one is a usage error before the store is opened. */
const SUBCOMMANDS = new Set([
  "runs list",
  "runs abandon",
  "claims list",
  "claims clear",
  "snapshots rebuild",
  "snapshots status",
  "index show",
  "index verify",
  "index rebuild",
  "recover",
]);

/**
 * Exit 1 rather than 3: a refusal to touch something fresh or blocking (like a recovery that could not
 * complete), `index verify` finding the record malformed or its hash wrong (the check failed), and
 * `index rebuild` refusing attributes that do not verify (row 4, firecube's ManifestError).
 */
function refusedOrFailed(e: unknown, cmd: string): boolean {
  if ((cmd === "index verify" || cmd === "index rebuild") && e instanceof ManifestError) return true;
  return e instanceof ProtocolError || e instanceof ClaimConflict || e instanceof SnapshotRebuildRefused;
}

class UsageError extends Error {}

/** `index show` / `index verify` on a product without an index record: firecube's exit code. */
const EXIT_NO_RECORD = 3;

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
  help: { type: "boolean", short: "h" },
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
  if (r.recordLags) row.record_lags = true;
  if (r.corrupt) row.corrupt = r.corrupt.message;
  return row;
}

/** A stale run that recovery abandons: live or orphaned by its run.json (and WAL), silent past its threshold. */
function abandonable(r: RunView): boolean {
  return (r.state === "live" || r.state === "orphaned") && r.stale;
}

function claimLine(c: ClaimView): JsonObject {
  return { domain: c.claim.domain, owner_id: c.claim.owner_id, age_s: c.ageS, stale: c.stale, file: c.key };
}

/** A cleared claim by its domain, or by its file when the file was unreadable. */
function clearedName(c: ClearedClaim): string {
  return c.domain ?? `${c.key} (corrupt: ${c.corrupt})`;
}

async function inferProduct(store: Store, io: CliIo): Promise<string> {
  const probe = await ControlPlane.open(store, { product: "?", now: io.now ?? (() => Date.now() / 1000) });
  for (const r of await probe.listRuns()) if (r.record) return r.record.product;
  for (const c of await probe.listClaims()) return c.claim.product;
  return "unknown";
}

/**
 * What `index rebuild` rebuilds from: the record, or, without one, the mirrored attributes' payload. The
 * precedence rows then decide: attrs without a record (row 4) are rebuilt from only when their hash is
 * their payload's, as firecube's ManifestError refuses them otherwise.
 */
async function declarationForRebuild(cp: ControlPlane): Promise<ResolvedIndexDeclaration | undefined> {
  const record = await readResolvedIndexRecord(cp.store);
  if (record) return record.items ? { index: record.index, items: record.items } : { index: record.index };
  const attrs = await cp.readRootAttributes();
  const payload = attrs?.[ATTR_INDEX];
  if (typeof payload !== "string") return undefined;
  let index: unknown;
  try {
    index = parseJsonExact(payload, ATTR_INDEX);
  } catch (e) {
    throw new ManifestError(
      `root attribute ${ATTR_INDEX} is not JSON (${(e as Error).message}); nothing to rebuild from (row 4)`,
      "attrs-without-record",
      INDEX_KEY,
    );
  }
  if (!isObject(index)) {
    throw new ManifestError(
      `root attribute ${ATTR_INDEX} is not a JSON object; nothing to rebuild from (row 4)`,
      "attrs-without-record",
      INDEX_KEY,
    );
  }
  return { index };
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

/**
 * Abandons stale runs, clears claims that are stale and silent while observed, rebuilds the snapshot.
 * Exit 0 only when nothing is left over (no claim, no live run, snapshot rebuilt); 1 otherwise, with the
 * report saying what is left. A dry run answers whether a real one would complete.
 */
async function recover(
  cp: ControlPlane,
  f: Flags,
  print: (v: unknown, text: string) => void,
): Promise<number> {
  const dry = f["dry-run"] ?? false;
  const runs = await cp.listRuns();
  const stale = runs.filter(abandonable);
  // A run whose WAL ended it but whose run.json does not gets the run.json its writer did not write.
  const repaired: string[] = [];
  for (const r of runs.filter((v) => v.recordLags)) {
    if (dry || (await cp.repairRunRecord(r))) repaired.push(r.runId);
  }
  const abandoned = new Set<string>();
  for (const r of stale) {
    if (dry) {
      abandoned.add(r.runId);
      continue;
    }
    try {
      await cp.abandonRun(r.runId, { reason: f.reason ?? "abandoned by recover" });
      abandoned.add(r.runId);
    } catch (e) {
      // Stale by its own clock but written recently by the store's: left live and reported below.
      if (!(e instanceof ProtocolError)) throw e;
    }
  }
  const cleared = await cp.sweepStaleClaims({ dryRun: dry });
  const gone = new Set(cleared.map((c) => c.key));
  const scan = await cp.scanClaims();
  const remaining = [
    ...scan.claims.filter((c) => !gone.has(c.key)).map((c) => `${c.claim.domain} (${c.claim.owner_id})`),
    ...scan.corrupt.filter((c) => !gone.has(c.key)).map((c) => `${c.key} (corrupt)`),
  ];
  const after = await cp.listRuns();
  const live = after
    .filter((r) => (r.state === "live" || r.state === "orphaned") && !abandoned.has(r.runId))
    .map((r) => r.runId);
  const corrupt = after.filter((r) => r.corrupt).map((r) => `${r.runId} (${r.state}): ${r.corrupt!.message}`);
  let snapshot: unknown = "skipped (dry run)";
  let rebuilt = false;
  if (!dry) {
    try {
      const r = await cp.rebuildSnapshot();
      snapshot = r;
      rebuilt = r.rebuilt;
    } catch (e) {
      snapshot = `refused: ${(e as Error).message}`;
    }
  }
  const complete = remaining.length === 0 && live.length === 0 && (dry || rebuilt);
  const report = {
    abandoned: [...abandoned],
    repaired,
    corrupt_runs: corrupt,
    cleared: cleared.map(clearedName),
    remaining_claims: remaining,
    live_runs: live,
    snapshot,
    complete,
    dry_run: dry,
  };
  const lines = [
    `abandoned: ${report.abandoned.join(", ") || "none"}`,
    `repaired run.json: ${repaired.join(", ") || "none"}`,
    `cleared: ${report.cleared.join(", ") || "none"}`,
    `snapshot: ${typeof snapshot === "string" ? snapshot : stringifyJsonExact(snapshot)}`,
  ];
  if (!complete) {
    lines.push(
      `incomplete: ${[...remaining.map((c) => `claim ${c}`), ...live.map((r) => `live run ${r}`)].join(", ") || "snapshot not rebuilt"}`,
    );
  }
  if (corrupt.length > 0) lines.push(`corrupt runs: ${corrupt.join("; ")}`);
  print(report, lines.join("\n"));
  return complete ? 0 : 1;
}

async function dispatch(cp: ControlPlane, words: string[], f: Flags, io: CliIo): Promise<number> {
  // Records read exactly may hold bigints and IntegralFloats, which JSON.stringify refuses or rounds.
  const print = (value: unknown, text: string) =>
    io.out(f.json ? `${stringifyJsonExact(value)}\n` : `${text}\n`);
  const cmd = words.join(" ");
  switch (cmd) {
    case "runs list": {
      const runs = (await cp.listRuns()).map(runLine);
      print(
        runs,
        runs
          .map(
            (r) =>
              `${r.run_id}\t${r.state}${r.stale ? " (stale)" : ""}${r.orphan_reason ? ` ${r.orphan_reason}` : ""}\t${r.events} events${r.corrupt ? `\tcorrupt: ${r.corrupt}` : ""}`,
          )
          .join("\n") || "no runs",
      );
      return 0;
    }
    case "runs abandon": {
      const runs = await cp.listRuns();
      const targets = f["run-id"] ? [f["run-id"]] : runs.filter(abandonable).map((r) => r.runId);
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
      const scan = await cp.scanClaims();
      const list = [
        ...scan.claims.map(claimLine),
        ...scan.corrupt.map((c) => ({ file: c.key, corrupt: c.problem })),
      ];
      print(
        list,
        list
          .map((c) =>
            "corrupt" in c
              ? `${c.file}\tcorrupt: ${c.corrupt}`
              : `${c.domain}\t${c.owner_id}\t${(c.age_s as number).toFixed(1)} s${c.stale ? " (stale)" : ""}`,
          )
          .join("\n") || "no claims",
      );
      return 0;
    }
    case "claims clear": {
      if (f["all-stale"]) {
        const cleared = await cp.sweepStaleClaims({ dryRun: f["dry-run"] ?? false });
        const names = cleared.map(clearedName);
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
      const report: JsonObject = { cleared: cleared ? [f.domain] : [] };
      if (cleared?.corrupt !== undefined) report.corrupt = cleared.corrupt;
      print(
        report,
        cleared
          ? `cleared: ${f.domain}${cleared.corrupt !== undefined ? ` (corrupt: ${cleared.corrupt})` : ""}`
          : `no claim for ${f.domain}`,
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
      return record ? 0 : EXIT_NO_RECORD;
    }
    case "index verify": {
      const v = await cp.verifyResolvedIndex();
      print(v, `record ${v.record}${v.identityHash ? ` ${v.identityHash}` : ""}; attrs ${v.attrs}`);
      if (v.attrs === "drift" || (v.record === "absent" && v.attrs !== "absent")) return 1;
      if (v.record === "absent") {
        // firecube's rule: a product whose only record is a legacy slot-index one needs a rebuild (1);
        // one with no record at all has nothing to verify (3).
        if (await readSlotIndexRecord(cp.store)) {
          io.err(`${SLOT_INDEX_KEY} without ${INDEX_KEY}: a legacy index record; run index rebuild\n`);
          return 1;
        }
        return EXIT_NO_RECORD;
      }
      return 0;
    }
    case "index rebuild":
      return indexRebuild(cp, print);
    case "recover":
      return recover(cp, f, print);
    default:
      throw new UsageError(`unknown command: ${cmd || "(none)"}`);
  }
}

/**
 * The control-plane commands of the later CLI, in-process: returns the exit code (0 ok, 1 refused or
 * incomplete, 2 usage, 3 store or contract error). A store without `.firecube/` is NoControlPlane before
 * anything is read or written.
 */
export async function runControlPlaneCli(argv: string[], io: CliIo): Promise<number> {
  let flags: Flags;
  let words: string[];
  try {
    const parsed = parseArgs({ args: argv, options: OPTIONS, allowPositionals: true, strict: true });
    if (parsed.values.help) {
      io.out(USAGE);
      return 0;
    }
    flags = parsed.values as Flags;
    words = parsed.positionals;
    const cmd = words.join(" ");
    if (!SUBCOMMANDS.has(cmd)) throw new UsageError(`unknown command: ${cmd || "(none)"}`);
    if (!flags.store) throw new UsageError("--store STORE is required");
    if (cmd === "runs abandon" && !flags["run-id"] === !flags["all-stale"])
      throw new UsageError("runs abandon needs exactly one of --run-id or --all-stale");
    if (cmd === "claims clear" && !flags.domain === !flags["all-stale"])
      throw new UsageError("claims clear needs exactly one of --domain or --all-stale");
  } catch (e) {
    io.err(`${(e as Error).message}\n\n${USAGE}`);
    return 2;
  }
  try {
    const store = await (io.openStore ?? openStore)(flags.store);
    // The index commands read the root attributes as well (row 4: attributes without a record, and
    // nothing under .firecube/), and answer a product without either as firecube does (exit 3).
    if (words[0] !== "index" && (await store.list(ROOT)).length === 0)
      throw new NoControlPlane(
        `${flags.store} has no control plane (no ${ROOT} in ${store.url}): nothing to ${words[0] === "recover" ? "recover" : "read"}`,
      );
    const product = flags.product ?? (await inferProduct(store, io));
    const opts = {
      product,
      claimHeartbeatIntervalS: 0,
      runHeartbeatIntervalS: 0,
      ...(io.now ? { now: io.now } : {}),
      ...(io.observer ? { observer: io.observer } : {}),
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
      return refusedOrFailed(e, words.join(" ")) ? 1 : 3;
    }
    // The caller's own errors (zstream's: a STORE that does not exist) carry their own exit code.
    throw e;
  }
}
