// An owner and a contributor commit together on one store that faults one call, every call in turn:
// the call fails before reaching the store or loses its acknowledgement after it, and the caller either
// retries the same call or drops its handle and resumes (as a restarted process does: a new handle, its
// uncommitted records written again). After every step the committed state is a commit boundary whose
// records read what was written; in the end the store commits exactly what an uninterrupted run commits.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { CommitToken, Region, StreamSchema } from "@zarr-stream/spec";
import { MemoryStore } from "@zarr-stream/store";
import { leaseKey, ZarrStreamWriter } from "../src/index.js";
import { type FaultKind, FaultStore, InjectedFault } from "./fault-store.js";
import { committedIndices, committedRecords, gridSchema, recordArrays, resumeOrCreate } from "./helpers.js";

const MINE: Region = { lat: [0, 2] };
const THEIRS: Region = { lat: [2, 4] };
const owned = (name: string, partitioned: boolean) => partitioned || name !== "temperature";
const contributed = (_: string, partitioned: boolean) => partitioned;
const t = (r: number) => 10 * (r + 1);

interface Workload {
  indexed: boolean;
  /** Records per commit, written in `order`. */
  batches: number[];
  order: number[];
}

type Who = "owner" | "contributor";
type Step =
  | { kind: "create" }
  | { kind: "join" }
  | { kind: "write"; who: Who; r: number }
  | { kind: "flush"; who: Who }
  | { kind: "commit" }
  | { kind: "close" };

function stepsOf(w: Workload): Step[] {
  const steps: Step[] = [{ kind: "create" }, { kind: "join" }];
  let next = 0;
  for (const size of w.batches) {
    for (let k = 0; k < size; k++, next++) {
      const r = w.order[next]!;
      steps.push({ kind: "write", who: "owner", r }, { kind: "write", who: "contributor", r });
    }
    steps.push({ kind: "flush", who: "owner" }, { kind: "flush", who: "contributor" }, { kind: "commit" });
  }
  // The owner's close commits its own last token with one from every other writer.
  steps.push({ kind: "flush", who: "contributor" }, { kind: "close" });
  return steps;
}

function schemaOf(w: Workload): StreamSchema {
  return gridSchema(w.indexed ? { time_mode: { indexed: { times: w.order.map((_, r) => t(r)) } } } : {});
}

const OWNER = { kind: "owner", nWriters: 2 } as const;
const CONTRIBUTOR = { kind: "contributor", id: 1 } as const;

class Runner {
  owner: ZarrStreamWriter | undefined;
  contributor: ZarrStreamWriter | undefined;
  readonly tokens: Partial<Record<Who, CommitToken>> = {};
  /** Records each writer has written, by index (the uncommitted ones are written again after a resume). */
  readonly written: Record<Who, Set<number>> = { owner: new Set(), contributor: new Set() };

  constructor(
    readonly store: FaultStore,
    readonly w: Workload,
  ) {}

  async finishCreate(): Promise<void> {
    this.owner = await resumeOrCreate(this.store, schemaOf(this.w), OWNER, MINE, this.store.inner);
  }

  /**
   * `who` drops its handle and resumes (joins, if its lease was never written); its token is dropped
   * with the handle, and every record of its own not committed is written again.
   */
  async resume(who: Who): Promise<void> {
    const schema = schemaOf(this.w);
    if (who === "owner") await this.finishCreate();
    else
      this.contributor =
        (await this.store.inner.size(leaseKey(1))) === undefined
          ? await ZarrStreamWriter.join(this.store, CONTRIBUTOR, THEIRS)
          : await ZarrStreamWriter.resume(this.store, CONTRIBUTOR, THEIRS, undefined, { schema });
    this.tokens[who] = undefined;
    const committed = await committedIndices(this.store.inner);
    // A held token whose records the manifest commits already is spent (a commit that landed unheard
    // of): the driver learns that from the manifest, as StreamRun's writer 0 does at open.
    for (const other of ["owner", "contributor"] as const) {
      const records = this.tokens[other]?.records ?? [];
      if (records.length > 0 && records.every((r) => committed.has(r.index))) this.tokens[other] = undefined;
    }
    const again = [...this.written[who]].filter((r) => !committed.has(r)).sort((a, b) => a - b);
    for (const r of again) await this.run({ kind: "write", who, r });
  }

