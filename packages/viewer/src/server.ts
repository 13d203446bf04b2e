import { randomBytes, timingSafeEqual } from "node:crypto";
import { closeSync, constants, type Dirent, openSync } from "node:fs";
import { type FileHandle, lstat, open, readdir, realpath, stat } from "node:fs/promises";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { basename, join } from "node:path";
import { FD_PATHS, openBeneath } from "@zarr-stream/fileio";
import { SchemaError, StoreError, ZarrStreamError } from "@zarr-stream/spec";
import { FsStore } from "@zarr-stream/store";
import { keyProblem, TEMP_PREFIX } from "@zarr-stream/store/browser";
import { buildViewerBundle, codecWasmFile, isBundleChunk, numcodecsDir } from "./bundle.js";
import { LIST_PATH, NODES_PATH } from "./http-store.js";
import { ASSET_PREFIX, CODEC_WASM, STORE_PREFIX, viewerHtml } from "./page-html.js";
import { answerRange } from "./range.js";
import { servableKey } from "./servable.js";

export interface ViewerServerOptions {
  /** 0 or absent: any free port. */
  port?: number;
  /** Only loopback is served. */
  host?: "127.0.0.1";
  /**
   * The secret every request must carry (TOKEN_HEADER, or the cookie the page URL sets). Absent: a fresh
   * random one. null: none, so any local user can read the store (a trusted machine only).
   */
  token?: string | null;
  /** Connection bounds, for tests; DEFAULT_TIMEOUTS otherwise. */
  timeouts?: Partial<ViewerTimeouts>;
}

export interface ViewerTimeouts {
  /** A client must send its request headers within this (server.headersTimeout). */
  headersMs: number;
  /** ... and the whole request within this (server.requestTimeout). */
  requestMs: number;
  /** A connection with no byte moving either way for this long is closed (server.timeout). */
  idleMs: number;
}

/**
 * Headers within 10 s and a request within 30 s cut off a client that trickles its request; 30 s idle
 * drops one that stopped reading a response (or holds a connection open) while the largest object (a
 * shard of a few MB) still reaches a live client on the slowest link with room to spare.
 */
export const DEFAULT_TIMEOUTS: ViewerTimeouts = { headersMs: 10_000, requestMs: 30_000, idleMs: 30_000 };

/** The header a non-browser client sends the token in. */
export const TOKEN_HEADER = "x-zstream-token";

export interface ViewerServer {
  /** The server's base, e.g. http://127.0.0.1:41234/ ; the store itself is at <url>store/. */
  url: string;
  /** The page to open: <url>?token=… (the page's first load sets the cookie), or url without a token. */
  pageUrl: string;
  /** The secret each request carries; undefined when serving without one. */
  token: string | undefined;
  close(): Promise<void>;
}

/**
 * __nodes walks the tree for zarr.json at most this deep, through at most this many directories, and
 * lists at most this many nodes, so a huge or hostile tree (40,000 empty directories) cannot stall it.
 */
const MAX_NODES = 10_000;
const MAX_DIRS = 2_000;
const MAX_DEPTH = 32;
/** Objects open with O_NONBLOCK: a FIFO put in the store answers 404 at once instead of hanging. */
const OPEN_FLAGS = constants.O_RDONLY | constants.O_NONBLOCK;

/** The request was answered already (a redirect); nothing more to send. */
class Answered extends Error {}

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
  if (opts.token !== undefined && opts.token !== null && !/^[A-Za-z0-9_-]{16,}$/.test(opts.token))
    throw new SchemaError("serveViewer: token must be 16 or more of A-Z a-z 0-9 _ -, or null", "/token");
  for (const [name, ms] of Object.entries(opts.timeouts ?? {}))
    if (!Number.isInteger(ms) || ms < 1)
      throw new SchemaError(
        `serveViewer: timeouts.${name} must be a positive integer (ms)`,
        `/timeouts/${name}`,
      );
  return port;
}

/** Whether `given` is the token, compared in constant time. */
function tokenMatches(given: string | undefined, token: string): boolean {
  if (given === undefined) return false;
  const a = Buffer.from(given);
  const b = Buffer.from(token);
  return a.length === b.length && timingSafeEqual(a, b);
}

