/**
 * Whether `hostname` (as URL.hostname spells it) names this machine: localhost, 127.0.0.0/8 or [::1]. A
 * request there crosses no network, so bytes cost more than round trips: a store on such a host declares
 * cheap reads (readCost), and a reader's first read of a shard asks for a 64 KiB window holding the index
 * rather than a 4 MiB one. On the viewer's server a one-record box of the bench's store (2 x 2 shards of
 * 8 x 180 x 360 float64 per variable, four variables) fetched 16 whole shards, 44 MB, for 6 MB of chunks
 * (packages/writer/bench/README.md, "JavaScript peers").
 */
export function loopbackHost(hostname: string): boolean {
  return (
    hostname === "localhost" || hostname === "[::1]" || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(hostname)
  );
}
