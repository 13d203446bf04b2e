import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { once } from "node:events";
import { mkdir, mkdtemp, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { readOutputManifest, readRecord, readStatic } from "@zarr-stream/reader";
import { SchemaError, StoreError } from "@zarr-stream/spec";
import { canFence, canList, canWrite, FsStore } from "@zarr-stream/store";
import { ZarrStreamWriter } from "@zarr-stream/writer";
import fc from "fast-check";
import { HttpStore, serveViewer, type ViewerServer } from "../src/index.js";
import { answerRange } from "../src/range.js";
import { writeDemo } from "./demo-store.js";
import { httpStoreOf, raw, tokenFetch } from "./serve-client.js";

describe("Range parsing (RFC 9110 §14)", () => {
  it("single ranges, suffixes, open ends; unsatisfiable past the end; malformed or multiple ignored", () => {
    assert.deepEqual(answerRange(undefined, 10), { kind: "full" });
    assert.deepEqual(answerRange("bytes=0-3", 10), { kind: "partial", start: 0, end: 3 });
    assert.deepEqual(answerRange("bytes=4-", 10), { kind: "partial", start: 4, end: 9 });
    assert.deepEqual(answerRange("bytes=8-100", 10), { kind: "partial", start: 8, end: 9 });
    assert.deepEqual(answerRange("bytes=-3", 10), { kind: "partial", start: 7, end: 9 });
    assert.deepEqual(answerRange("bytes=-30", 10), { kind: "partial", start: 0, end: 9 });
    assert.deepEqual(answerRange("bytes=10-", 10), { kind: "unsatisfiable" });
    assert.deepEqual(answerRange("bytes=-0", 10), { kind: "unsatisfiable" });
    assert.deepEqual(answerRange("bytes=0-0", 0), { kind: "unsatisfiable" });
    assert.deepEqual(answerRange("bytes=5-2", 10), { kind: "full" });
    assert.deepEqual(answerRange("bytes=0-1,4-5", 10), { kind: "full" });
    assert.deepEqual(answerRange("items=0-1", 10), { kind: "full" });
    assert.deepEqual(answerRange("bytes=-", 10), { kind: "full" });
  });
});

describe("serveViewer + HttpStore", () => {
  let dir: string;
  let outside: string;
  let server: ViewerServer;
  let store: HttpStore;
  const blob = Uint8Array.from({ length: 1000 }, (_, i) => (i * 7) & 255);

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), "zs-viewer-http-"));
    outside = await mkdtemp(join(tmpdir(), "zs-viewer-secret-"));
    await writeFile(join(outside, "secret.txt"), "TOP SECRET");
    // Keys of the store layout (servableKey): a shard, an empty one, a blob with an odd name.
    await mkdir(join(dir, "a", "c", "0"), { recursive: true });
    await mkdir(join(dir, "blobs", "static", "0"), { recursive: true });
    await writeFile(join(dir, "a", "c", "0", "0"), blob);
    await writeFile(join(dir, "a", "c", "1"), new Uint8Array(0));
    await writeFile(join(dir, "blobs", "static", "0", "we ird#%.bin"), "odd");
    await writeFile(join(dir, "a", "c", ".zs-tmp-123"), "staging");
    await symlink(join(outside, "secret.txt"), join(dir, "a", "c", "2"));
    await symlink(outside, join(dir, "escape"));
    server = await serveViewer(dir);
    store = httpStoreOf(server);
  });
  after(async () => server.close());

  it("serves on 127.0.0.1 only, with a bad port/host/dir refused before listening", async () => {
    assert.match(server.url, /^http:\/\/127\.0\.0\.1:\d+\/$/);
    await assert.rejects(
      serveViewer(dir, { port: 70000 }),
      (e: unknown) => e instanceof SchemaError && e.pointer === "/port",
    );
    await assert.rejects(
      serveViewer(dir, { host: "0.0.0.0" as "127.0.0.1" }),
      (e: unknown) => e instanceof SchemaError && e.pointer === "/host",
    );
    await assert.rejects(serveViewer(join(dir, "nope")), StoreError);
    await assert.rejects(serveViewer(""), SchemaError);
  });

  it("GET with Range: 206, Content-Range and Content-Length match the bytes sent", async () => {
    const r = await raw(server, "/store/a/c/0/0", { Range: "bytes=10-19" });
    assert.equal(r.status, 206);
    assert.equal(r.headers["content-range"], "bytes 10-19/1000");
    assert.equal(r.headers["content-length"], "10");
    assert.deepEqual(new Uint8Array(r.body), blob.slice(10, 20));
    const s = await raw(server, "/store/a/c/0/0", { Range: "bytes=-16" });
    assert.equal(s.status, 206);
    assert.equal(s.headers["content-range"], "bytes 984-999/1000");
    assert.deepEqual(new Uint8Array(s.body), blob.slice(984));
    const full = await raw(server, "/store/a/c/0/0");
    assert.equal(full.status, 200);
    assert.equal(full.headers["content-length"], "1000");
    assert.equal(full.headers["accept-ranges"], "bytes");
    assert.deepEqual(new Uint8Array(full.body), blob);
  });

  it("416 with Content-Range bytes */size for a range past the end; HEAD gives the size without a body", async () => {
    const r = await raw(server, "/store/a/c/0/0", { Range: "bytes=1000-" });
    assert.equal(r.status, 416);
    assert.equal(r.headers["content-range"], "bytes */1000");
    const e = await raw(server, "/store/a/c/1", { Range: "bytes=-4" });
    assert.equal(e.status, 416);
    assert.equal(e.headers["content-range"], "bytes */0");
    const h = await raw(server, "/store/a/c/0/0", {}, "HEAD");
    assert.equal(h.status, 200);
    assert.equal(h.headers["content-length"], "1000");
    assert.equal(h.body.length, 0);
  });

  it("path confinement: '..', encoded '..' and '/', backslashes and symlinks out of the root are refused", async () => {
    for (const path of [
      "/store/../secret.txt",
      "/store/a/../../secret.txt",
      "/store/%2e%2e/secret.txt",
      "/store/a%2f..%2f..%2fsecret.txt",
      "/store/a/%5c..%5csecret.txt",
      "/store/a/c/2",
      "/store/escape/secret.txt",
      "/store//etc/passwd",
      "/store/a/%00",
      "/store/a/c/.zs-tmp-123",
      "/store/a",
    ]) {
      const r = await raw(server, path);
      assert.ok(r.status === 400 || r.status === 404, `${path} gave ${r.status}`);
      assert.ok(!r.body.toString().includes("TOP SECRET"), path);
    }
  });

  it("requests naming another Host are refused (DNS rebinding), other methods get 405", async () => {
    const r = await raw(server, "/store/a/c/0/0", { Host: "evil.example:80" });
    assert.equal(r.status, 421);
    const p = await raw(server, "/store/a/c/0/0", {}, "PUT");
    assert.equal(p.status, 405);
  });

  it("HttpStore reads equal FsStore reads for any offset and length", async () => {
    const fsStore = new FsStore(dir);
    await fc.assert(
      fc.asyncProperty(fc.nat(1100), fc.nat(1100), fc.nat(1100), async (offset, length, n) => {
        assert.deepEqual(
          await store.getRange("a/c/0/0", offset, length),
          await fsStore.getRange("a/c/0/0", offset, length),
        );
        assert.deepEqual(await store.getSuffix("a/c/0/0", n), await fsStore.getSuffix("a/c/0/0", n));
      }),
      { numRuns: 40 },
    );
    assert.deepEqual(await store.get("a/c/0/0"), blob);
    assert.equal(await store.size("a/c/0/0"), 1000);
    assert.deepEqual(await store.get("a/c/1"), new Uint8Array(0));
    assert.deepEqual(await store.getSuffix("a/c/1", 5), new Uint8Array(0));
    assert.equal(await store.get("a/c/9"), undefined);
    assert.equal(await store.getRange("a/c/9", 0, 4), undefined);
    assert.equal(await store.size("a/c/9"), undefined);
    assert.deepEqual(await store.get("blobs/static/0/we ird#%.bin"), new TextEncoder().encode("odd"));
    assert.deepEqual(await store.list("a/"), await fsStore.list("a/"));
    assert.deepEqual(await store.list("a/c/0/"), ["a/c/0/0"]);
  });

  it("HttpStore refuses bad keys with StoreError before any request, and offers no writes", async () => {
    let calls = 0;
    const counting = new HttpStore(`${server.url}store/`, (...args: Parameters<typeof fetch>) => {
      calls++;
      return tokenFetch(server)(...args);
    });
    for (const key of ["", "/abs", "a/../b", "a//b", "a\\b", "a/.zs-tmp-1"])
      await assert.rejects(counting.get(key), StoreError, key);
    await assert.rejects(counting.getRange("a/c/0/0", -1, 3), StoreError);
    await assert.rejects(counting.getSuffix("a/c/0/0", 1.5), StoreError);
    await assert.rejects(counting.list("a/../"), StoreError);
    assert.equal(calls, 0);
    assert.deepEqual([canWrite(counting), canList(counting), canFence(counting)], [false, true, false]);
    assert.throws(() => new HttpStore("ftp://x/"), StoreError);
    assert.throws(() => new HttpStore("not a url"), StoreError);
  });

  it("HttpStore checks what a server sends: a wrong Content-Range or short body is a StoreError", async () => {
    const lying = (status: number, headers: Record<string, string>, body: Uint8Array) =>
      new HttpStore(
        "http://127.0.0.1:1/store/",
        async () => new Response(body as Uint8Array<ArrayBuffer>, { status, headers }),
      );
    await assert.rejects(
      lying(206, { "Content-Range": "bytes 0-3/10" }, new Uint8Array(4)).getRange("k", 2, 4),
      StoreError,
    );
    await assert.rejects(
      lying(206, { "Content-Range": "bytes 2-5/10" }, new Uint8Array(3)).getRange("k", 2, 4),
      StoreError,
    );
    await assert.rejects(lying(206, {}, new Uint8Array(4)).getRange("k", 2, 4), StoreError);
    await assert.rejects(lying(500, {}, new Uint8Array(0)).get("k"), StoreError);
    // A server that ignores Range: the asked-for part is cut out of the whole object.
    const whole = Uint8Array.from([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    assert.deepEqual(await lying(200, {}, whole).getRange("k", 2, 4), whole.slice(2, 6));
    assert.deepEqual(await lying(200, {}, whole).getSuffix("k", 3), whole.slice(7));
  });
});

