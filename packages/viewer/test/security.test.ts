import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { once } from "node:events";
import { mkdirSync, mkdtempSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { connect, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { after, before, describe, it } from "node:test";
import { startSwapper, swapSkipReason } from "@zarr-stream/test-support/swap";
import { servableKey, serveViewer, TOKEN_HEADER, type ViewerServer } from "../src/index.js";
import { raw } from "./serve-client.js";

const SECRET = "SECRET-OUTSIDE-THE-STORE";
/** Files under the served root that are not objects of the store layout. */
const NOT_STORE_OBJECTS = [
  ".ssh/id_rsa",
  ".env",
  "notes.txt",
  ".zarr-stream/leases/writer-0.json",
  "_tokens/0/0.json",
  "t/c/0/x",
];
const INSIDE = '{"zarr_format":3,"node_type":"group","attributes":{}}';

/** Why mknod cannot run here: outside CI a non-root user skips; CI runs as root and never skips. */
function mknodSkipReason(): string | undefined {
  if (process.getuid?.() === 0 || process.env.CI === "true") return undefined;
  return "mknod of a device node needs root (CI runs as root)";
}

describe("zstream serve, attacked by another local user", () => {
  let dir: string;
  let outside: string;
  let server: ViewerServer;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), "zs-viewer-attack-"));
    outside = mkdtempSync(join(tmpdir(), "zs-viewer-outside-"));
    writeFileSync(join(outside, "zarr.json"), SECRET);
    // A store in a home directory, next to what is not the store's.
    for (const file of NOT_STORE_OBJECTS) {
      mkdirSync(dirname(join(dir, file)), { recursive: true });
      writeFileSync(join(dir, file), SECRET);
    }
    writeFileSync(join(dir, "zarr.json"), INSIDE);
    writeFileSync(join(dir, "output_manifest.json"), "{}");
    mkdirSync(join(dir, "t", "c", "0"), { recursive: true });
    writeFileSync(join(dir, "t", "zarr.json"), INSIDE.replace("group", "array"));
    writeFileSync(join(dir, "t", "c", "0", "0"), "shard");
    server = await serveViewer(dir);
  });
  after(() => server.close());

  it("a request without the token, with a wrong one, or with it in a data URL's query is refused (403)", async () => {
    assert.ok(server.token !== undefined && server.token.length >= 32, "a fresh token by default");
    assert.equal(server.pageUrl, `${server.url}?token=${server.token}`);
    for (const path of [
      "/",
      "/store/zarr.json",
      "/store/t/c/0/0",
      "/store/__nodes",
      "/store/__list?prefix=",
      "/__viewer/viewer.js",
    ]) {
      assert.equal((await raw(server, path, {}, "GET", false)).status, 403, path);
      const wrong = await raw(server, path, { [TOKEN_HEADER]: `${server.token!.slice(1)}x` }, "GET", false);
      assert.equal(wrong.status, 403, `${path} with a wrong token`);
      const cookie = await raw(server, path, { Cookie: "zstream-token-1=nope" }, "GET", false);
      assert.equal(cookie.status, 403, `${path} with a wrong cookie`);
      assert.equal((await raw(server, path)).status, 200, `${path} with the token`);
    }
    const query = await raw(server, `/store/zarr.json?token=${server.token}`, {}, "GET", false);
    assert.equal(query.status, 403, "the query string never carries the token of a data request");
    assert.ok(!query.body.toString().includes(SECRET));
  });

  it("the page URL's token is traded for an HttpOnly SameSite=Strict cookie, which then authorizes", async () => {
    const first = await raw(server, `/?token=${server.token}`, {}, "GET", false);
    assert.equal(first.status, 303);
    assert.equal(first.headers.location, "/");
    const setCookie = String(first.headers["set-cookie"]);
    assert.match(setCookie, /HttpOnly/);
    assert.match(setCookie, /SameSite=Strict/);
    const cookie = setCookie.split(";")[0]!;
    assert.equal(cookie, `zstream-token-${new URL(server.url).port}=${server.token}`);
    const data = await raw(server, "/store/t/c/0/0", { Cookie: `other=1; ${cookie}` }, "GET", false);
    assert.equal(data.status, 200);
    assert.equal(data.body.toString(), "shard");
    assert.equal((await raw(server, "/?token=wrong", {}, "GET", false)).status, 403);
  });

  it("only the store's own objects are served: files beside them are 404 and never listed", async () => {
    for (const path of NOT_STORE_OBJECTS.map((file) => `/store/${file}`)) {
      const r = await raw(server, path);
      assert.equal(r.status, 404, path);
      assert.ok(!r.body.toString().includes(SECRET), path);
    }
    const listed = JSON.parse((await raw(server, "/store/__list?prefix=")).body.toString()) as string[];
    assert.deepEqual(listed, ["output_manifest.json", "t/c/0/0", "t/zarr.json", "zarr.json"]);
    const nodes = JSON.parse((await raw(server, "/store/__nodes")).body.toString()) as string[];
    assert.deepEqual(nodes, ["t/zarr.json", "zarr.json"]);
  });

  it("servableKey: the layout's keys are served under any directory, nothing else", () => {
    const sha = "a".repeat(64);
    for (const key of [
      "zarr.json",
      "run/a/zarr.json",
      "output_manifest.json",
      "run/output_manifest.json",
      `.zarr-stream/manifest/records/${sha}.json`,
      `run/.zarr-stream/manifest/time_shards/${sha}.json`,
      "temperature/c",
      "g/temperature/c/0/12/3",
      "blobs/static/0/rng state.bin",
      "run/blobs/record/12/3/a/b",
    ])
      assert.ok(servableKey(key), key);
    for (const key of [
      ".env",
      ".ssh/id_rsa",
      "notes.txt",
      "a/.git/zarr.json",
      ".zarr-stream/leases/writer-0.json",
      ".zarr-stream/manifest/records/short.json",
      `.zarr-stream/manifest/../records/${sha}.json`,
      "_tokens/0/0.json",
      "t/c/0/x",
      "t/c/x/0",
      ".firecube/claims/a/c/0",
      "blobs/static/x/k",
      "blobs/record/1/2",
      "blobs/other/1/2/k",
    ])
      assert.ok(!servableKey(key), key);
  });

  it("a FIFO and a device node in the store are refused at once", async (t) => {
    execFileSync("mkfifo", [join(dir, "t", "c", "0", "1")]);
    const started = Date.now();
    const fifo = await raw(server, "/store/t/c/0/1");
    assert.equal(fifo.status, 404);
    assert.ok(Date.now() - started < 2000, `the FIFO answered in ${Date.now() - started} ms`);
    const skip = mknodSkipReason();
    if (skip !== undefined) return t.skip(skip);
    // A character device (1, 3 is /dev/null's numbers): opening one can act, so it is refused unopened.
    execFileSync("mknod", [join(dir, "t", "c", "0", "2"), "c", "1", "3"]);
    const device = await raw(server, "/store/t/c/0/2");
    assert.equal(device.status, 404);
  });

  it("__nodes is bounded by the directories it visits, not only by the nodes it finds", async () => {
    const wide = mkdtempSync(join(tmpdir(), "zs-viewer-wide-"));
    writeFileSync(join(wide, "zarr.json"), INSIDE);
    // 3,000 groups, each a directory: walked to the end they would list 3,001 nodes.
    for (let i = 0; i < 3000; i++) {
      mkdirSync(join(wide, `g${i}`));
      writeFileSync(join(wide, `g${i}`, "zarr.json"), INSIDE);
    }
    const wideServer = await serveViewer(wide);
    try {
      const nodes = JSON.parse((await raw(wideServer, "/store/__nodes")).body.toString()) as string[];
      assert.ok(nodes.includes("zarr.json"));
      assert.ok(nodes.length > 100 && nodes.length <= 2000, `${nodes.length} nodes`);
    } finally {
      await wideServer.close();
    }
  });
});

