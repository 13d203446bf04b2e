import assert from "node:assert/strict";
import { test } from "node:test";
import { composeJournalToStream } from "../src/index.js";
import { generateJournal } from "./generated-journal.js";

const GiB = 1 << 30;
const MiB = 1 << 20;

test("streaming composer: a generated 1 GB journal composes in bounded memory (RSS growth < 64 MiB)", async () => {
  const journal = generateJournal(GiB, 4);
  global.gc?.();
  const baseline = process.memoryUsage().rss;
  let peak = baseline;
  let bytes = 0;
  let calls = 0;
  let tail = Buffer.alloc(0);
  const started = performance.now();
  const written = await composeJournalToStream(
    journal.parts,
    (chunk) => {
      bytes += chunk.length;
      tail = Buffer.from(chunk.subarray(Math.max(0, chunk.length - 64)));
      if (++calls % 256 === 0) peak = Math.max(peak, process.memoryUsage().rss);
    },
    { format: "csv", reuseBuffers: true },
  );
  const seconds = (performance.now() - started) / 1000;
  peak = Math.max(peak, process.memoryUsage().rss);
  assert.ok(journal.inputBytes >= GiB * 0.99, `generated only ${journal.inputBytes} bytes`);
  assert.equal(written, journal.expectedBytes);
  // Exact size pins the padding of every line: each part's lines get a different pad width.
  assert.equal(bytes, journal.expectedBytes);
  // The last line is the last part's (full width, CRLF): no padding, no doubled terminator.
  assert.match(tail.toString("latin1"), /,000000000004\.3\r\n$/);
  const growth = (peak - baseline) / MiB;
  const mbPerSecond = journal.inputBytes / 1e6 / seconds;
  console.log(
    `# composed ${(journal.inputBytes / MiB).toFixed(0)} MiB in ${seconds.toFixed(2)} s ` +
      `(${mbPerSecond.toFixed(0)} MB/s), RSS growth ${growth.toFixed(1)} MiB`,
  );
  assert.ok(growth < 64, `RSS grew by ${growth.toFixed(1)} MiB`);
});