describe("HttpStore's read cost", () => {
  it("is cheap on a loopback host (localhost, 127.0.0.0/8, [::1]) and per-request elsewhere", () => {
    for (const url of [
      "http://127.0.0.1:8080/store/",
      "http://localhost:1/",
      "http://[::1]:2/",
      "http://127.1/",
    ])
      assert.equal(new HttpStore(url).readCost, "cheap", url);
    for (const url of ["https://example.com/store/", "http://10.0.0.1/", "http://127.0.0.1.example.com/"])
      assert.equal(new HttpStore(url).readCost, "per-request", url);
  });

  it("a one-record box over the viewer's server fetches the chunks it needs, not whole shards", async () => {
    const dir = await mkdtemp(join(tmpdir(), "zs-viewer-window-"));
    // One shard per record of 256 x 256 float64 noise (about 0.5 MB, past the 64 KiB first window), in
    // chunks of 64 x 64 (32 KiB each).
    const n = 256;
    const fsStore = new FsStore(dir);
    const w = await ZarrStreamWriter.create(
      fsStore,
      {
        dims: [
          ["time", 0],
          ["lat", n],
          ["lon", n],
        ],
        time_dim: "time",
        time_mode: "append",
        vars: [{ name: "v", dims: ["time", "lat", "lon"], dtype: "float64" }],
        statics: [],
        chunk_shape: { time: 1, lat: 64, lon: 64 },
        shard_shape: { time: 1, lat: n, lon: n },
        profile: "diagnostic",
      },
      { kind: "single" },
    );
    const data = Float64Array.from({ length: n * n }, (_, i) => Math.sin(i * 12.9898) * 43758.5453);
    await w.writeRecord(0, { v: data });
    await w.close();
    const server = await serveViewer(dir);
    try {
      let bytes = 0;
      const counting = new HttpStore(`${server.url}store/`, async (...args: Parameters<typeof fetch>) => {
        const res = await tokenFetch(server)(...args);
        bytes += Number(res.headers.get("content-length") ?? 0);
        return res;
      });
      const box = { lat: [64, 128] as [number, number], lon: [0, 64] as [number, number] };
      const got = await readRecord(counting, "v", 0, box);
      assert.deepEqual(got, await readRecord(fsStore, "v", 0, box));
      const shardBytes = (await fsStore.size("v/c/0/0/0"))!;
      assert.ok(shardBytes > 4 * 64 * 2 ** 10, `shard of ${shardBytes} bytes`);
      // Metadata, the manifest, a 64 KiB window holding the index, then the one chunk (32 KiB).
      assert.ok(
        bytes < shardBytes / 2,
        `fetched ${bytes} bytes for a 32 KiB chunk of a ${shardBytes}-byte shard`,
      );
    } finally {
      await server.close();
    }
  });
});

