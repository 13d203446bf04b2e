// Compose throughput on a generated journal: `npm run bench -w packages/journal [-- SIZE_MIB]`.
import { composeJournal, composeJournalToStream } from "../src/index.js";
import { generateJournal } from "./generated-journal.js";

const MiB = 1 << 20;
const sizeMiB = Number(process.argv[2] ?? 1024);

async function streamed(parts: number, reuseBuffers: boolean): Promise<void> {
  const journal = generateJournal(sizeMiB * MiB, parts);
  const baseline = process.memoryUsage().rss;
  let peak = baseline;
  let calls = 0;
  const t0 = performance.now();
  const written = await composeJournalToStream(
    journal.parts,
    () => {
      if (++calls % 256 === 0) peak = Math.max(peak, process.memoryUsage().rss);
    },
    { format: "csv", reuseBuffers },
  );
  const s = (performance.now() - t0) / 1000;
  if (written !== journal.expectedBytes)
    throw new Error(`wrote ${written}, expected ${journal.expectedBytes}`);
  console.log(
    `composeJournalToStream csv ${parts} parts${reuseBuffers ? " (reuseBuffers)" : ""}: ${(journal.inputBytes / MiB).toFixed(0)} MiB in ${s.toFixed(2)} s = ` +
      `${(journal.inputBytes / 1e6 / s).toFixed(0)} MB/s in, ${(written / 1e6 / s).toFixed(0)} MB/s out, ` +
      `RSS growth ${((peak - baseline) / MiB).toFixed(1)} MiB`,
  );
}

async function inMemory(): Promise<void> {
  const line = Buffer.from("000000000001,000000000002\r\n");
  const part = Buffer.concat([
    Buffer.from("a,b\r\n"),
    Buffer.from(line.toString().repeat((64 * MiB) / line.length)),
  ]);
  const padded = Buffer.concat([Buffer.from("a,b,c\r\n"), part.subarray(5)]);
  for (const [label, parts] of [
    ["unpadded", [part, part]],
    ["padded", [part, padded]],
  ] as const) {
    const t0 = performance.now();
    const out = composeJournal(parts, "csv");
    const s = (performance.now() - t0) / 1000;
    const input = parts.reduce((n, p) => n + p.length, 0);
    console.log(
      `composeJournal csv ${label}: ${(input / MiB).toFixed(0)} MiB in ${s.toFixed(2)} s = ${(input / 1e6 / s).toFixed(0)} MB/s (${out.length} bytes out)`,
    );
  }
  const nd = Buffer.from('{"a":1,"b":[1,2,3]}\n'.repeat((128 * MiB) / 20));
  const t0 = performance.now();
  composeJournal([nd], "ndjson");
  const s = (performance.now() - t0) / 1000;
  console.log(
    `composeJournal ndjson: ${(nd.length / MiB).toFixed(0)} MiB in ${s.toFixed(2)} s = ${(nd.length / 1e6 / s).toFixed(0)} MB/s`,
  );
}

await streamed(4, true);
await streamed(4, false);
await streamed(1, true);
await inMemory();
