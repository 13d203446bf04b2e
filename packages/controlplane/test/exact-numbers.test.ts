import assert from "node:assert/strict";
import { test } from "node:test";
import { IntegralFloat, parseJsonExact, SchemaError } from "@zarr-stream/spec";
import fc from "fast-check";
import { ControlPlane, InexactNumber, type JsonObject, runControlPlaneCli } from "../src/index.js";
import { LATEST_KEY, snapshotKey } from "../src/layout.js";
import { TIMESTAMP_KEYS } from "../src/pyjson.js";
import { manualClock, TextMemoryStore } from "./helpers/stores.js";

const T0 = 1724000000;
const INT64_MAX = 2n ** 63n - 1n;
const INT64_MIN = -(2n ** 63n);

async function setup(store = new TextMemoryStore()) {
  const clock = manualClock(T0);
  const cp = await ControlPlane.open(store, {
    product: "demo",
    now: clock,
    runHeartbeatIntervalS: 0,
    claimHeartbeatIntervalS: 0,
  });
  return { store, clock, cp };
}

/** Every WAL line of a run, in segment order. */
async function walText(store: TextMemoryStore, runId: string): Promise<string> {
  const keys = (await store.list(`.firecube/runs/${runId}/`)).filter((k) => k.endsWith(".jsonl")).sort();
  return keys.map((k) => store.text(k)).join("");
}

/** The value at a JSON pointer of a plain JS value. */
function at(value: unknown, pointer: string): unknown {
  if (pointer === "/") return value;
  return pointer
    .slice(1)
    .split("/")
    .map((t) => t.replace(/~1/g, "/").replace(/~0/g, "~"))
    .reduce((v: unknown, t) => (v as Record<string, unknown>)[t], value);
}

test("appendRecord writes bigints and integral floats exactly; replay, the snapshot and project() read them back", async () => {
  const { store, clock, cp } = await setup();
  const runId = await cp.startRun({ runId: "r", slotRange: [2n ** 62n, INT64_MAX] });
  await cp.appendRecord(runId, {
    key: "c",
    status: "ok",
    size: 2n ** 53n + 1n,
    chunk_id: INT64_MAX,
    floats: [new IntegralFloat(1), new IntegralFloat(-0), 0.5],
  });
  await cp.completeRun(runId);
  const wal = await walText(store, runId);
  assert.match(wal, /"size":9007199254740993,"chunk_id":9223372036854775807,"floats":\[1\.0,-0\.0,0\.5\]/);
  assert.match(
    store.text(".firecube/runs/r/run.json")!,
    /"slot_range":\[4611686018427387904,9223372036854775807\]/,
  );

  const expected = {
    key: "c",
    status: "ok",
    size: 2n ** 53n + 1n,
    chunk_id: INT64_MAX,
    floats: [new IntegralFloat(1), new IntegralFloat(-0), 0.5],
    // Filled in as the reference's projection does: the event's time, a Python float.
    schema_version: "v2",
    timestamp: new IntegralFloat(T0),
  };
  assert.deepEqual((await cp.replay()).get("c"), expected);
  clock.advance(1);
  const rebuilt = await cp.rebuildSnapshot();
  assert.ok(rebuilt.rebuilt);
  const line = store
    .text(snapshotKey(rebuilt.generation))!
    .split("\n")
    .find((l) => l.includes('"key":"c"'));
  assert.equal(
    line,
    '{"key":"c","status":"ok","size":9007199254740993,"chunk_id":9223372036854775807,"floats":[1.0,-0.0,0.5],"schema_version":"v2","timestamp":1724000000.0}',
  );
  const projected = await cp.project();
  assert.equal(projected.source, "snapshot");
  assert.deepEqual(projected.state.get("c"), expected);
  assert.deepEqual((await cp.listRuns())[0]!.record!.slot_range, [2n ** 62n, INT64_MAX]);
});