describe("§7 read-back through HttpStore equals FsStore, every profile and manifest kind", () => {
  for (const profile of ["diagnostic", "checkpoint", "wasm"] as const) {
    for (const kind of ["v1", "v2", "indexed"] as const) {
      it(`${profile} ${kind}: readOutputManifest, readRecord and readStatic agree`, async () => {
        const demo = await writeDemo(kind, profile, 3);
        const server = await serveViewer(demo.dir);
        try {
          const http = httpStoreOf(server);
          const m = await readOutputManifest(http);
          assert.deepEqual(m, await readOutputManifest(demo.store));
          // The indexed demo commits records 0, 2, 1 in that order.
          for (const i of [0, 1, 2]) {
            for (const v of ["temperature", "wind"]) {
              const a = await readRecord(http, v, i, undefined, { manifest: m });
              const b = await readRecord(demo.store, v, i, undefined, { manifest: m });
              assert.deepEqual(a, b, `${v}[${i}]`);
            }
          }
          const region = await readRecord(http, "temperature", 1, { lat: [3, 9] }, { manifest: m });
          assert.deepEqual(
            region,
            await readRecord(demo.store, "temperature", 1, { lat: [3, 9] }, { manifest: m }),
          );
          if (kind === "v2")
            assert.deepEqual(await readStatic(http, "orography"), await readStatic(demo.store, "orography"));
        } finally {
          await server.close();
        }
      });
    }
  }
});

