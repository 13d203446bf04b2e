import net from "node:net";

/**
 * GETs on plain-http keep-alive sockets whose reads land in the caller's buffer: `net.connect`'s `onread`
 * hands the kernel a buffer for every read, and once an answer's head is in, that buffer is the caller's,
 * at the offset the body has reached. No buffer is allocated per socket read, no stream carries the body
 * and nothing is copied in JavaScript; node:http (and undici) allocate 64 KB per read and push it through
 * a stream, which was most of a loopback read-all's CPU above TensorStore's (packages/spec/docs/
 * s3-reads.md, "Below the HTTP client"). Only answers framed by Content-Length are read here; any other
 * (chunked, close-delimited, 1xx) is SocketUnsupported, and the caller sends that request on node:http.
 */

/** The answer is not framed by Content-Length: the request goes to a full HTTP client instead. */
export class SocketUnsupported extends Error {
  override name = "SocketUnsupported";
}

export interface SocketGetOptions {
  host: string;
  port: number;
  connectTimeoutMs: number;
  /** Silence (no byte read) for this long while an answer is awaited or read fails the exchange. */
  requestTimeoutMs: number;
}

/** An answer's unread body. */
export interface SocketBody {
  /** Reads the body into `target`; resolves with the bytes read, fewer than announced if cut short. */
  readInto(target: Uint8Array): Promise<number>;
  /** Drops the body (and its connection). */
  destroy(): void;
}

export interface SocketAnswer {
  status: number;
  /** Header names in lower case. */
  headers: Record<string, string>;
  length: number;
  body: SocketBody;
}

const HEAD_END = Buffer.from("\r\n\r\n");
const MAX_HEAD = 64 * 1024;
const MAX_IDLE = 64;

const timeoutError = (message: string) =>
  Object.assign(new Error(message), { name: "TimeoutError", code: "ETIMEDOUT" });

type Phase = "head" | "held" | "body" | "done";

/** One request and its answer on a connection. */
interface Exchange {
  phase: Phase;
  head: Buffer | undefined;
  /** Body bytes read before the caller named a target (with the head, typically). */
  early: Buffer | undefined;
  length: number;
  n: number;
  target: Uint8Array | undefined;
  keepAlive: boolean;
  lastRead: number;
  /** Why the exchange failed while the caller held the head, to report at readInto. */
  failure: { err: Error; clean: boolean } | undefined;
  resolveHead: (answer: SocketAnswer) => void;
  rejectHead: (err: Error) => void;
  resolveBody: ((n: number) => void) | undefined;
  rejectBody: ((err: Error) => void) | undefined;
  /** (Re)starts the silence clock, which does not run while the caller holds the head. */
  arm: () => void;
  cleanup: () => void;
}

class Connection {
  readonly socket: net.Socket;
  exchange: Exchange | undefined;
  /** An answer was read whole on it: a failure before any byte of the next one may be a stale socket. */
  used = false;
  closed = false;

  constructor(
    readonly options: SocketGetOptions,
    readonly scratch: Buffer,
    readonly onFree: (c: Connection) => void,
  ) {
    this.socket = net.connect({
      host: options.host,
      port: options.port,
      onread: {
        buffer: () => this.#readBuffer(),
        callback: (n: number, buf: Uint8Array) => {
          this.#onRead(n, buf);
          // false would pause the socket; pausing is #onHead's to decide.
          return true;
        },
      },
    });
    this.socket.setNoDelay(true);
    this.socket.on("error", (err) => this.#fail(err, false));
    this.socket.on("close", () => {
      this.closed = true;
      this.#fail(new Error("the server closed the connection"), true);
    });
  }

  /** The buffer for the next read (Node asks at the end of each read). */
  #readBuffer(): Uint8Array {
    const x = this.exchange;
    if (x?.phase === "body" && x.target !== undefined) return x.target.subarray(x.n, x.length);
    return this.scratch;
  }

