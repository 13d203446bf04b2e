/**
 * `call`, or the error `expire()` makes once `ms` have passed first. `expire` may also stop the work
 * (abort a request); the call that loses the race may still settle, and its rejection is not an
 * unhandled one.
 */
export async function withDeadline<T>(call: Promise<T>, ms: number, expire: () => Error): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(expire()), ms);
  });
  call.catch(() => undefined);
  try {
    return await Promise.race([call, expired]);
  } finally {
    clearTimeout(timer);
  }
}
