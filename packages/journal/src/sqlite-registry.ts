import { createRequire } from "node:module";
import { type JournalRowConfig, PublishConflict, parseJsonExact } from "@zarr-stream/spec";
import type Database from "better-sqlite3";
import { stringify } from "lossless-json";
import { JournalError, RegistryUnavailable } from "./errors.js";
import type { JournalRegistry, RowPatch } from "./registry.js";
import { checkRowConfig, type JournalRow } from "./row.js";

export interface SqliteRegistryOptions {
  /**
   * Fault-injection seam for crash tests: called inside the write transaction after the insert and
   * after the patches, before COMMIT.
   */
  onTransactionStep?: (step: "inserted" | "patched") => void;
}

interface RowRecord {
  id: number;
  output_identifier: string;
  config: string;
}

const INSTALL = "npm install better-sqlite3 (beside @zarr-stream/journal, or -g beside a global zstream)";

let sqlite: typeof Database | undefined;

/**
 * better-sqlite3, required on first use rather than imported: it is an optional peer dependency, so the
 * rest of the package (composer, retention, watermarks) loads and works where it is not installed.
 */
function loadSqlite(): typeof Database {
  if (sqlite !== undefined) return sqlite;
  try {
    sqlite = createRequire(import.meta.url)("better-sqlite3") as typeof Database;
  } catch (cause) {
    const code = (cause as { code?: unknown }).code;
    if (code === "MODULE_NOT_FOUND" || code === "ERR_MODULE_NOT_FOUND") {
      throw new RegistryUnavailable(
        `the SQLite journal registry needs better-sqlite3, which is not installed: ${INSTALL}`,
        { cause },
      );
    }
    throw cause;
  }
  return sqlite;
}

/** Opens the database, naming a better-sqlite3 whose native addon is missing or built for another Node. */
function openDatabase(path: string): Database.Database {
  const Sqlite = loadSqlite();
  try {
    return new Sqlite(path);
  } catch (cause) {
    // better-sqlite3 loads its addon in the constructor: a missing build or another Node's ABI fails here.
    if (/bindings file|NODE_MODULE_VERSION|better_sqlite3\.node/.test(String((cause as Error).message))) {
      throw new RegistryUnavailable(
        `better-sqlite3 is installed but its native addon does not load under Node ${process.versions.node} (npm rebuild better-sqlite3): ${(cause as Error).message}`,
        { cause },
      );
    }
    throw cause;
  }
}

/**
 * JournalRegistry on one SQLite file (better-sqlite3): outputIdentifier is UNIQUE, insert-and-patch runs
 * in one transaction, and WAL with synchronous=FULL keeps a committed row across a killed process.
 */
export class SqliteJournalRegistry implements JournalRegistry {
  private readonly db: Database.Database;

  constructor(
    path: string,
    private readonly options: SqliteRegistryOptions = {},
  ) {
    this.db = openDatabase(path);
    this.db.pragma("journal_mode = WAL");
    this.db.pragma("synchronous = FULL");
    this.db.pragma("busy_timeout = 5000");
    this.db.exec(`CREATE TABLE IF NOT EXISTS journal_rows (
      id INTEGER PRIMARY KEY AUTOINCREMENT,
      output_identifier TEXT NOT NULL UNIQUE,
      config TEXT NOT NULL
    )`);
  }

  close(): void {
    this.db.close();
  }

  async current(): Promise<JournalRow | undefined> {
    const rec = this.db.prepare("SELECT * FROM journal_rows ORDER BY id DESC LIMIT 1").get() as
      | RowRecord
      | undefined;
    return rec && toRow(rec);
  }

  async rows(): Promise<JournalRow[]> {
    const recs = this.db.prepare("SELECT * FROM journal_rows ORDER BY id").all() as RowRecord[];
    return recs.map(toRow);
  }

  async find(outputIdentifier: string): Promise<JournalRow | undefined> {
    return this.findSync(outputIdentifier);
  }

  async register(
    config: JournalRowConfig,
    patches: readonly RowPatch[] = [],
    expectedCurrentId?: number | null,
  ): Promise<{ row: JournalRow; created: boolean }> {
    const checked = checkRowConfig(config, config.outputIdentifier);
    const run = this.db.transaction(() => {
      if (expectedCurrentId !== undefined) {
        // The head is compared before the identifier: a publisher that planned on an older head gets a
        // PublishConflict and plans again, even when another registered the same index with equal bytes
        // (answering with that row would drop this publisher's part). BEGIN IMMEDIATE holds the write
        // lock, so the head read here cannot move before COMMIT.
        const head = this.db.prepare("SELECT id FROM journal_rows ORDER BY id DESC LIMIT 1").get() as
          | { id: number }
          | undefined;
        if ((head?.id ?? null) !== expectedCurrentId) {
          throw new PublishConflict(
            `cannot register ${checked.outputIdentifier}: the head moved (row ${head?.id ?? "none"}, expected ${expectedCurrentId ?? "none"})`,
          );
        }
      }
      const existing = this.findSync(checked.outputIdentifier);
      if (existing) return { row: existing, created: false };
      const info = this.db
        .prepare("INSERT INTO journal_rows (output_identifier, config) VALUES (?, ?)")
        .run(checked.outputIdentifier, stringify(checked)!);
      this.options.onTransactionStep?.("inserted");
      this.applyPatches(patches);
      this.options.onTransactionStep?.("patched");
      return { row: { id: Number(info.lastInsertRowid), config: checked }, created: true };
    });
    return run.immediate();
  }

  async patch(patches: readonly RowPatch[]): Promise<void> {
    this.db.transaction(() => this.applyPatches(patches)).immediate();
  }

  async remove(outputIdentifiers: readonly string[]): Promise<void> {
    const del = this.db.prepare("DELETE FROM journal_rows WHERE output_identifier = ?");
    this.db
      .transaction(() => {
        for (const id of outputIdentifiers) del.run(id);
      })
      .immediate();
  }

  private findSync(outputIdentifier: string): JournalRow | undefined {
    const rec = this.db
      .prepare("SELECT * FROM journal_rows WHERE output_identifier = ?")
      .get(outputIdentifier) as RowRecord | undefined;
    return rec && toRow(rec);
  }

  private applyPatches(patches: readonly RowPatch[]): void {
    const update = this.db.prepare("UPDATE journal_rows SET config = ? WHERE output_identifier = ?");
    for (const { outputIdentifier, patch } of patches) {
      const row = this.findSync(outputIdentifier);
      if (!row) throw new JournalError(`cannot patch ${outputIdentifier}: no such row`, "registry");
      if (
        "outputIdentifier" in patch &&
        (patch as { outputIdentifier?: unknown }).outputIdentifier !== outputIdentifier
      ) {
        throw new JournalError(`cannot patch ${outputIdentifier}: outputIdentifier is immutable`, "registry");
      }
      const merged = checkRowConfig({ ...row.config, ...patch }, outputIdentifier);
      update.run(stringify(merged)!, outputIdentifier);
    }
  }
}

function toRow(rec: RowRecord): JournalRow {
  let parsed: unknown;
  try {
    parsed = parseJsonExact(rec.config, `registry row ${rec.id}`);
  } catch (cause) {
    throw new JournalError(`registry row ${rec.id}: configuration is not JSON`, "registry", { cause });
  }
  const config = checkRowConfig(parsed, `row ${rec.id}`);
  if (config.outputIdentifier !== rec.output_identifier) {
    throw new JournalError(
      `registry row ${rec.id}: configuration names ${config.outputIdentifier}, registered as ${rec.output_identifier}`,
      "registry",
    );
  }
  return { id: rec.id, config };
}
