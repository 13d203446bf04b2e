// S3Store behind a fault-injecting loopback proxy (test-support/fault-proxy), on moto and versitygw:
// faults a retry can heal are healed, from the same object version; the rest give a named error.
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { after, before, describe, it } from "node:test";
import { StoreError } from "@zarr-stream/spec";
import { type FaultProxy, startFaultProxy } from "@zarr-stream/test-support/fault-proxy";
import {
  S3_SERVER_KINDS,
  type S3Server,
  s3ServerSkipReason,
  startS3Server,
} from "@zarr-stream/test-support/s3-server";
import { S3Store } from "../src/s3-store.js";

const isGet = (key: string) => (r: { method: string; path: string }) =>
  r.method === "GET" && r.path.split("?")[0]!.endsWith(`/${key}`);

for (const kind of S3_SERVER_KINDS) {
  describe(`S3Store behind a fault proxy, ${kind}`, { skip: s3ServerSkipReason(kind) }, () => {
    let server: S3Server<S3Store>;
    let proxy: FaultProxy;
    let n = 0;
    /** Two stores on one prefix: one straight to the server, one through the proxy. */
    const pair = () => {
      const prefix = `faults-${n++}`;
      return {
        direct: server.store({ prefix }),
        proxied: server.store({ prefix, endpoint: proxy.endpoint, deadlineMs: 20_000 }),
      };
    };
    before(async () => {
      server = await startS3Server(kind, (o) => new S3Store(o));
      await server.makeBucket();
      proxy = await startFaultProxy(server.endpoint);
    });
    after(async () => {
      await proxy?.close();
      await server?.stop();
    });

    it("a GET whose body is cut halfway is read again, pinned to the version its headers named", async () => {
      const { direct, proxied } = pair();
      // Large enough that the SDK hands over the body as a stream and the cut meets our own read of it
      // (a small body it reads, and retries, itself).
      const data = new Uint8Array(randomBytes(4_000_000));
      await direct.put("obj", data);
      const from = proxy.seen.length;
      proxy.script({ match: isGet("obj"), fault: { kind: "cut-body", at: 1_500_000 } });
      assert.deepEqual(await proxied.get("obj"), data);
      const gets = proxy.seen.slice(from).filter((r) => r.method === "GET");
      assert.equal(gets[0]?.fault, "cut-body");
      assert.ok(gets.length >= 2, "the cut body was read again");
      const etag = (await direct.getVersioned("obj"))!.version;
      assert.equal(gets.at(-1)!.headers["if-match"], etag, "the retry named the version it continues");
    });

    it("a ranged GET cut short is read again from the same version", async () => {
      const { direct, proxied } = pair();
      const data = new Uint8Array(randomBytes(4_000_000));
      await direct.put("obj", data);
      proxy.script({ match: isGet("obj"), fault: { kind: "cut-body", at: 1_000_000 } });
      assert.deepEqual(await proxied.getRange("obj", 10_000, 3_000_000), data.subarray(10_000, 3_010_000));
    });

    it("500, 503 and a reset before the headers are retried; a 403 is a StoreError at once", async () => {
      const { direct, proxied } = pair();
      await direct.put("obj", new Uint8Array([1, 2, 3]));
      proxy.script(
        { match: isGet("obj"), fault: { kind: "status", status: 500 } },
        { match: isGet("obj"), fault: { kind: "status", status: 503 } },
        { match: isGet("obj"), fault: { kind: "reset" } },
      );
      assert.deepEqual(await proxied.get("obj"), new Uint8Array([1, 2, 3]));
      proxy.script({ match: isGet("obj"), fault: { kind: "status", status: 403 } });
      await assert.rejects(proxied.get("obj"), StoreError);
    });

    it("a conditional PUT whose acknowledgement is lost: the object holds the bytes, and a retry of the same condition is refused, not applied twice", async () => {
      const { direct, proxied } = pair();
      const first = await direct.putIfVersion("obj", new Uint8Array([1]), null);
      assert.ok(first !== undefined);
      proxy.script({
        match: (r) => r.method === "PUT" && r.path.split("?")[0]!.endsWith("/obj"),
        fault: { kind: "lose-ack" },
        times: 5,
      });
      await assert.rejects(proxied.putIfVersion("obj", new Uint8Array([2]), first!), StoreError);
      assert.deepEqual(await direct.get("obj"), new Uint8Array([2]), "the write landed once");
      assert.equal(await direct.putIfVersion("obj", new Uint8Array([3]), first!), undefined);
    });

    it("a conditional PUT whose acknowledgement is lost once succeeds: the retry's 412 is its own write, read back", async () => {
      const { direct, proxied } = pair();
      const putOf = (key: string) => (r: { method: string; path: string }) =>
        r.method === "PUT" && r.path.split("?")[0]!.endsWith(`/${key}`);
      proxy.script({ match: putOf("created"), fault: { kind: "lose-ack" } });
      assert.equal(await proxied.putIfAbsent("created", new Uint8Array([1])), true, "If-None-Match: *");
      const v1 = await direct.putIfVersion("swapped", new Uint8Array([1]), null);
      proxy.script({ match: putOf("swapped"), fault: { kind: "lose-ack" } });
      const v2 = await proxied.putIfVersion("swapped", new Uint8Array([2]), v1!);
      assert.equal(v2, await direct.version("swapped"), "If-Match: the version the lost write made");
      assert.deepEqual(await direct.get("swapped"), new Uint8Array([2]));
      const lost = proxy.seen.filter((r) => r.fault === "lose-ack").length;
      assert.ok(lost >= 2, `both acknowledgements were lost (${lost})`);
    });

    it("a refused conditional PUT whose refusal is lost stays refused: the object holds another write's bytes", async () => {
      const { direct, proxied } = pair();
      const v1 = await direct.putIfVersion("obj", new Uint8Array([1]), null);
      await direct.putIfVersion("obj", new Uint8Array([9]), v1!);
      proxy.script({ match: (r) => r.method === "PUT", fault: { kind: "lose-ack" } });
      assert.equal(await proxied.putIfVersion("obj", new Uint8Array([2]), v1!), undefined);
      proxy.script({ match: (r) => r.method === "PUT", fault: { kind: "lose-ack" } });
      assert.equal(await proxied.putIfAbsent("obj", new Uint8Array([3])), false);
      assert.deepEqual(await direct.get("obj"), new Uint8Array([9]), "nothing of ours landed");
    });

    it("a multipart upload whose completion's answer is lost succeeds: the retried completion is answered 200, or NoSuchUpload and the object is read back", async () => {
      const MiB = 1 << 20;
      const prefix = `faults-${n++}`;
      const proxied = server.store({
        prefix,
        endpoint: proxy.endpoint,
        deadlineMs: 20_000,
        multipartThreshold: 5 * MiB,
        partSize: 5 * MiB,
      });
      const isComplete = (r: { method: string; path: string }) =>
        r.method === "POST" && /[?&]uploadId=/.test(r.path);
      const data = new Uint8Array(randomBytes(6 * MiB));
      // Both servers answer a repeated completion 200; AWS may answer NoSuchUpload once the upload is gone.
      proxy.script({ match: isComplete, fault: { kind: "lose-ack" } });
      assert.equal(await proxied.putIfAbsent("big", data), true);
      const noSuchUpload =
        '<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>NoSuchUpload</Code><Message>gone</Message></Error>';
      proxy.script(
        { match: isComplete, fault: { kind: "lose-ack" } },
        { match: isComplete, fault: { kind: "status", status: 404, body: noSuchUpload } },
      );
      const from = proxy.seen.length;
      await proxied.put("big2", data);
      assert.deepEqual(
        proxy.seen
          .slice(from)
          .filter(isComplete)
          .map((r) => r.fault),
        ["lose-ack", "status"],
      );
      const direct = server.store({ prefix });
      assert.deepEqual(await direct.get("big"), data);
      assert.deepEqual(await direct.get("big2"), data);
      // NoSuchUpload with other bytes there is a failure: the upload did not land.
      proxy.script(
        { match: isComplete, fault: { kind: "status", status: 503 } },
        { match: isComplete, fault: { kind: "status", status: 404, body: noSuchUpload } },
      );
      await assert.rejects(proxied.put("big2", new Uint8Array(randomBytes(6 * MiB))), /NoSuchUpload/);
      assert.deepEqual(await direct.get("big2"), data);
    });

    it("a short outage (the next three connections reset) is ridden out by the retries", async () => {
      const { direct, proxied } = pair();
      await direct.put("obj", new Uint8Array([7]));
      // Counted, not timed: the SDK's jittered back-off can spend four attempts inside any short window.
      proxy.script({ match: () => true, fault: { kind: "reset" }, times: 3 });
      assert.deepEqual(await proxied.get("obj"), new Uint8Array([7]));
    });
  });
}