describe("zstream-viewer bin", () => {
  const BIN = fileURLToPath(new URL("../src/bin.js", import.meta.url));

  it("serves the page, its bundle, numcodecs for the import map and the store; stops on SIGTERM", async () => {
    const demo = await writeDemo("v1", "wasm", 1);
    const child = spawn(process.execPath, [BIN, demo.dir, "--port", "0"], {
      stdio: ["ignore", "pipe", "pipe"],
    });
    try {
      let out = "";
      child.stdout.setEncoding("utf8");
      const url = await new Promise<string>((resolve, reject) => {
        child.stdout.on("data", (d: string) => {
          out += d;
          const m = /at (http:\/\/127\.0\.0\.1:\d+\/)\?token=([\w-]+) /.exec(out);
          if (m) resolve(`${m[1]!} ${m[2]!}`);
        });
        child.once("exit", (code) => reject(new Error(`bin exited ${code}: ${out}`)));
      });
      const [base, token] = url.split(" ") as [string, string];
      const get = (path: string) => fetch(`${base}${path}`, { headers: { "x-zstream-token": token } });
      assert.equal((await fetch(`${base}store/output_manifest.json`)).status, 403, "no token: 403");
      const html = await (await get("")).text();
      assert.match(html, /<script type="importmap">/);
      assert.match(html, /src="\/__viewer\/viewer\.js"/);
      const js = await get("__viewer/viewer.js");
      assert.equal(js.status, 200);
      assert.match(js.headers.get("content-type") ?? "", /javascript/);
      const body = await js.text();
      assert.ok(!body.includes("node:module"), "the bundle must not import node:module");
      assert.ok(!body.includes("createRequire"), "the native addon loader must be stubbed out");
      // The chunks viewer.js imports are served from the bundle's folder, and nothing else there is.
      const chunks = [
        ...body.matchAll(/from"\.\/(chunk-[A-Z0-9]+\.js)"|import\("\.\/(chunk-[A-Z0-9]+\.js)"\)/g),
      ].map((m) => m[1] ?? m[2]);
      assert.ok(chunks.length >= 1, "viewer.js imports its chunks");
      for (const c of chunks) {
        const r = await get(`__viewer/${c}`);
        assert.equal(r.status, 200, c);
        assert.match(r.headers.get("content-type") ?? "", /javascript/, c);
      }
      for (const bad of ["chunk-..%2fmeta.json", "meta.json", "chunk-ABCDEFGH.js", "chunk-abcdefgh.js"])
        assert.equal((await get(`__viewer/${bad}`)).status, 404, bad);
      assert.equal((await get("__viewer/numcodecs/zstd.js")).status, 200);
      assert.equal((await get("__viewer/numcodecs/..%2f..%2fpackage.json")).status, 404);
      const manifest = await get("store/output_manifest.json");
      assert.equal(((await manifest.json()) as { n_records: number }).n_records, 1);
    } finally {
      child.kill("SIGTERM");
      await once(child, "exit");
    }
  });

  it("bad arguments exit 2 with the usage line", () => {
    for (const args of [[], ["a", "b"], ["a", "--port", "x"], ["a", "--port", "99999"], ["a", "--nope"]]) {
      const r = spawnSync(process.execPath, [BIN, ...args], { encoding: "utf8" });
      assert.equal(r.status, 2, args.join(" "));
      assert.match(r.stderr, /usage: zstream-viewer STORE \[--port P\]/);
    }
  });
});