  #onRead(nread: number, buf: Uint8Array): void {
    const x = this.exchange;
    if (x === undefined || x.phase === "done") {
      // Bytes that belong to no request: the connection cannot be trusted.
      this.socket.destroy();
      return;
    }
    x.lastRead = performance.now();
    if (x.phase === "body" && x.target !== undefined) {
      // Node asks for the next read's buffer at the end of each read, so the first read after readInto
      // lands in the scratch buffer: copied into place; every later one is already there.
      const inPlace = buf.buffer === x.target.buffer && buf.byteOffset === x.target.byteOffset + x.n;
      const room = x.length - x.n;
      if (!inPlace) x.target.set(buf.subarray(0, Math.min(nread, room)), x.n);
      if (nread > room) {
        // Bytes past the announced length answer no request: the body is whole, the connection is not.
        x.n = x.length;
        x.keepAlive = false;
      } else x.n += nread;
      if (x.n === x.length) this.#complete(x);
      return;
    }
    const chunk = Buffer.from(buf.subarray(0, nread));
    if (x.phase === "held") {
      x.early = x.early === undefined ? chunk : Buffer.concat([x.early, chunk]);
      return;
    }
    x.head = x.head === undefined ? chunk : Buffer.concat([x.head, chunk]);
    const end = x.head.indexOf(HEAD_END);
    if (end >= 0) this.#onHead(x, x.head.subarray(0, end).toString("latin1"), x.head.subarray(end + 4));
    else if (x.head.length > MAX_HEAD)
      this.#fail(new Error(`an answer's head passed ${MAX_HEAD} bytes`), false);
  }

  #onHead(x: Exchange, head: string, rest: Buffer): void {
    const lines = head.split("\r\n");
    const statusLine = /^HTTP\/1\.([01]) (\d{3})/.exec(lines[0] ?? "");
    const headers: Record<string, string> = {};
    for (const line of lines.slice(1)) {
      const colon = line.indexOf(":");
      if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
    }
    const status = statusLine === null ? 0 : Number(statusLine[2]);
    const length = headers["content-length"];
    if (status < 200 || length === undefined || !/^\d+$/.test(length) || "transfer-encoding" in headers) {
      this.#fail(new SocketUnsupported(`HTTP ${status} without a Content-Length framing`), false);
      return;
    }
    x.head = undefined;
    x.length = Number(length);
    x.keepAlive = statusLine?.[1] === "1" && !/\bclose\b/i.test(headers.connection ?? "");
    x.early = rest.length > 0 ? Buffer.from(rest) : undefined;
    x.phase = "held";
    if ((x.early?.length ?? 0) >= x.length) this.#complete(x);
    // Nothing more is read until the caller names the body's target (readInto).
    else this.socket.pause();
    x.resolveHead({ status, headers, length: x.length, body: this.#body(x) });
  }

  #body(x: Exchange): SocketBody {
    return {
      readInto: (target) => {
        if (x.length > target.length) {
          const err = new RangeError(`${x.length} bytes do not fit in ${target.length}`);
          // The held connection is never read again: it is closed, not left open.
          this.#fail(err, false);
          return Promise.reject(err);
        }
        const early = x.early?.subarray(0, x.length);
        x.early = undefined;
        if (early !== undefined) target.set(early, 0);
        x.n = early?.length ?? 0;
        if (x.phase === "done") return Promise.resolve(x.n);
        if (x.failure !== undefined)
          return x.failure.clean ? Promise.resolve(x.n) : Promise.reject(x.failure.err);
        return new Promise<number>((resolve, reject) => {
          x.resolveBody = resolve;
          x.rejectBody = reject;
          x.target = target;
          x.phase = "body";
          x.lastRead = performance.now();
          x.arm();
          this.socket.resume();
        });
      },
      destroy: () => {
        if (x.phase === "held") this.#fail(new Error("the body was dropped"), false);
      },
    };
  }

  /** The body is in: the connection serves the next request, unless the answer closes it. */
  #complete(x: Exchange): void {
    const whole = x.n === x.length || (x.phase === "held" && x.early?.length === x.length);
    x.phase = "done";
    x.cleanup();
    this.exchange = undefined;
    this.used = true;
    if (x.keepAlive && whole && !this.closed) this.onFree(this);
    else this.socket.destroy();
    x.resolveBody?.(x.n);
  }

  /**
   * The exchange fails: before the head, its request rejects; while the caller holds the head, the failure
   * waits for readInto; while the body is read, a clean close ends it short (the caller reads again) and
   * anything else rejects.
   */
  #fail(err: Error, clean: boolean): void {
    const x = this.exchange;
    this.exchange = undefined;
    if (!this.socket.destroyed) this.socket.destroy();
    if (x === undefined || x.phase === "done") return;
    x.cleanup();
    if (x.phase === "head") x.rejectHead(err);
    else if (x.phase === "held") x.failure = { err, clean };
    else if (clean) x.resolveBody?.(x.n);
    else x.rejectBody?.(err);
    x.phase = "done";
  }

  /** Sends one request; resolves at its answer's head. */
  send(request: string, signal: AbortSignal): Promise<SocketAnswer> {
    const { connectTimeoutMs, requestTimeoutMs } = this.options;
    return new Promise((resolveHead, rejectHead) => {
      let timer: NodeJS.Timeout | undefined;
      let connectTimer: NodeJS.Timeout | undefined;
      const onAbort = () => this.#fail(Object.assign(new Error("aborted"), { name: "AbortError" }), false);
      const x: Exchange = {
        phase: "head",
        head: undefined,
        early: undefined,
        length: 0,
        n: 0,
        target: undefined,
        keepAlive: false,
        lastRead: performance.now(),
        failure: undefined,
        resolveHead,
        rejectHead,
        resolveBody: undefined,
        rejectBody: undefined,
        arm: () => {
          clearTimeout(timer);
          timer = setTimeout(check, requestTimeoutMs);
        },
        cleanup: () => {
          clearTimeout(timer);
          clearTimeout(connectTimer);
          signal.removeEventListener("abort", onAbort);
        },
      };
      if (signal.aborted) {
        rejectHead(Object.assign(new Error("aborted"), { name: "AbortError" }));
        return;
      }
      this.exchange = x;
      signal.addEventListener("abort", onAbort, { once: true });
      // Silence is measured from the last read: one timer, re-armed for what is left. While the caller
      // holds the head the socket is paused on purpose, and the clock stops until readInto.
      const check = () => {
        if (x.phase === "done" || x.phase === "held") return;
        const idle = performance.now() - x.lastRead;
        if (idle < requestTimeoutMs) {
          timer = setTimeout(check, requestTimeoutMs - idle);
          return;
        }
        if (this.exchange === x) this.#fail(timeoutError(`no byte for ${requestTimeoutMs} ms`), false);
      };
      timer = setTimeout(check, requestTimeoutMs);
      if (this.socket.connecting) {
        connectTimer = setTimeout(() => {
          if (this.socket.connecting && this.exchange === x)
            this.#fail(timeoutError(`not connected within ${connectTimeoutMs} ms`), false);
        }, connectTimeoutMs);
        this.socket.once("connect", () => clearTimeout(connectTimer));
      }
      this.socket.write(request);
    });
  }
}