test("a number appendRecord cannot write exactly is an InexactNumber naming it, before anything is written; the run's other records land", async () => {
  const { store, cp } = await setup();
  const runId = await cp.startRun({ runId: "r" });
  await cp.appendRecord(runId, { key: "good", status: "ok", size: 2n ** 63n - 1n });
  const bad: [unknown, string][] = [
    [2 ** 53, "/record/size"], // one past the safe range: it stands for 2^53 and 2^53+1 alike
    [-(2 ** 60), "/record/size"],
    [Number.NaN, "/record/size"],
    [Number.POSITIVE_INFINITY, "/record/size"],
    [new IntegralFloat(Number.NEGATIVE_INFINITY), "/record/size"],
  ];
  for (const [size, pointer] of bad) {
    await assert.rejects(cp.appendRecord(runId, { key: "bad", status: "ok", size }), (e: unknown) => {
      assert.ok(e instanceof InexactNumber, String(e));
      assert.equal(e.name, "InexactNumber");
      assert.equal(e.pointer, pointer);
      return true;
    });
  }
  await assert.rejects(
    cp.appendRecord(runId, { key: "bad", status: "ok", nested: { list: [1, 2 ** 55] } }),
    (e: unknown) => e instanceof InexactNumber && e.pointer === "/record/nested/list/1",
  );
  // A Date would print as {}: refused as not JSON rather than written as something else.
  await assert.rejects(
    cp.appendRecord(runId, { key: "bad", status: "ok", when: new Date(0) }),
    (e: unknown) => e instanceof SchemaError && !(e instanceof InexactNumber),
  );
  // Under a key the format defines as a float, a JS number is a float, and any double prints exactly as one.
  await cp.appendRecord(runId, { key: "t", status: "ok", timestamp: 2 ** 60 });
  await cp.completeRun(runId);
  const wal = await walText(store, runId);
  assert.doesNotMatch(wal, /"bad"/);
  assert.match(wal, /"key":"t","status":"ok","timestamp":1\.152921504606847e\+18/);
  assert.deepEqual(
    wal
      .trimEnd()
      .split("\n")
      .map((l) => JSON.parse(l).event_type),
    ["run_started", "record_upsert", "record_upsert", "run_completed"],
  );
  assert.deepEqual([...(await cp.replay()).keys()].sort(), ["good", "run_r", "t"]);
});

test("startRun with meta it cannot write exactly leaves the store empty", async () => {
  const { store, cp } = await setup();
  await assert.rejects(
    cp.startRun({ runId: "r", meta: { max_id: 2 ** 63 } }),
    (e: unknown) => e instanceof InexactNumber && e.pointer === "/meta/max_id",
  );
  await assert.rejects(cp.startRun({ runId: "r", slotRange: [0, 2 ** 53] }), SchemaError);
  assert.deepEqual(await store.list(""), []);
  // The same run with the id as a bigint starts, and its meta is written exactly.
  await cp.startRun({ runId: "r", meta: { max_id: 2n ** 63n } });
  assert.match(await walText(store, "r"), /"max_id":9223372036854775808/);
});

test("a run.json a peer wrote is rewritten with its values as read: int64 threshold, float start, unknown keys", async () => {
  const store = new TextMemoryStore();
  store.setText(
    ".firecube/runs/p/run.json",
    '{"schema_version":"v2","product":"demo","run_id":"p","status":"started","parts":1,"events":1,"started_at":1724000000.0,"updated_at":1724000000.5,"run_uri":"file:///x/.firecube/runs/p","run_stale_threshold_s":9223372036854775807,"slot_range":[-9223372036854775808,18446744073709551617],"max_chunk_id":9223372036854775807,"scale":1.0}',
  );
  store.setText(
    ".firecube/runs/p/events-00000.jsonl",
    '{"schema_version":"v2","event_id":"p:00000:000000","event_type":"run_started","product":"demo","run_id":"p","timestamp":1724000000.0,"record":{"key":"run_p","status":"started"}}\n',
  );
  const { cp, clock } = await setup(store);
  const view = (await cp.listRuns())[0]!;
  assert.equal(view.state, "live");
  assert.equal(view.staleThresholdS, 2 ** 63);
  assert.equal(view.stale, false);
  await cp.resumeRun("p");
  clock.advance(2);
  await cp.appendRecord("p", { key: "s", status: "active" });
  await cp.completeRun("p");
  const text = store.text(".firecube/runs/p/run.json")!;
  assert.match(text, /"started_at":1724000000\.0,/);
  assert.match(text, /"run_stale_threshold_s":9223372036854775807,/);
  assert.match(text, /"slot_range":\[-9223372036854775808,18446744073709551617\]/);
  assert.match(text, /"max_chunk_id":9223372036854775807,"scale":1\.0/);
  assert.match(text, /"status":"complete","parts":2,"events":3,/);
  // The terminal event repeats the run's slot range, also exactly.
  assert.match(
    await walText(store, "p"),
    /"run_completed".*"slot_range":\[-9223372036854775808,18446744073709551617\]/,
  );
});

