// An owner and a contributor commit together on one store that faults one call, every call in turn:
// the call fails before reaching the store or loses its acknowledgement after it, the caller retries the
// same call, and after every step the committed state is a commit boundary whose records read what was
// written; in the end the store commits exactly what an uninterrupted run commits.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { CommitToken, Region, StreamSchema } from "@zarr-stream/spec";
import { type FencingStore, MemoryStore } from "@zarr-stream/store";
import { ZarrStreamWriter } from "../src/index.js";
import { type FaultKind, FaultStore, InjectedFault } from "./fault-store.js";
import { committedRecords, gridSchema, recordArrays, resumeOrCreate } from "./helpers.js";

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

class Runner {
  owner: ZarrStreamWriter | undefined;
  contributor: ZarrStreamWriter | undefined;
  readonly tokens: Partial<Record<Who, CommitToken>> = {};

  constructor(
    readonly store: FencingStore,
    readonly w: Workload,
  ) {}

  async finishCreate(): Promise<void> {
    this.owner = await resumeOrCreate(this.store, schemaOf(this.w), { kind: "owner", nWriters: 2 }, MINE);
  }

  async run(step: Step): Promise<void> {
    const schema = schemaOf(this.w);
    switch (step.kind) {
      case "create":
        this.owner = await ZarrStreamWriter.create(this.store, schema, { kind: "owner", nWriters: 2 }, MINE);
        return;
      case "join":
        this.contributor = await ZarrStreamWriter.join(this.store, { kind: "contributor", id: 1 }, THEIRS);
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
        return;
      }
      case "flush":
        // A flush that returned a token is not repeated: the token is what the commit carries.
        this.tokens[step.who] ??= await (step.who === "owner" ? this.owner! : this.contributor!).flush();
        return;
      case "commit":
        await this.owner!.commit([this.tokens.owner!, this.tokens.contributor!]);
        this.tokens.owner = undefined;
        this.tokens.contributor = undefined;
        return;
      case "close":
        await this.owner!.close([this.tokens.contributor!]);
    }
  }
}

async function uninterrupted(w: Workload): Promise<{ calls: number; committed: Map<number, string> }> {
  const store = new FaultStore(new MemoryStore());
  const runner = new Runner(store, w);
  for (const step of stepsOf(w)) await runner.run(step);
  return { calls: store.calls, committed: await committedRecords(store.inner) };
}

async function faultCase(w: Workload, at: number, kind: FaultKind, ref: Map<number, string>): Promise<void> {
  const store = new FaultStore(new MemoryStore(), { at, kind });
  const runner = new Runner(store, w);
  const where = `fault at call ${at} (${kind})`;
  for (const step of stepsOf(w)) {
    try {
      await runner.run(step);
    } catch (err) {
      if (!(err instanceof InjectedFault)) throw new Error(`${step.kind}, ${where}: ${err}`, { cause: err });
      // The caller retries the call that failed; a create cut short is finished by resume, as the
      // store may exist already (or nothing of it was written, and creating it again is right).
      if (step.kind === "create") await runner.finishCreate();
      else await runner.run(step);
    }
    for (const [i, values] of await committedRecords(store.inner))
      assert.equal(values, ref.get(i), `record ${i} after ${step.kind}, ${where}`);
  }
  assert.ok(store.fired, `${where} never fired (${store.calls} calls)`);
  assert.deepEqual(await committedRecords(store.inner), ref, where);
}

describe("owner and contributor: every store call faults in turn, and the caller retries", () => {
  const fixed: Workload[] = [
    { indexed: false, batches: [2, 1], order: [0, 1, 2] },
    { indexed: true, batches: [2, 1], order: [2, 0, 1] },
    { indexed: false, batches: [1, 1, 1], order: [0, 1, 2] },
    { indexed: true, batches: [1, 2], order: [1, 2, 0] },
  ];
  for (const w of fixed) {
    it(`${w.indexed ? "indexed" : "append"} ${JSON.stringify(w.batches)}: commit boundary always, converges`, async () => {
      const { calls, committed } = await uninterrupted(w);
      assert.equal(committed.size, w.order.length);
      for (let at = 1; at <= calls; at++)
        for (const kind of ["fail", "lose-ack"] as const) await faultCase(w, at, kind, committed);
    });
  }
});
