/**
 * Waits for every promise, then rejects with the first failure (in the order given), if any.
 *
 * Reads that write into a caller's buffer use this instead of Promise.all: Promise.all rejects at the first
 * failure while the other reads still run, so they would go on writing into `out` after the caller saw the
 * error (and may have reused `out`), and scratch buffers would go back to their pools while a read still
 * fills them.
 */
export async function settleAll(work: Iterable<Promise<unknown>>): Promise<void> {
  const failure = (await Promise.allSettled(work)).find((r) => r.status === "rejected");
  if (failure !== undefined) throw failure.reason;
}

/**
 * Runs `worker` on `n` concurrent lanes and settles them all (see settleAll). Once one lane fails,
 * `stopped()` turns true so the others start no further reads; the first failure is rethrown.
 */
export async function settleLanes(
  n: number,
  worker: (stopped: () => boolean) => Promise<void>,
): Promise<void> {
  let failed = false;
  const stopped = () => failed;
  await settleAll(
    Array.from({ length: n }, () =>
      worker(stopped).catch((err: unknown) => {
        failed = true;
        throw err;
      }),
    ),
  );
}
