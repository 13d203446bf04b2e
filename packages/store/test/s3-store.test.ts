import assert from "node:assert/strict";
import { execFile, execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { createServer, type IncomingMessage } from "node:http";
import { after, before, describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { SchemaError, StoreError, StoreTimeout } from "@zarr-stream/spec";
import { runnable, statedOutput, tsBlocks } from "@zarr-stream/test-support/readme";
import {
  S3_SERVER_KINDS,
  type S3Server,
  s3ServerSkipReason,
  startS3Server,
  startSilentServer,
  TEST_CREDENTIALS,
  timedFailure,
} from "@zarr-stream/test-support/s3-server";
import { openStore } from "../src/open-store.js";
import { S3Store } from "../src/s3-store.js";
import {
  bytes,
  pinnedStoreSuite,
  storeSuite,
  streamingStoreSuite,
  versionedStoreSuite,
} from "./store-suite.js";

// The same suite on an emulator (moto) and on a real S3 gateway serving a directory (versitygw).
for (const kind of S3_SERVER_KINDS) {
  describe(`S3Store against a loopback ${kind} server`, { skip: s3ServerSkipReason(kind) }, () => {
    let server: S3Server<S3Store>;
    let bucket: string;
    before(async () => {
      server = await startS3Server(kind, (o) => new S3Store(o));
      bucket = await server.makeBucket();
    });
    after(() => server?.stop());

    storeSuite("S3Store", () => server.store());
    streamingStoreSuite("S3Store", () => server.store());
    versionedStoreSuite("S3Store", () => server.store());
    pinnedStoreSuite("S3Store", () => server.store(), false);

    it("S3Store.put: above the multipart threshold the upload is multipart and reads back whole", async () => {
      const s = server.store({ multipartThreshold: 5 * 1024 * 1024, partSize: 5 * 1024 * 1024 });
      const big = new Uint8Array(11 * 1024 * 1024 + 7);
      for (let i = 0; i < big.length; i += 4096) big[i] = (i / 4096) & 255;
      await s.put("big", big);
      const version = (await s.getVersioned("big"))!.version;
      // S3 marks multipart ETags with "-<parts>"; a single PUT's ETag is a plain MD5.
      assert.match(version, /-3"$/);
      assert.deepEqual(await s.get("big"), big);
      assert.deepEqual(await s.getSuffix("big", 5), big.slice(-5));
      assert.equal(await s.putIfAbsent("big", big), false, "multipart putIfAbsent on a present key");
      assert.equal(await s.putIfAbsent("big2", big), true);
      assert.equal(await s.size("big2"), big.length);
    });

    it("S3Store.putStream: a stream past one part goes up multipart, part by part, conditions included", async () => {
      const s = server.store({ multipartThreshold: 5 * 1024 * 1024, partSize: 5 * 1024 * 1024 });
      const big = new Uint8Array(11 * 1024 * 1024 + 7);
      for (let i = 0; i < big.length; i += 4096) big[i] = (i / 4096) & 255;
      async function* chunks(size: number) {
        for (let i = 0; i < big.length; i += size) yield big.subarray(i, i + size);
      }
      assert.equal(await s.putStream("big", chunks(700_001)), true);
      assert.match((await s.getVersioned("big"))!.version, /-3"$/);
      assert.deepEqual(await s.get("big"), big);
      assert.equal(await s.putStream("big", chunks(1 << 20), { ifAbsent: true }), false);
      assert.equal(await s.putStream("big2", chunks(1 << 20), { ifAbsent: true }), true);
      assert.deepEqual(await s.get("big2"), big);
      // Exactly one part's worth is one PutObject; a source failing after two parts aborts the upload.
      assert.equal(
        await s.putStream(
          "one",
          (async function* () {
            yield big.subarray(0, 5 * 1024 * 1024);
          })(),
        ),
        true,
      );
      assert.doesNotMatch((await s.getVersioned("one"))!.version, /-\d+"$/);
      const boom = new Error("source failed");
      async function* failing() {
        yield* chunks(1 << 20);
        throw boom;
      }
      await assert.rejects(s.putStream("broken", failing()), (e: unknown) => e === boom);
      assert.equal(await s.get("broken"), undefined);
    });

    it("S3Store prefixes: two stores in one bucket see only their own keys", async () => {
      const a = server.store({ prefix: "runs/a" });
      const b = server.store({ prefix: "runs/ab" });
      await a.put("zarr.json", bytes(1));
      await b.put("zarr.json", bytes(2));
      assert.deepEqual(await a.list(""), ["zarr.json"]);
      assert.deepEqual(await b.get("zarr.json"), bytes(2));
      assert.equal(a.url, `s3://${bucket}/runs/a`);
    });

    it("S3Store.list: pages past S3's 1000-key page and returns every key sorted", async () => {
      const s = server.store();
      const keys = Array.from({ length: 1010 }, (_, i) => `c/${i}`);
      let next = 0;
      await Promise.all(
        Array.from({ length: 16 }, async () => {
          while (next < keys.length) await s.put(keys[next++]!, bytes(1));
        }),
      );
      assert.deepEqual(await s.list("c/"), [...keys].sort());
    });

    it("openStore: s3://bucket/prefix gives an S3Store configured from the AWS environment variables", async () => {
      const saved = { ...process.env };
      Object.assign(process.env, server.env);
      try {
        const s = openStore(`s3://${bucket}/env/run-1`);
        assert.ok(s instanceof S3Store);
        assert.equal(s.url, `s3://${bucket}/env/run-1`);
        await s.put("zarr.json", bytes(7));
        assert.deepEqual(await server.store({ prefix: "env/run-1" }).get("zarr.json"), bytes(7));
        await (s as S3Store).close();
      } finally {
        for (const k of Object.keys(server.env)) {
          if (saved[k] === undefined) delete process.env[k];
          else process.env[k] = saved[k];
        }
      }
    });

    it("README: the S3 example runs against the server named by the environment and prints what it says", () => {
      const readme = readFileSync(fileURLToPath(new URL("../../README.md", import.meta.url)), "utf8");
      const code = tsBlocks(readme).find((c) => c.includes("s3://"));
      assert.ok(code !== undefined, "README has an S3 example");
      const expected = statedOutput(code).map((line) => line.replace(/ \(.*\)$/, ""));
      const out = execFileSync(process.execPath, ["--input-type=module", "--eval", runnable(code)], {
        cwd: fileURLToPath(new URL("../../", import.meta.url)),
        encoding: "utf8",
        env: { ...process.env, ...server.env, ZS_S3_BUCKET: bucket },
      });
      assert.deepEqual(out.trimEnd().split("\n"), expected);
    });

    it("S3Store writes: lean PUTs and the SDK's (sdkRequests) land and refuse alike, conditions included", async () => {
      const prefix = `lean-put-${Date.now()}`;
      const lean = server.store({ prefix });
      const sdk = server.store({ prefix, sdkRequests: true });
      const data = new Uint8Array(200_000).map((_, i) => (i * 13) & 255);
      for (const [name, s, other] of [
        ["lean", lean, sdk],
        ["sdk", sdk, lean],
      ] as const) {
        const k = `dir/${name} key+ü`;
        await s.put(k, data);
        assert.deepEqual(await other.get(k), data, name);
        assert.equal(await s.putIfAbsent(`${k}-new`, data.subarray(0, 10)), true, name);
        assert.equal(await s.putIfAbsent(`${k}-new`, data.subarray(0, 20)), false, name);
        assert.deepEqual(await other.get(`${k}-new`), data.subarray(0, 10), name);
        const v1 = await s.putIfVersion(`${k}-cas`, data.subarray(0, 5), null);
        assert.ok(v1, name);
        assert.equal(await s.putIfVersion(`${k}-cas`, data.subarray(0, 6), null), undefined, name);
        assert.equal(
          await s.putIfVersion(`${k}-cas`, data.subarray(0, 7), '"not-the-version"'),
          undefined,
          name,
        );
        const v2 = await s.putIfVersion(`${k}-cas`, data.subarray(0, 8), v1!);
        assert.ok(v2 && v2 !== v1, name);
        assert.equal(await other.version(`${k}-cas`), v2, name);
        assert.deepEqual(await other.get(`${k}-cas`), data.subarray(0, 8), name);
      }
      await lean.close();
      await sdk.close();
    });

    it("S3Store reads: the lean GET path and the SDK's (sdkRequests) answer alike, keys S3 escapes included", async () => {
      const prefix = `lean-${Date.now()}`;
      const lean = server.store({ prefix });
      const sdk = server.store({ prefix, sdkRequests: true });
      const data = new Uint8Array(300_000);
      for (let i = 0; i < data.length; i++) data[i] = (i * 7 + (i >> 9)) & 255;
      const keys = ["plain", "a b/c+d", "x/ü é", "s!'()*~=&$,;:@q", "dir/.hidden", "100%"];
      for (const k of keys) await lean.put(k, data);
      for (const k of keys) {
        for (const s of [lean, sdk]) {
          assert.deepEqual(await s.get(k), data, k);
          assert.deepEqual(await s.getRange(k, 1000, 5000), data.subarray(1000, 6000), k);
          assert.deepEqual(await s.getSuffix(k, 777), data.subarray(-777), k);
          const into = new Uint8Array(10_000);
          assert.equal(await s.getRangeInto!(k, 299_990, 50, into), 10, k);
          assert.deepEqual(into.subarray(0, 10), data.subarray(299_990), k);
          const pin = s.pin(k);
          assert.equal(await pin.getSuffixInto!(9000, into), 9000, k);
          assert.deepEqual(into.subarray(0, 9000), data.subarray(-9000), k);
          assert.deepEqual(await pin.getRange(0, 3), data.subarray(0, 3), k);
        }
      }
      for (const s of [lean, sdk]) {
        assert.equal(await s.get("absent"), undefined);
        assert.equal(await s.getSuffixInto!("absent", 4, new Uint8Array(4)), undefined);
        // A range past the end (416) is empty, as on every store.
        assert.deepEqual(await s.getRange("plain", 400_000, 10), new Uint8Array(0));
      }
      await lean.close();
      await sdk.close();
    });

    it("S3Store: a missing bucket is a StoreError naming the key, not an absent object", async () => {
      const s = server.store({ bucket: "no-such-bucket-zs" });
      await assert.rejects(s.put("k", bytes(1)), (e: unknown) => e instanceof StoreError && e.key === "k");
    });
  });
}

describe("S3Store configuration", () => {
  it("standards: bad bucket names, prefixes, part sizes and URLs are StoreErrors before any request", () => {
    for (const b of ["", "A", "a", "has space", "under_score", "-lead"]) {
      assert.throws(() => new S3Store({ bucket: b }), StoreError, JSON.stringify(b));
    }
    assert.throws(() => new S3Store({ bucket: "ok-bucket", prefix: "a/../b" }), StoreError);
    assert.throws(() => new S3Store({ bucket: "ok-bucket", partSize: 1024 }), StoreError);
    assert.throws(() => new S3Store({ bucket: "ok-bucket", multipartThreshold: 1.5 }), StoreError);
    assert.throws(() => S3Store.fromUrl("s3://"), StoreError);
    assert.equal(S3Store.fromUrl("s3://ok-bucket/").url, "s3://ok-bucket");
    assert.equal(S3Store.fromUrl("s3://ok-bucket/a/b/").url, "s3://ok-bucket/a/b");
  });

  it("reads are cheap on an endpoint on this machine, per-request elsewhere (the shard read window)", () => {
    const saved = { s3: process.env.AWS_ENDPOINT_URL_S3, any: process.env.AWS_ENDPOINT_URL };
    delete process.env.AWS_ENDPOINT_URL_S3;
    delete process.env.AWS_ENDPOINT_URL;
    try {
      const cost = (endpoint?: string) => new S3Store({ bucket: "ok-bucket", endpoint }).readCost;
      for (const e of ["http://127.0.0.1:9000", "http://localhost:7070/", "http://[::1]:9000"])
        assert.equal(cost(e), "cheap", e);
      for (const e of [undefined, "https://s3.eu-west-1.amazonaws.com", "http://10.0.0.5:9000", "not a url"])
        assert.equal(cost(e), "per-request", String(e));
      process.env.AWS_ENDPOINT_URL = "http://127.0.0.1:9000";
      assert.equal(cost(), "cheap", "the endpoint from the environment");
    } finally {
      for (const [k, v] of [
        ["AWS_ENDPOINT_URL_S3", saved.s3],
        ["AWS_ENDPOINT_URL", saved.any],
      ] as const)
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
    }
  });
});

/** A fake endpoint that answers each request with the next scripted status, counting requests. */
async function scripted(statuses: number[], body: Uint8Array) {
  const seen: string[] = [];
  const srv = createServer((req: IncomingMessage, res) => {
    seen.push(`${req.method} ${req.url?.split("?")[0]} if-none-match=${req.headers["if-none-match"] ?? ""}`);
    const status = statuses[Math.min(seen.length - 1, statuses.length - 1)]!;
    if (status === 200) {
      res.writeHead(200, { "content-length": body.length, etag: '"abc"' });
      res.end(body);
    } else {
      const code =
        {
          503: "SlowDown",
          500: "InternalError",
          409: "ConditionalRequestConflict",
          412: "PreconditionFailed",
        }[status] ?? "AccessDenied";
      const xml = `<?xml version="1.0"?><Error><Code>${code}</Code><Message>scripted</Message></Error>`;
      res.writeHead(status, { "content-type": "application/xml", "content-length": Buffer.byteLength(xml) });
      res.end(xml);
    }
  });
  await new Promise<void>((resolve) => srv.listen(0, "127.0.0.1", resolve));
  const port = (srv.address() as { port: number }).port;
  const store = new S3Store({
    bucket: "retry-bucket",
    endpoint: `http://127.0.0.1:${port}`,
    credentials: TEST_CREDENTIALS,
    maxAttempts: 4,
  });
  return { store, seen, close: () => new Promise((r) => srv.close(r)) };
}

describe("S3Store retries", () => {
  it("S3Store: 5xx and throttling are retried with backoff until an attempt succeeds", async () => {
    const f = await scripted([503, 500, 200], bytes(4, 5, 6));
    try {
      assert.deepEqual(await f.store.get("k"), bytes(4, 5, 6));
      assert.equal(f.seen.length, 3);
    } finally {
      await f.store.close();
      await f.close();
    }
  });

  it("S3Store: a 4xx is never retried and surfaces as a StoreError with the key", async () => {
    const f = await scripted([403, 200], bytes(1));
    try {
      await assert.rejects(
        f.store.get("secret"),
        (e: unknown) => e instanceof StoreError && e.key === "secret" && /HTTP 403/.test(e.message),
      );
      assert.equal(f.seen.length, 1);
    } finally {
      await f.store.close();
      await f.close();
    }
  });

  it("S3Store.putIfAbsent: a 409 conflict with another conditional write is retried until S3 decides (412 → false)", async () => {
    const f = await scripted([409, 409, 412], bytes(1));
    try {
      assert.equal(await f.store.putIfAbsent("claims/0.json", bytes(1)), false);
      assert.equal(f.seen.length, 3);
      assert.ok(
        f.seen.every((s) => s === "PUT /retry-bucket/claims/0.json if-none-match=*"),
        f.seen.join(),
      );
    } finally {
      await f.store.close();
      await f.close();
    }
  });

  it("S3Store: persistent 5xx gives up after maxAttempts with a StoreError", async () => {
    const f = await scripted([503], bytes(1));
    try {
      await assert.rejects(f.store.put("k", bytes(1)), StoreError);
      assert.equal(f.seen.length, 4);
    } finally {
      await f.store.close();
      await f.close();
    }
  });
});

describe("S3Store lean GETs: connections", () => {
  it("S3Store: sequential GETs share one keep-alive connection where the server keeps it open", async () => {
    let connections = 0;
    const body = bytes(1, 2, 3, 4);
    const srv = createServer((_req, res) => {
      res.writeHead(200, { "content-length": body.length, etag: '"v1"' });
      res.end(body);
    });
    srv.on("connection", () => connections++);
    await new Promise<void>((resolve) => srv.listen(0, "127.0.0.1", resolve));
    const port = (srv.address() as { port: number }).port;
    const store = new S3Store({
      bucket: "alive-bucket",
      endpoint: `http://127.0.0.1:${port}`,
      credentials: TEST_CREDENTIALS,
    });
    try {
      for (let i = 0; i < 5; i++) assert.deepEqual(await store.getRange("k", 0, 4), body);
      assert.equal(connections, 1, "one connection for five GETs");
    } finally {
      await store.close();
      srv.closeAllConnections();
      await new Promise((r) => srv.close(r));
    }
  });
});

/** A loopback HTTP server whose n-th GET (from 0) `answer` serves; the requests' if-match headers are kept. */
async function gets(
  answer: (n: number, res: import("node:http").ServerResponse) => void,
  keepAliveMs = 5000,
) {
  const ifMatch: (string | undefined)[] = [];
  const srv = createServer((req, res) => {
    ifMatch.push(req.headers["if-match"]);
    answer(ifMatch.length - 1, res);
  });
  srv.keepAliveTimeout = keepAliveMs;
  await new Promise<void>((resolve) => srv.listen(0, "127.0.0.1", resolve));
  const endpoint = `http://127.0.0.1:${(srv.address() as { port: number }).port}`;
  return {
    endpoint,
    ifMatch,
    close: async () => {
      srv.closeAllConnections();
      await new Promise((r) => srv.close(r));
    },
  };
}

describe("S3Store lean GETs: a body that goes silent", () => {
  it("S3Store.get: a body that stalls halfway is cut at requestTimeoutMs and read again, pinned to its ETag", async () => {
    const whole = bytes(1, 2, 3, 4, 5, 6, 7, 8);
    const f = await gets((n, res) => {
      res.writeHead(200, { "content-length": whole.length, etag: '"v1"' });
      // The first answer sends half its body and then nothing; the second sends all of it.
      if (n === 0) res.write(whole.subarray(0, 4));
      else res.end(whole);
    });
    const store = new S3Store({
      bucket: "stall-bucket",
      endpoint: f.endpoint,
      credentials: TEST_CREDENTIALS,
      requestTimeoutMs: 300,
    });
    try {
      const t = performance.now();
      assert.deepEqual(await store.get("k"), whole);
      assert.ok(performance.now() - t >= 250, "the stalled body was waited for, not dropped at once");
      assert.deepEqual(f.ifMatch, [undefined, '"v1"']);
    } finally {
      await store.close();
      await f.close();
    }
  });

  it("S3Store.get: a body that stalls on every attempt is a StoreTimeout, not a hang", async () => {
    const f = await gets((_n, res) => {
      res.writeHead(200, { "content-length": 8, etag: '"v1"' });
      res.write(bytes(1, 2));
    });
    const store = new S3Store({
      bucket: "stall-bucket",
      endpoint: f.endpoint,
      credentials: TEST_CREDENTIALS,
      requestTimeoutMs: 200,
    });
    try {
      const { err, ms } = await timedFailure(() => store.get("k"));
      assert.ok(err instanceof StoreTimeout, String(err));
      assert.match(err.message, /timed out on every attempt/);
      // Four reads of the body (the first and three pinned), each cut after 200 ms of silence.
      assert.equal(f.ifMatch.length, 4);
      assert.ok(ms >= 700 && ms < 5000, `gave up after ${ms.toFixed(0)} ms`);
    } finally {
      await store.close();
      await f.close();
    }
  });

  it("S3Store.get: the deadline ends a body that trickles forever (a byte every 50 ms)", async () => {
    const timers: NodeJS.Timeout[] = [];
    const f = await gets((_n, res) => {
      res.writeHead(200, { "content-length": 1_000_000, etag: '"v1"' });
      timers.push(setInterval(() => res.write(bytes(0)), 50));
    });
    const store = new S3Store({
      bucket: "trickle-bucket",
      endpoint: f.endpoint,
      credentials: TEST_CREDENTIALS,
      deadlineMs: 800,
    });
    try {
      const { err, ms } = await timedFailure(() => store.get("k"));
      assert.ok(err instanceof StoreTimeout, String(err));
      assert.equal(err.timeoutMs, 800);
      assert.ok(ms >= 700 && ms < 3000, `gave up after ${ms.toFixed(0)} ms`);
    } finally {
      for (const t of timers) clearInterval(t);
      await store.close();
      await f.close();
    }
  });
});

describe("S3Store lean GETs on sockets that read into the caller's buffer", () => {
  /** Bytes with no short period, so a misplaced piece of a body cannot pass for the right one. */
  const pattern = (n: number) => Uint8Array.from({ length: n }, (_, i) => Math.imul(i, 2654435761) >>> 24);

  it("S3Store.getSuffixInto: a 3 MB body sent in pieces with pauses arrives whole and in order", async () => {
    const whole = pattern(3_000_000);
    const f = await gets((_n, res) => {
      res.writeHead(200, { "content-length": whole.length, etag: '"v1"' });
      let at = 0;
      const next = () => {
        const piece = whole.subarray(at, Math.min(whole.length, at + 700_001));
        at += piece.length;
        if (at >= whole.length) res.end(piece);
        else res.write(piece, () => setTimeout(next, 5));
      };
      next();
    });
    const store = new S3Store({
      bucket: "piece-bucket",
      endpoint: f.endpoint,
      credentials: TEST_CREDENTIALS,
    });
    try {
      const into = new Uint8Array(4 * 1024 * 1024);
      assert.equal(await store.getSuffixInto("k", into.length, into), whole.length);
      assert.ok(Buffer.from(into.subarray(0, whole.length)).equals(whole), "the bytes are the ones sent");
      assert.deepEqual(await store.get("k"), whole);
    } finally {
      await store.close();
      await f.close();
    }
  });

  it("S3Store.get: a chunked answer (no Content-Length) is read through node:http instead", async () => {
    const whole = pattern(100_000);
    const f = await gets((_n, res) => {
      res.writeHead(200, { etag: '"v1"' });
      res.write(whole.subarray(0, 50_000));
      res.end(whole.subarray(50_000));
    });
    const store = new S3Store({
      bucket: "chunk-bucket",
      endpoint: f.endpoint,
      credentials: TEST_CREDENTIALS,
    });
    try {
      assert.deepEqual(await store.get("k"), whole);
      assert.equal(f.ifMatch.length, 2, "one GET on the socket path, then the same GET on node:http");
    } finally {
      await store.close();
      await f.close();
    }
  });

  it("S3Store.get: answers that close their connection, and a pooled connection the server dropped, are read on fresh ones", async () => {
    const whole = pattern(10_000);
    const sockets = new Set<import("node:net").Socket>();
    const f = await gets((n, res) => {
      sockets.add(res.socket as import("node:net").Socket);
      // The first two answers close their connection; the rest keep it, and the server drops it when idle.
      res.writeHead(200, {
        "content-length": whole.length,
        etag: '"v1"',
        ...(n < 2 ? { connection: "close" } : {}),
      });
      res.end(whole);
    });
    const store = new S3Store({
      bucket: "close-bucket",
      endpoint: f.endpoint,
      credentials: TEST_CREDENTIALS,
    });
    try {
      for (let i = 0; i < 3; i++) assert.deepEqual(await store.get("k"), whole);
      // The connection kept after the third GET is closed by the server; the next GET still succeeds.
      for (const socket of sockets) socket.destroy();
      await new Promise((r) => setTimeout(r, 50));
      assert.deepEqual(await store.get("k"), whole);
      assert.equal(f.ifMatch.length, 4, "four GETs answered, none retried as a failure");
    } finally {
      await store.close();
      await f.close();
    }
  });

  it("S3Store: a process that reads and never closes its store still exits (idle connections do not hold it)", async () => {
    // The server keeps an idle connection open for a minute: a connection that held the child would show.
    const f = await gets((_n, res) => {
      res.writeHead(200, { "content-length": 4, etag: '"v1"' });
      res.end(bytes(1, 2, 3, 4));
    }, 60_000);
    const index = new URL("../src/index.js", import.meta.url).href;
    const child = [
      `import { S3Store } from ${JSON.stringify(index)};`,
      `const s = new S3Store({ bucket: "exit-bucket", endpoint: ${JSON.stringify(f.endpoint)}, credentials: { accessKeyId: "a", secretAccessKey: "b" } });`,
      `process.stdout.write(String((await s.get("k")).length));`,
    ].join("\n");
    try {
      const t = performance.now();
      // The child runs asynchronously: the server answering it lives in this process.
      const { stdout } = await promisify(execFile)(process.execPath, ["--input-type=module", "-e", child], {
        encoding: "utf8",
        timeout: 30_000,
      });
      assert.equal(stdout, "4");
      assert.ok(performance.now() - t < 30_000);
    } finally {
      await f.close();
    }
  });

  it("S3Store.getRangeInto: an answer longer than the caller's buffer is a SchemaError at /into, the connection dropped", async () => {
    const f = await gets((_n, res) => {
      res.writeHead(206, { "content-length": 64, etag: '"v1"' });
      res.end(pattern(64));
    });
    const store = new S3Store({
      bucket: "small-bucket",
      endpoint: f.endpoint,
      credentials: TEST_CREDENTIALS,
    });
    try {
      await assert.rejects(store.getRangeInto("k", 0, 16, new Uint8Array(16)), (err: unknown) => {
        assert.ok(err instanceof SchemaError, String(err));
        assert.equal(err.pointer, "/into");
        return true;
      });
      // The store still reads: the dropped connection is replaced.
      assert.equal(await store.getRangeInto("k", 0, 64, new Uint8Array(64)), 64);
    } finally {
      await store.close();
      await f.close();
    }
  });
});

describe("S3Store lean GETs against a server that breaks HTTP framing", () => {
  it("S3Store.getRangeInto: bytes past the announced Content-Length are not read into the body, and the connection is not reused", async () => {
    const net = await import("node:net");
    let connections = 0;
    const srv = net.createServer((socket) => {
      connections++;
      let head = "";
      socket.on("data", (d) => {
        head += d.toString("latin1");
        if (!head.includes("\r\n\r\n")) return;
        head = "";
        // Ten body bytes announced: five with the head, then the other five and twenty more, which
        // answer no request, in one later write (read while the body is being read, not with the head).
        const body = Buffer.alloc(30, 7);
        body.fill(1, 0, 10);
        socket.write(
          Buffer.concat([
            Buffer.from('HTTP/1.1 206 Partial Content\r\ncontent-length: 10\r\netag: "v1"\r\n\r\n', "latin1"),
            body.subarray(0, 5),
          ]),
        );
        setTimeout(() => socket.write(body.subarray(5)), 30);
      });
      socket.on("error", () => {});
    });
    await new Promise<void>((resolve) => srv.listen(0, "127.0.0.1", resolve));
    const port = (srv.address() as import("node:net").AddressInfo).port;
    const store = new S3Store({
      bucket: "framing-bucket",
      endpoint: `http://127.0.0.1:${port}`,
      credentials: TEST_CREDENTIALS,
    });
    try {
      for (let i = 0; i < 2; i++) {
        const into = new Uint8Array(64);
        assert.equal(await store.getRangeInto("k", 0, 10, into), 10, `read ${i}: the announced length`);
        assert.deepEqual(into.subarray(0, 10), new Uint8Array(10).fill(1), `read ${i}: the announced bytes`);
        assert.ok(
          into.subarray(10).every((b) => b === 0),
          `read ${i}: nothing written past them`,
        );
      }
      assert.equal(connections, 2, "the connection that carried extra bytes served no second request");
    } finally {
      await store.close();
      await new Promise((r) => srv.close(r));
    }
  });
});

describe("S3Store payload signing", () => {
  it("S3Store.put: the body goes up as UNSIGNED-PAYLOAD unless signedPayload asks for its SHA-256", async () => {
    const seen: (string | undefined)[] = [];
    const srv = createServer((req, res) => {
      seen.push(req.headers["x-amz-content-sha256"] as string | undefined);
      req.resume();
      req.on("end", () => {
        res.writeHead(200, { etag: '"e1"', "content-length": 0 });
        res.end();
      });
    });
    await new Promise<void>((resolve) => srv.listen(0, "127.0.0.1", resolve));
    const endpoint = `http://127.0.0.1:${(srv.address() as { port: number }).port}`;
    const body = bytes(1, 2, 3);
    const plain = new S3Store({ bucket: "sign-bucket", endpoint, credentials: TEST_CREDENTIALS });
    const signed = new S3Store({
      bucket: "sign-bucket",
      endpoint,
      credentials: TEST_CREDENTIALS,
      signedPayload: true,
    });
    try {
      await plain.put("k", body);
      await signed.put("k", body);
      const sha = createHash("sha256").update(body).digest("hex");
      assert.deepEqual(seen, ["UNSIGNED-PAYLOAD", sha]);
    } finally {
      await plain.close();
      await signed.close();
      srv.closeAllConnections();
      await new Promise((r) => srv.close(r));
    }
  });
});

describe("S3Store deadlines: an endpoint that accepts TCP and never answers", () => {
  it("S3Store.get/put: StoreTimeout naming the endpoint, the key and what to check, within deadlineMs", async () => {
    const silent = await startSilentServer();
    const store = new S3Store({
      bucket: "silent-bucket",
      prefix: "run",
      endpoint: silent.endpoint,
      credentials: TEST_CREDENTIALS,
      deadlineMs: 1500,
    });
    try {
      for (const [op, call] of [
        ["read", () => store.get("zarr.json")],
        ["put", () => store.put("c/0", bytes(1, 2))],
      ] as const) {
        const { err, ms } = await timedFailure(call);
        assert.ok(err instanceof StoreTimeout, String(err));
        assert.equal(err.endpoint, silent.endpoint);
        assert.equal(err.timeoutMs, 1500);
        assert.match(err.message, new RegExp(`S3Store ${op} "(zarr\\.json|c/0)" in s3://silent-bucket/run`));
        assert.ok(err.message.includes(silent.endpoint) && err.message.includes("AWS_ENDPOINT_URL_S3"));
        assert.ok(ms >= 1400 && ms < 4000, `${op} failed after ${ms.toFixed(0)} ms, deadline 1500`);
      }
      assert.ok(silent.connections >= 1, "the calls reached the silent server");
    } finally {
      await store.close();
      await silent.close();
    }
  });

  it("S3Store: attempts time out on requestTimeoutMs and are retried; the last failure is a StoreTimeout", async () => {
    const silent = await startSilentServer();
    const store = new S3Store({
      bucket: "silent-bucket",
      endpoint: silent.endpoint,
      credentials: TEST_CREDENTIALS,
      requestTimeoutMs: 300,
      maxAttempts: 2,
      deadlineMs: 20_000,
    });
    try {
      // list goes through the SDK, getRange through the lean GET path: both bound their attempts alike.
      for (const [what, call] of [
        ["list", () => store.list("c/")],
        ["getRange", () => store.getRange("c/0", 0, 10)],
      ] as const) {
        const before = silent.connections;
        const { err, ms } = await timedFailure(call);
        assert.ok(err instanceof StoreTimeout, `${what}: ${String(err)}`);
        assert.match(err.message, /timed out on every attempt/, what);
        assert.equal(silent.connections - before, 2, `${what}: one connection per attempt, maxAttempts 2`);
        assert.ok(ms < 5000, `${what} gave up after ${ms.toFixed(0)} ms`);
      }
    } finally {
      await store.close();
      await silent.close();
    }
  });

  it("S3Store timeouts: bad values and a malformed ZSTREAM_S3_TIMEOUT_MS are StoreErrors before any request", () => {
    for (const name of ["connectTimeoutMs", "requestTimeoutMs", "deadlineMs"]) {
      for (const bad of [0, -1, 1.5, Number.NaN]) {
        assert.throws(() => new S3Store({ bucket: "ok-bucket", [name]: bad }), StoreError, `${name}=${bad}`);
      }
    }
    const saved = process.env.ZSTREAM_S3_TIMEOUT_MS;
    try {
      for (const bad of ["soon", "0", "1e3", "-5"]) {
        process.env.ZSTREAM_S3_TIMEOUT_MS = bad;
        assert.throws(() => S3Store.fromUrl("s3://ok-bucket/p"), /ZSTREAM_S3_TIMEOUT_MS must be/, bad);
      }
      process.env.ZSTREAM_S3_TIMEOUT_MS = "2500";
      assert.ok(S3Store.fromUrl("s3://ok-bucket/p") instanceof S3Store);
    } finally {
      if (saved === undefined) delete process.env.ZSTREAM_S3_TIMEOUT_MS;
      else process.env.ZSTREAM_S3_TIMEOUT_MS = saved;
    }
  });
});
