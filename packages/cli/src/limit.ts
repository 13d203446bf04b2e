/** Runs `tasks` with at most `n` in flight; resolves when all have settled successfully. */
export async function runLimited(tasks: (() => Promise<void>)[], n = 8): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < tasks.length) await tasks[next++]!();
  };
  await Promise.all(Array.from({ length: Math.min(n, tasks.length) }, worker));
}