function cookieValue(header: string | undefined, name: string): string | undefined {
  for (const part of (header ?? "").split(";")) {
    const eq = part.indexOf("=");
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

/**
 * Serves the viewer page and the store under `storeDir` on 127.0.0.1: GET/HEAD of store objects with
 * single-range support (206 + Content-Range, 416 past the end), GET /store/__list?prefix= (keys) and
 * /store/__nodes (zarr.json keys). Every request carries the token (403 without it); only the objects the
 * store layout defines are served (servableKey), opened without following any link below the root, and
 * only regular files. Security model: packages/viewer/README.md, "Security".
 */
export async function serveViewer(storeDir: string, opts: ViewerServerOptions = {}): Promise<ViewerServer> {
  const port = checkOptions(storeDir, opts);
  const token = opts.token === null ? undefined : (opts.token ?? randomBytes(32).toString("base64url"));
  const timeouts = { ...DEFAULT_TIMEOUTS, ...opts.timeouts };
  const st = await stat(storeDir).catch(() => undefined);
  if (!st?.isDirectory()) throw new StoreError(`serveViewer: ${storeDir} is not a directory`, storeDir);
  const root = await realpath(storeDir);
  const bundleDir = await buildViewerBundle();
  const codecsDir = numcodecsDir();
  const wasmFile = codecWasmFile();
  const fsStore = new FsStore(root);
  const html = viewerHtml(basename(root));

  const server = createServer(
    {
      headersTimeout: timeouts.headersMs,
      requestTimeout: timeouts.requestMs,
      // How often Node checks those two (default 30 s, which would stretch a 10 s bound to 40 s).
      connectionsCheckingInterval: Math.min(1_000, timeouts.headersMs),
    },
    (req, res) => {
      handle(req, res).catch((err: unknown) => {
        if (err instanceof Answered) return;
        const status = err instanceof HttpProblem ? err.status : 500;
        const message = err instanceof Error ? err.message : String(err);
        if (!res.headersSent) send(res, req, status, "text/plain; charset=utf-8", `${message}\n`);
        else res.destroy();
      });
    },
  );
  // With no 'timeout' listener, Node destroys a socket idle this long (no byte read or written).
  server.timeout = timeouts.idleMs;
  // The cookie name carries the port: cookies are per host, not per port, and two servers must not
  // overwrite each other's.
  let cookieName = "";

  /**
   * The token from the header or the cookie; for the page itself also from ?token= (the URL printed),
   * answered with a redirect that sets the cookie and drops the token from the address bar. Data
   * requests never take it from the query string, which would leak it into logs and histories.
   */
  function authorized(req: IncomingMessage, res: ServerResponse, url: URL): boolean {
    if (token === undefined) return true;
    const header = req.headers[TOKEN_HEADER];
    if (tokenMatches(typeof header === "string" ? header : undefined, token)) return true;
    if (tokenMatches(cookieValue(req.headers.cookie, cookieName), token)) return true;
    if ((url.pathname === "/" || url.pathname === "/index.html") && url.searchParams.has("token")) {
      if (!tokenMatches(url.searchParams.get("token") ?? undefined, token)) return false;
      res.writeHead(303, {
        Location: "/",
        "Set-Cookie": `${cookieName}=${token}; Path=/; HttpOnly; SameSite=Strict`,
        "Cache-Control": "no-store",
        "Content-Length": 0,
      });
      res.end();
      throw new Answered();
    }
    return false;
  }

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
    if (!authorized(req, res, url))
      throw new HttpProblem(403, "this server needs its token: open the URL it printed (?token=…)");
    const path = url.pathname;
    if (path === "/favicon.ico") return send(res, req, 204, "text/plain", "");
    if (path === "/" || path === "/index.html") return send(res, req, 200, "text/html; charset=utf-8", html);
    if (
      path === `${ASSET_PREFIX}viewer.js` ||
      path === `${ASSET_PREFIX}viewer.js.map` ||
      (path.startsWith(ASSET_PREFIX) && isBundleChunk(path.slice(ASSET_PREFIX.length)))
    ) {
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
      return send(res, req, 200, "application/json", JSON.stringify(keys.filter(servableKey)));
    }
    if (path === `${STORE_PREFIX}${NODES_PATH}`)
      return send(res, req, 200, "application/json", JSON.stringify(await zarrJsonKeys(root, fsStore)));
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
  cookieName = `zstream-token-${bound}`;
  const base = `http://127.0.0.1:${bound}/`;
  return {
    url: base,
    pageUrl: token === undefined ? base : `${base}?token=${token}`,
    token,
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
  if (!servableKey(key)) throw new HttpProblem(404, "not found (not an object of the store layout)");
  // Skips the open of anything but a regular file in the common case (a device's open can act); the
  // fstat in sendHandle decides, whatever is swapped in between.
  const path = join(root, key);
  if (!(await lstat(path).catch(() => undefined))?.isFile()) throw new HttpProblem(404, "not found");
  // No link below the root is followed, and where the descriptor landed is checked before any byte is
  // sent, so a directory swapped for a link to /etc mid-request yields 404, never a byte from outside.
  const handle = await openBeneath(path, root.length, OPEN_FLAGS).catch(() => undefined);
  if (handle === undefined) throw new HttpProblem(404, "not found");
  return sendHandle(
    req,
    res,
    handle,
    key.endsWith(".json") ? "application/json" : "application/octet-stream",
  );
}

/**
 * One open file handle answers the request, so a concurrent atomic replace never mixes two versions. The
 * strong ETag names that file (inode, size, modification time, as FsStore's versions do), and a request
 * whose If-Match names none of the file's is answered 412: a reader that pinned a version by its ETag
 * learns the object was replaced instead of getting the new one's bytes.
 */
async function sendFile(req: IncomingMessage, res: ServerResponse, file: string, type: string) {
  const handle = await open(file, OPEN_FLAGS).catch(() => undefined);
  if (handle === undefined) throw new HttpProblem(404, "not found");
  return sendHandle(req, res, handle, type);
}

/** Answers from an open file (sendFile), which it closes; anything but a regular file is a 404. */
async function sendHandle(req: IncomingMessage, res: ServerResponse, handle: FileHandle, type: string) {
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

/**
 * Every zarr.json key, not descending into an array's chunk tree, into hidden or staging directories, nor
 * through links: each directory is opened with O_NOFOLLOW through its parent's descriptor (as FsStore's
 * list does), and each zarr.json read through FsStore, so a swap mid-walk leads nowhere outside.
 */
async function zarrJsonKeys(root: string, store: FsStore): Promise<string[]> {
  const out: string[] = [];
  let dirs = 0;
  const walk = async (dir: string, prefix: string, depth: number): Promise<void> => {
    if (depth > MAX_DEPTH || out.length >= MAX_NODES || ++dirs > MAX_DIRS) return;
    const entries: Dirent[] = await readdir(dir, { withFileTypes: true }).catch(() => []);
    if (entries.some((e) => e.isFile() && e.name === "zarr.json")) {
      out.push(`${prefix}zarr.json`);
      const doc = await store
        .get(`${prefix}zarr.json`)
        .then((b) => (b === undefined ? undefined : (JSON.parse(Buffer.from(b).toString("utf8")) as unknown)))
        .catch(() => undefined);
      if ((doc as { node_type?: unknown } | undefined)?.node_type === "array") return;
    }
    for (const e of entries) {
      if (!e.isDirectory() || e.name.startsWith(".") || e.name.startsWith(TEMP_PREFIX)) continue;
      let fd: number;
      try {
        fd = openSync(`${dir}/${e.name}`, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW);
      } catch {
        continue;
      }
      try {
        await walk(
          FD_PATHS === undefined ? `${dir}/${e.name}` : `${FD_PATHS}/${fd}`,
          `${prefix}${e.name}/`,
          depth + 1,
        );
      } finally {
        closeSync(fd);
      }
      if (out.length >= MAX_NODES || dirs > MAX_DIRS) return;
    }
  };
  await walk(root, "", 0);
  return out.sort();
}
