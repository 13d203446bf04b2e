import { availableParallelism } from "node:os";

/**
 * How many shard encodes and PUTs run at once. Each encode already spreads its inner chunks over the
 * codec's thread pool; several shards in flight keep every core busy while others wait on I/O (fsync).
 */
export const SHARD_CONCURRENCY = 4 * availableParallelism();

/** Runs the tasks with at most `limit` in flight; rejects with the first failure after all settle. */
export async function runLimited(tasks: (() => Promise<void>)[], limit = SHARD_CONCURRENCY): Promise<void> {
  let next = 0;
  let failure: unknown;
  const worker = async () => {
    while (next < tasks.length) {
      const task = tasks[next++]!;
      try {
        await task();
      } catch (err) {
        failure ??= err;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, tasks.length) }, worker));
  if (failure !== undefined) throw failure;
}