describe(
  "zstream serve: a directory swapped for a link out of the root (renameat2 EXCHANGE) during requests",
  { skip: swapSkipReason() },
  () => {
    it("never returns a byte from outside over thousands of requests, though plain path reads do leak", async () => {
      const dir = mkdtempSync(join(tmpdir(), "zs-viewer-swap-"));
      const outside = mkdtempSync(join(tmpdir(), "zs-viewer-swap-outside-"));
      writeFileSync(join(outside, "zarr.json"), SECRET);
      mkdirSync(join(dir, "d"));
      writeFileSync(join(dir, "d", "zarr.json"), INSIDE);
      symlinkSync(outside, join(dir, "swap"));
      const swapper = await startSwapper(join(dir, "d"), join(dir, "swap"));
      const server = await serveViewer(dir);
      try {
        const counts = { inside: 0, refused: 0, other: 0, leakedByPath: 0 };
        const REQUESTS = 3000;
        let next = 0;
        const worker = async () => {
          while (next < REQUESTS) {
            next++;
            const r = await raw(server, "/store/d/zarr.json");
            assert.ok(!r.body.toString().includes(SECRET), `request ${next} returned a byte from outside`);
            if (r.status === 200) {
              assert.equal(r.body.toString(), INSIDE);
              counts.inside++;
            } else if (r.status === 404) counts.refused++;
            else counts.other++;
            // The attack is live: a plain open by path through the same name does reach outside.
            if (plainRead(join(dir, "d", "zarr.json")) === SECRET) counts.leakedByPath++;
          }
        };
        await Promise.all(Array.from({ length: 8 }, worker));
        assert.equal(counts.other, 0, JSON.stringify(counts));
        assert.ok(counts.inside > 0, `some requests were answered: ${JSON.stringify(counts)}`);
        assert.ok(counts.leakedByPath > 0, `the swap was racing the requests: ${JSON.stringify(counts)}`);
      } finally {
        const { running, stderr } = await swapper.stop();
        await server.close();
        assert.ok(running, `the swapper kept running: ${stderr}`);
      }
    });
  },
);

