import { lstat, open, readdir, readFile, realpath, stat } from "node:fs/promises";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { basename, join, sep } from "node:path";
import { SchemaError, StoreError, ZarrStreamError } from "@zarr-stream/spec";
import { FsStore } from "@zarr-stream/store";
import { keyProblem, TEMP_PREFIX } from "@zarr-stream/store/browser";
import { buildViewerBundle, codecWasmFile, numcodecsDir } from "./bundle.js";
import { LIST_PATH, NODES_PATH } from "./http-store.js";
import { ASSET_PREFIX, CODEC_WASM, STORE_PREFIX, viewerHtml } from "./page-html.js";
import { answerRange } from "./range.js";

export interface ViewerServerOptions {
  /** 0 or absent: any free port. */
  port?: number;
  /** Only loopback is served: the viewer has no authentication. */
  host?: "127.0.0.1";
}

export interface ViewerServer {
  /** The page, e.g. http://127.0.0.1:41234/ ; the store itself is at <url>store/. */
  url: string;
  close(): Promise<void>;
}

/** A store tree is walked for zarr.json at most this deep / this many nodes, so a huge tree cannot stall. */
const MAX_NODES = 10_000;
const MAX_DEPTH = 32;

class HttpProblem extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

function checkOptions(storeDir: unknown, opts: ViewerServerOptions): number {
  if (typeof storeDir !== "string" || storeDir === "" || storeDir.includes("\0"))
    throw new SchemaError(
      `serveViewer: storeDir must be a non-empty path, got ${JSON.stringify(storeDir)}`,
      "/storeDir",
    );
  const port = opts.port ?? 0;
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    throw new SchemaError(
      `serveViewer: port must be an integer 0..65535, got ${JSON.stringify(opts.port)}`,
      "/port",
    );
  if (opts.host !== undefined && opts.host !== "127.0.0.1")
    throw new SchemaError(
      `serveViewer: host must be "127.0.0.1" (loopback only), got ${JSON.stringify(opts.host)}`,
      "/host",
    );
  return port;
}

/**
 * Serves the viewer page and the store under `storeDir` on 127.0.0.1: GET/HEAD of store objects with
 * single-range support (206 + Content-Range, 416 past the end), keys confined to the store root (no
 * "..", no symlink leading out), GET /store/__list?prefix= (keys) and /store/__nodes (zarr.json keys).
 */