/** A pool of keep-alive connections to one plain-http endpoint. */
export class SocketGets {
  readonly #options: SocketGetOptions;
  readonly #idle: Connection[] = [];
  /** One scratch buffer for every connection's head reads: a read's bytes are taken before the next one. */
  readonly #scratch = Buffer.allocUnsafe(64 * 1024);
  #destroyed = false;

  constructor(options: SocketGetOptions) {
    this.#options = options;
  }

  #connection(): Connection {
    for (let c = this.#idle.pop(); c !== undefined; c = this.#idle.pop()) {
      if (c.closed) continue;
      c.socket.ref();
      return c;
    }
    return new Connection(this.#options, this.#scratch, (c) => {
      if (this.#destroyed || this.#idle.length >= MAX_IDLE) {
        c.socket.destroy();
        return;
      }
      // An idle connection does not keep the process alive (as node:http's agent leaves its free sockets).
      c.socket.unref();
      this.#idle.push(c);
    });
  }

  /**
   * Sends a GET of `path` with `headers` (signed, host included) and resolves at its answer's head. A
   * reused connection that fails before any byte of the answer (the server closed it while it sat idle)
   * is replaced by a fresh one once.
   */
  async get(path: string, headers: Record<string, string>, signal: AbortSignal): Promise<SocketAnswer> {
    let request = `GET ${path} HTTP/1.1\r\n`;
    for (const [name, value] of Object.entries(headers)) request += `${name}: ${value}\r\n`;
    request += "\r\n";
    const c = this.#connection();
    try {
      return await c.send(request, signal);
    } catch (err) {
      const stale = c.used && !signal.aborted && !(err instanceof SocketUnsupported) && !isTimeout(err);
      if (!stale) throw err;
      return this.#connection().send(request, signal);
    }
  }

  destroy(): void {
    this.#destroyed = true;
    for (const c of this.#idle.splice(0)) c.socket.destroy();
  }
}

function isTimeout(err: unknown): boolean {
  return (err as { name?: unknown } | null)?.name === "TimeoutError";
}
