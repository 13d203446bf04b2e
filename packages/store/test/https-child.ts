// Run by s3-https.test.ts with NODE_EXTRA_CA_CERTS naming the certificate that versitygw serves: trust in
// a certificate is read at a process's start. Starts versitygw on https, writes and reads through the
// lean path and through the SDK (sdkRequests), each reading what the other wrote, conditions included,
// and prints one JSON line of what it saw.
import { startS3Server } from "@zarr-stream/test-support/s3-server";
import { S3Store } from "../src/index.js";

const [cert, key] = process.argv.slice(2) as [string, string];
const server = await startS3Server("versitygw", (o) => new S3Store(o), { tls: { cert, key } });
const seen: Record<string, unknown> = { endpoint: server.endpoint };
try {
  await server.makeBucket("tls-bucket");
  const lean = server.store({ prefix: "tls" });
  const sdk = server.store({ prefix: "tls", sdkRequests: true });
  const data = new Uint8Array(300_000).map((_, i) => (i * 31 + (i >> 8)) & 255);
  for (const [name, s, other] of [
    ["lean", lean, sdk],
    ["sdk", sdk, lean],
  ] as const) {
    const k = `${name}/a b+ü`;
    await s.put(k, data);
    const back = await other.get(k);
    const ranged = await other.getRange(k, 1000, 5000);
    const suffix = await other.getSuffix(k, 777);
    const v1 = await s.putIfVersion(`${k}-cas`, data.subarray(0, 5), null);
    const refused = await s.putIfVersion(`${k}-cas`, data.subarray(0, 6), null);
    const v2 = v1 === undefined ? undefined : await s.putIfVersion(`${k}-cas`, data.subarray(0, 8), v1);
    seen[name] = {
      whole: back !== undefined && Buffer.compare(back, data) === 0,
      ranged: ranged !== undefined && Buffer.compare(ranged, data.subarray(1000, 6000)) === 0,
      suffix: suffix !== undefined && Buffer.compare(suffix, data.subarray(-777)) === 0,
      created: v1 !== undefined,
      refused: refused === undefined,
      swapped: v2 !== undefined && v2 !== v1 && (await other.version(`${k}-cas`)) === v2,
      absentIsAbsent: (await other.get(`${name}/absent`)) === undefined,
    };
  }
  await lean.close();
  await sdk.close();
} finally {
  await server.stop();
}
process.stdout.write(`${JSON.stringify(seen)}\n`);