function plainRead(path: string): string {
  try {
    return readFileSync(path, "utf8");
  } catch {
    return "";
  }
}

/** Whether the other end closes `socket` within `ms`; the socket is destroyed either way. */
async function closedWithin(socket: Socket, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const closed = await Promise.race([
    once(socket, "close").then(() => true),
    new Promise<boolean>((r) => {
      timer = setTimeout(() => r(false), ms);
    }),
  ]);
  clearTimeout(timer);
  socket.destroy();
  return closed;
}

describe("zstream serve: stalled and slow clients are dropped", () => {
  let dir: string;
  let server: ViewerServer;
  const SIZE = 48 << 20;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), "zs-viewer-stall-"));
    mkdirSync(join(dir, "t", "c"), { recursive: true });
    // Larger than the socket buffers on both ends, so a client that stops reading stalls the send.
    writeFileSync(join(dir, "t", "c", "0"), Buffer.alloc(SIZE, 7));
    server = await serveViewer(dir, { timeouts: { headersMs: 500, requestMs: 1000, idleMs: 500 } });
  });
  after(() => server.close());

  it("a client that stops reading a response is disconnected after the idle timeout", async () => {
    const { port } = new URL(server.url);
    const socket = connect(Number(port), "127.0.0.1");
    await once(socket, "connect");
    socket.write(
      `GET /store/t/c/0 HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n${TOKEN_HEADER}: ${server.token}\r\n\r\n`,
    );
    // Read a little, then stop reading for well past the idle timeout.
    await once(socket, "data");
    socket.pause();
    await new Promise((r) => setTimeout(r, 2500));
    let received = 0;
    socket.on("data", (d: Buffer) => {
      received += d.length;
    });
    socket.resume();
    assert.ok(await closedWithin(socket, 10_000), "the server closed the connection");
    assert.ok(received < SIZE, `the client got ${received} of ${SIZE} bytes: the send was cut off`);
  });

  it("a client that never finishes its request headers is dropped after the headers timeout", async () => {
    const { port } = new URL(server.url);
    const socket = connect(Number(port), "127.0.0.1");
    await once(socket, "connect");
    const started = Date.now();
    socket.write("GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n");
    socket.resume();
    assert.ok(await closedWithin(socket, 10_000), "the server closed the connection");
    assert.ok(Date.now() - started < 5000, `closed after ${Date.now() - started} ms`);
  });
});