test("a snapshot line keeps an integer timestamp an integer and 1.0 a float, as the reference's rebuild does", async () => {
  const store = new TextMemoryStore();
  const record =
    '{"key":"k","type":"chunk","size":9007199254740993,"timestamp":1767225600,"status":"ok","x":1.0,"z":-0.0,"e":1e+16,"schema_version":"v2"}';
  store.setText(
    ".firecube/runs/f/run.json",
    '{"schema_version":"v2","product":"demo","run_id":"f","status":"complete","parts":1,"events":2,"started_at":1724000000.25,"updated_at":1724000000.5,"run_uri":"file:///x","run_stale_threshold_s":3600,"completed_at":1724000000.5}',
  );
  store.setText(
    ".firecube/runs/f/events-00000.jsonl",
    `{"schema_version":"v2","event_id":"f:00000:000000","event_type":"record_upsert","product":"demo","run_id":"f","timestamp":1724000000.25,"record":${record}}\n` +
      '{"schema_version":"v2","event_id":"f:00000:000001","event_type":"run_completed","product":"demo","run_id":"f","timestamp":1724000000.5,"record":{"key":"run_f","status":"complete"}}\n',
  );
  const { cp, clock } = await setup(store);
  clock.advance(10);
  const rebuilt = await cp.rebuildSnapshot();
  assert.ok(rebuilt.rebuilt);
  const lines = store.text(snapshotKey(rebuilt.generation))!.trimEnd().split("\n");
  assert.equal(lines[0], record);
  assert.equal(
    lines[1],
    '{"key":"run_f","status":"complete","schema_version":"v2","timestamp":1724000000.5}',
  );

  // The reference writes completed_before as a float, `0.0` before any run completed: still a snapshot.
  const latest = store.text(LATEST_KEY)!.replace(/"completed_before":[^,]+/, '"completed_before":0.0');
  store.setText(LATEST_KEY, latest);
  const read = await cp.project();
  assert.equal(read.source, "snapshot");
  assert.equal(read.state.get("k")!.size, 2n ** 53n + 1n);
  assert.equal(read.state.get("k")!.timestamp, 1767225600);
});

test("mirroring the resolved index into zarr.json keeps the other root attributes' numbers; index show prints the record exactly", async () => {
  const store = new TextMemoryStore();
  store.setText(
    "zarr.json",
    '{"zarr_format":3,"node_type":"group","attributes":{"int64":9223372036854775807,"one":1.0,"neg_zero":-0.0}}',
  );
  const { cp } = await setup(store);
  const runId = await cp.startRun({ runId: "r" });
  const index = {
    name: "big",
    schema_version: "v1",
    groups: { g: { kind: "integer", params: {}, size: INT64_MAX } },
  };
  await cp.ensureResolvedIndex({ index }, { runId });
  await cp.completeRun(runId);
  const zarrJson = store.text("zarr.json")!;
  const attrs = (parseJsonExact(zarrJson) as { attributes: JsonObject }).attributes;
  assert.equal(attrs.int64, INT64_MAX);
  assert.deepEqual(attrs.one, new IntegralFloat(1));
  assert.deepEqual(attrs.neg_zero, new IntegralFloat(-0));

  let out = "";
  const code = await runControlPlaneCli(["index", "show", "--store", "mem", "--product", "demo", "--json"], {
    out: (t) => {
      out += t;
    },
    err: () => undefined,
    openStore: () => store,
    now: () => T0,
  });
  assert.equal(code, 0);
  assert.match(out, /"size":9223372036854775807/);
  assert.equal((parseJsonExact(out) as { index: typeof index }).index.groups.g.size, INT64_MAX);
});

// Numbers appendRecord writes exactly: bigints of any size (int64's ends among them), safe integers,
// non-integral doubles and integral floats (-0.0 and 1e+300 among them).
const exactNumber = fc.oneof(
  fc.bigInt({ min: -(2n ** 80n), max: 2n ** 80n }),
  fc.constantFrom(INT64_MAX, INT64_MIN, 2n ** 53n + 1n, -(2n ** 53n) - 1n, 2n ** 64n + 1n),
  fc.maxSafeInteger(),
  fc.double({ noNaN: true, noDefaultInfinity: true }).filter((x) => !Number.isInteger(x)),
  fc
    .oneof(fc.double({ noNaN: true, noDefaultInfinity: true }), fc.constantFrom(-0, 1, 1e16, 1e300))
    .filter((x) => Number.isInteger(x))
    .map((x) => new IntegralFloat(x)),
);