export async function serveViewer(storeDir: string, opts: ViewerServerOptions = {}): Promise<ViewerServer> {
  const port = checkOptions(storeDir, opts);
  const st = await stat(storeDir).catch(() => undefined);
  if (!st?.isDirectory()) throw new StoreError(`serveViewer: ${storeDir} is not a directory`, storeDir);
  const root = await realpath(storeDir);
  const bundleDir = await buildViewerBundle();
  const codecsDir = numcodecsDir();
  const wasmFile = codecWasmFile();
  const fsStore = new FsStore(root);
  const html = viewerHtml(basename(root));

  const server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      const status = err instanceof HttpProblem ? err.status : 500;
      const message = err instanceof Error ? err.message : String(err);
      if (!res.headersSent) send(res, req, status, "text/plain; charset=utf-8", `${message}\n`);
      else res.destroy();
    });
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const address = server.address() as AddressInfo;
    // A page on another site could point a DNS name at 127.0.0.1; only our own host names are answered.
    const host = req.headers.host ?? "";
    if (host !== `127.0.0.1:${address.port}` && host !== `localhost:${address.port}`)
      throw new HttpProblem(421, `unexpected Host ${JSON.stringify(host)}`);
    if (req.method !== "GET" && req.method !== "HEAD") {
      res.setHeader("Allow", "GET, HEAD");
      throw new HttpProblem(405, `method ${req.method} not allowed`);
    }
    const url = new URL(req.url ?? "/", `http://${host}`);
    const path = url.pathname;
    if (path === "/favicon.ico") return send(res, req, 204, "text/plain", "");
    if (path === "/" || path === "/index.html") return send(res, req, 200, "text/html; charset=utf-8", html);
    if (path === `${ASSET_PREFIX}viewer.js` || path === `${ASSET_PREFIX}viewer.js.map`) {
      const file = join(bundleDir, path.slice(ASSET_PREFIX.length));
      return sendFile(req, res, file, contentType(file));
    }
    if (path === `${ASSET_PREFIX}${CODEC_WASM}`) return sendFile(req, res, wasmFile, "application/wasm");
    if (path.startsWith(`${ASSET_PREFIX}numcodecs/`)) {
      const name = path.slice(`${ASSET_PREFIX}numcodecs/`.length);
      if (!/^[A-Za-z0-9_-]+\.js$/.test(name)) throw new HttpProblem(404, "not found");
      return sendFile(req, res, join(codecsDir, name), "text/javascript; charset=utf-8");
    }
    if (path === `${STORE_PREFIX}${LIST_PATH}`) {
      const prefix = url.searchParams.get("prefix") ?? "";
      let keys: string[];
      try {
        keys = await fsStore.list(prefix);
      } catch (err) {
        if (err instanceof ZarrStreamError) throw new HttpProblem(400, err.message);
        throw err;
      }
      return send(res, req, 200, "application/json", JSON.stringify(keys));
    }
    if (path === `${STORE_PREFIX}${NODES_PATH}`)
      return send(res, req, 200, "application/json", JSON.stringify(await zarrJsonKeys(root)));
    if (path.startsWith(STORE_PREFIX))
      return sendStoreObject(req, res, root, path.slice(STORE_PREFIX.length));
    throw new HttpProblem(404, "not found");
  }

  await new Promise<void>((resolve, reject) => {
    server.once("error", (err: NodeJS.ErrnoException) =>
      reject(
        new ZarrStreamError(`serveViewer: cannot listen on 127.0.0.1:${port} (${err.code ?? err.message})`),
      ),
    );
    server.listen(port, "127.0.0.1", () => resolve());
  });
  const bound = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${bound}/`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

function contentType(file: string): string {
  if (file.endsWith(".js")) return "text/javascript; charset=utf-8";
  if (file.endsWith(".json") || file.endsWith(".map")) return "application/json";
  return "application/octet-stream";
}

function send(res: ServerResponse, req: IncomingMessage, status: number, type: string, body: string): void {
  const bytes = Buffer.from(body, "utf8");
  res.writeHead(status, {
    "Content-Type": type,
    "Content-Length": bytes.length,
    "Cache-Control": "no-store",
  });
  res.end(req.method === "HEAD" ? undefined : bytes);
}

/** Decodes the URL path of a key and holds it to the Store key rules; anything else is a 400. */
function keyFromUrlPath(rest: string): string {
  let key: string;
  try {
    key = rest.split("/").map(decodeURIComponent).join("/");
  } catch {
    throw new HttpProblem(400, "malformed percent-encoding in the key");
  }
  // A segment that decodes to something holding "/" would change the key's shape: refuse it.
  if (key.split("/").length !== rest.split("/").length) throw new HttpProblem(400, "encoded '/' in a key");
  const bad = keyProblem(key);
  if (bad !== undefined) throw new HttpProblem(400, `store key ${JSON.stringify(key)} ${bad}`);
  return key;
}

async function sendStoreObject(req: IncomingMessage, res: ServerResponse, root: string, rest: string) {
  const key = keyFromUrlPath(rest);
  const path = join(root, key);
  // The lexical check keeps ".." out; realpath keeps a symlink inside the store from leading outside it.
  const real = await realpath(path).catch(() => undefined);
  if (real === undefined || !real.startsWith(root + sep)) throw new HttpProblem(404, "not found");
  return sendFile(req, res, real, key.endsWith(".json") ? "application/json" : "application/octet-stream");
}

/**
 * One open file handle answers the request, so a concurrent atomic replace never mixes two versions. The
 * strong ETag names that file (inode, size, modification time, as FsStore's versions do), and a request
 * whose If-Match names none of the file's is answered 412: a reader that pinned a version by its ETag
 * learns the object was replaced instead of getting the new one's bytes.
 */
async function sendFile(
  req: IncomingMessage,
  res: ServerResponse,
  file: string,
  type: string,
): Promise<void> {
  const handle = await open(file, "r").catch(() => undefined);
  if (handle === undefined) throw new HttpProblem(404, "not found");
  let handedOff = false;
  try {
    const st = await handle.stat({ bigint: true });
    if (!st.isFile()) throw new HttpProblem(404, "not found");
    const size = Number(st.size);
    const etag = `"${st.ino.toString(16)}-${st.size.toString(16)}-${st.mtimeNs.toString(16)}"`;
    if (!ifMatchHolds(req.headers["if-match"], etag)) {
      res.writeHead(412, { ETag: etag, "Cache-Control": "no-store", "Content-Length": 0 });
      res.end();
      return;
    }
    const range = answerRange(req.headers.range, size);
    const headers: Record<string, string | number> = {
      "Content-Type": type,
      "Accept-Ranges": "bytes",
      "Cache-Control": "no-store",
      ETag: etag,
    };
    if (range.kind === "unsatisfiable") {
      res.writeHead(416, { ...headers, "Content-Range": `bytes */${size}`, "Content-Length": 0 });
      res.end();
      return;
    }
    const [start, end] = range.kind === "partial" ? [range.start, range.end] : [0, size - 1];
    const length = size === 0 ? 0 : end - start + 1;
    if (range.kind === "partial") headers["Content-Range"] = `bytes ${start}-${end}/${size}`;
    res.writeHead(range.kind === "partial" ? 206 : 200, { ...headers, "Content-Length": length });
    if (req.method === "HEAD" || length === 0) {
      res.end();
      return;
    }
    // The stream owns the handle from here and closes it when done or destroyed.
    const stream = handle.createReadStream({ start, end });
    handedOff = true;
    stream.on("error", () => res.destroy());
    res.on("close", () => stream.destroy());
    stream.pipe(res);
  } finally {
    if (!handedOff) await handle.close();
  }
}

/** RFC 9110 §13.1.1: absent, "*", or a list naming `etag` (strong comparison: a weak tag never matches). */
function ifMatchHolds(header: string | undefined, etag: string): boolean {
  if (header === undefined) return true;
  const tags = header.split(",").map((t) => t.trim());
  return tags.includes("*") || tags.includes(etag);
}

/** Every zarr.json key, not descending into an array's chunk tree nor through symlinks. */
async function zarrJsonKeys(root: string): Promise<string[]> {
  const out: string[] = [];
  const walk = async (dir: string, prefix: string, depth: number): Promise<void> => {
    if (depth > MAX_DEPTH || out.length >= MAX_NODES) return;
    const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
    const meta = entries.find((e) => e.isFile() && e.name === "zarr.json");
    if (meta) {
      out.push(`${prefix}zarr.json`);
      const doc = await readFile(join(dir, "zarr.json"), "utf8").then(
        (t) => JSON.parse(t) as { node_type?: unknown },
        () => undefined,
      );
      if (doc?.node_type === "array") return;
    }
    for (const e of entries) {
      if (!e.isDirectory() || e.name.startsWith(".") || e.name.startsWith(TEMP_PREFIX)) continue;
      if (!(await lstat(join(dir, e.name))).isDirectory()) continue;
      await walk(join(dir, e.name), `${prefix}${e.name}/`, depth + 1);
    }
  };
  await walk(root, "", 0);
  return out.sort();
}