  async run(step: Step): Promise<void> {
    const schema = schemaOf(this.w);
    switch (step.kind) {
      case "create":
        this.owner = await ZarrStreamWriter.create(this.store, schema, OWNER, MINE);
        return;
      case "join":
        this.contributor = await ZarrStreamWriter.join(this.store, CONTRIBUTOR, THEIRS);
        return;
      case "write": {
        const handle = step.who === "owner" ? this.owner! : this.contributor!;
        const arrays = recordArrays(
          schema,
          step.r,
          step.who === "owner" ? MINE : THEIRS,
          step.who === "owner" ? owned : contributed,
        );
        if (this.w.indexed) await handle.writeRecordAt(step.r, t(step.r), arrays);
        else await handle.writeRecord(t(step.r), arrays);
        this.written[step.who].add(step.r);
        return;
      }
      case "flush":
        await this.flush(step.who);
        return;
      case "commit":
        // A writer that resumed since its flush flushes again: its old token went with its handle.
        await this.owner!.commit([await this.flush("owner"), await this.flush("contributor")]);
        this.tokens.owner = undefined;
        this.tokens.contributor = undefined;
        return;
      case "close":
        await this.owner!.close([await this.flush("contributor")]);
    }
  }

  /** A flush that returned a token is not repeated: the token is what the commit carries. */
  private async flush(who: Who): Promise<CommitToken> {
    this.tokens[who] ??= await (who === "owner" ? this.owner! : this.contributor!).flush();
    return this.tokens[who];
  }
}

async function uninterrupted(w: Workload): Promise<{ calls: number; committed: Map<number, string> }> {
  const store = new FaultStore(new MemoryStore());
  const runner = new Runner(store, w);
  for (const step of stepsOf(w)) await runner.run(step);
  return { calls: store.calls, committed: await committedRecords(store.inner) };
}

/** Whose call a step is: a commit or close is the owner's. */
const whoseStep = (step: Step): Who =>
  step.kind === "join" || ((step.kind === "write" || step.kind === "flush") && step.who === "contributor")
    ? "contributor"
    : "owner";

type Recovery = "retry" | "resume";

async function faultCase(
  w: Workload,
  at: number,
  kind: FaultKind,
  recovery: Recovery,
  ref: Map<number, string>,
): Promise<void> {
  const store = new FaultStore(new MemoryStore(), { at, kind });
  const runner = new Runner(store, w);
  const where = `fault at call ${at} (${kind}, ${recovery})`;
  for (const step of stepsOf(w)) {
    try {
      await runner.run(step);
    } catch (err) {
      if (!(err instanceof InjectedFault)) throw new Error(`${step.kind}, ${where}: ${err}`, { cause: err });
      // A create cut short is finished by resume, as the store may exist already (or nothing of it was
      // written, and creating it again is right); a join cut short likewise.
      try {
        if (step.kind === "create") await runner.finishCreate();
        else if (recovery === "retry") await runner.run(step);
        else {
          await runner.resume(whoseStep(step));
          if (step.kind !== "join") await runner.run(step);
        }
      } catch (again) {
        throw new Error(`recovering ${step.kind}, ${where}: ${again}`, { cause: again });
      }
    }
    for (const [i, values] of await committedRecords(store.inner))
      assert.equal(values, ref.get(i), `record ${i} after ${step.kind}, ${where}`);
  }
  assert.ok(store.fired, `${where} never fired (${store.calls} calls)`);
  assert.deepEqual(await committedRecords(store.inner), ref, where);
}

describe("owner and contributor: every store call faults in turn, and the caller retries or resumes", () => {
  const fixed: Workload[] = [
    { indexed: false, batches: [2, 1], order: [0, 1, 2] },
    { indexed: true, batches: [2, 1], order: [2, 0, 1] },
    { indexed: false, batches: [1, 1, 1], order: [0, 1, 2] },
    { indexed: true, batches: [1, 2], order: [1, 2, 0] },
  ];
  for (const w of fixed) {
    it(`${w.indexed ? "indexed" : "append"} ${JSON.stringify(w.batches)}: commit boundary always, retry or resume converges`, async () => {
      const { calls, committed } = await uninterrupted(w);
      assert.equal(committed.size, w.order.length);
      for (let at = 1; at <= calls; at++)
        for (const kind of ["fail", "lose-ack"] as const)
          for (const recovery of ["retry", "resume"] as const)
            await faultCase(w, at, kind, recovery, committed);
    });
  }
});