const memberKey = fc
  .string({ unit: "binary", maxLength: 6 })
  .filter((k) => !TIMESTAMP_KEYS.has(k) && k !== "__proto__");

const jsonValue = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: "small" },
    exactNumber,
    exactNumber,
    fc.string({ unit: "binary", maxLength: 6 }),
    fc.constantFrom(null, true, false),
    fc.array(tie("value"), { maxLength: 4 }),
    fc.dictionary(memberKey, tie("value"), { maxKeys: 4, noNullPrototype: true }),
  ),
})).value;

/** What reading JSON gives back for a value appendRecord wrote: a bigint that fits 2^53 comes back a number. */
function asRead(v: unknown): unknown {
  if (typeof v === "bigint") return v >= -(2n ** 53n - 1n) && v <= 2n ** 53n - 1n ? Number(v) : v;
  if (Array.isArray(v)) return v.map(asRead);
  if (v !== null && typeof v === "object" && !(v instanceof IntegralFloat)) {
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, asRead(x)]));
  }
  return v;
}

test("round trip (property): any record of big integers, floats and integral floats comes back equal from the WAL, a snapshot and project(); its snapshot line is its WAL record's text", async () => {
  await fc.assert(
    fc.asyncProperty(fc.array(jsonValue, { minLength: 1, maxLength: 3 }), async (payloads) => {
      const { store, clock, cp } = await setup();
      const runId = await cp.startRun({ runId: "r" });
      const records = payloads.map((payload, i) => ({
        key: `k${i}`,
        status: "active",
        timestamp: new IntegralFloat(T0),
        schema_version: "v2",
        payload,
      }));
      for (const r of records) await cp.appendRecord(runId, r);
      await cp.completeRun(runId);
      const fromWal = await cp.replay();
      for (const r of records) assert.deepEqual(fromWal.get(r.key), asRead(r));

      clock.advance(1);
      const rebuilt = await cp.rebuildSnapshot();
      assert.ok(rebuilt.rebuilt);
      const projected = await cp.project();
      assert.equal(projected.source, "snapshot");
      for (const r of records) assert.deepEqual(projected.state.get(r.key), asRead(r));

      const wal = await walText(store, runId);
      for (const line of store.text(snapshotKey(rebuilt.generation))!.trimEnd().split("\n")) {
        if (!line.startsWith('{"key":"k')) continue;
        assert.ok(wal.includes(`"record":${line}`), line);
      }
    }),
    { numRuns: 150 },
  );
});

// Numbers JSON text cannot carry exactly, at any depth of an otherwise writable record.
const inexactNumber = fc.oneof(
  fc.bigInt({ min: 2n ** 53n, max: 2n ** 70n }).map((n) => Number(n)),
  fc.bigInt({ min: 2n ** 53n, max: 2n ** 70n }).map((n) => -Number(n)),
  fc.constantFrom(Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, 2 ** 63),
);

test("refusal (property): a record holding an unsafe JS integer or a non-finite number anywhere is an InexactNumber pointing at it, and the WAL holds none of it", async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.array(memberKey, { minLength: 1, maxLength: 4 }),
      inexactNumber,
      jsonValue,
      async (path, bad, sibling) => {
        const { store, cp } = await setup();
        const runId = await cp.startRun({ runId: "r" });
        // The bad number sits at `path` inside the record's payload, next to a writable sibling.
        const payload: JsonObject = { sibling };
        let node = payload;
        for (const k of path.slice(0, -1)) {
          const child: JsonObject = {};
          node[k] = child;
          node = child;
        }
        node[path.at(-1)!] = bad;
        const record = { key: "bad", status: "active", payload };
        await assert.rejects(cp.appendRecord(runId, record), (e: unknown) => {
          assert.ok(e instanceof InexactNumber, String(e));
          assert.ok(Object.is(at({ record }, e.pointer), bad), e.pointer);
          return true;
        });
        await cp.appendRecord(runId, { key: "after", status: "active" });
        await cp.completeRun(runId);
        assert.doesNotMatch(await walText(store, runId), /"key":"bad"/);
        assert.deepEqual([...(await cp.replay()).keys()].sort(), ["after", "run_r"]);
      },
    ),
    { numRuns: 150 },
  );
});
