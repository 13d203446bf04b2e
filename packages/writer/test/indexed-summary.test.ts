import assert from "node:assert/strict";
import { test } from "node:test";
import { indexedTimeShards, type RecordEntry } from "@zarr-stream/spec";
import fc from "fast-check";
import { carrySummary, committedEntries, indexedSummary } from "../src/indexed-summary.js";

test("a summary carried over a commit's changes equals the one computed from scratch", () => {
  fc.assert(
    fc.property(
      fc.array(fc.boolean(), { minLength: 1, maxLength: 200 }),
      fc.integer({ min: 1, max: 9 }),
      fc.array(fc.array(fc.tuple(fc.nat(), fc.boolean()), { maxLength: 6 }), { maxLength: 5 }),
      (flags, shardT, steps) => {
        let entries: RecordEntry[] = flags.map((c, i) => ({ committed: c, t: i * 2, generation: 0 }));
        indexedSummary(entries, shardT);
        for (const step of steps) {
          const next = entries.slice();
          const changed = step.map(([p, c]) => {
            const i = p % next.length;
            next[i] = { ...next[i]!, committed: c };
            return i;
          });
          carrySummary(entries, next, changed);
          entries = next;
          const carried = indexedSummary(entries, shardT);
          const last = entries.findLastIndex((e) => e.committed);
          assert.deepEqual(carried.timeShards, indexedTimeShards(entries, shardT));
          assert.equal(carried.lastIndex, last);
          assert.equal(committedEntries(entries), entries.filter((e) => e.committed).length);
        }
      },
    ),
    { numRuns: 200 },
  );
});
