import { createHash, createHmac } from "node:crypto";
import http, { type IncomingMessage } from "node:http";
import https from "node:https";
import { setTimeout as sleep } from "node:timers/promises";
import type { SignatureV4 } from "@smithy/signature-v4";
import { type SocketBody, SocketGets, SocketUnsupported } from "./socket-get.js";

/**
 * Ranged GETs, HEADs and single-request PUTs of S3Store without the SDK's per-request machinery: one
 * SigV4-signed request, a GET's body handed over as it arrives. The SDK resolves its middleware stack,
 * serializes through its schema, builds its user agent and wraps the body for every request: 1.5-1.8 ms
 * of CPU per small GET through S3Store where we measured, against 0.7-1 ms here, and a reader makes one
 * GET per shard. On a plain-http endpoint a GET goes out on a socket whose reads land in the caller's
 * buffer (socket-get.ts): on a loopback read-all that halved the CPU per GB against node:http and took
 * the read from 0.66-0.69x TensorStore's speed to 1.03-1.28x (packages/spec/docs/s3-reads.md). https
 * endpoints, answers the socket path cannot frame, HEADs and PUTs go through node:http with a keep-alive
 * agent: on a loopback write of 796 MB (300 PUTs of up to 2.7 MB) the lean PUTs took the writer's CPU
 * from 2.62-2.70 s to 2.33-2.36 s and its speed from 352-364 to 396 MB/s; a HEAD costs a third of the
 * SDK's CPU. LIST, DELETE and multipart uploads stay on the SDK. The answer mimics the SDK's where
 * S3Store looks at it: `$metadata` (httpStatusCode, attempts) on errors, ContentLength and ETag and the
 * unread Body on success.
 */

/** SourceData (string, ArrayBuffer or a view) as what node:crypto takes. */
function bytes(data: string | ArrayBuffer | ArrayBufferView): string | Uint8Array {
  if (typeof data === "string") return data;
  if (data instanceof ArrayBuffer) return new Uint8Array(data);
  return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
}

/** A SHA-256 (or HMAC-SHA-256 with a secret) in the shape the signer takes, on node:crypto. */
class NodeSha256 {
  readonly #hash: { update(data: string | Uint8Array): unknown; digest(): Buffer };
  constructor(secret?: string | ArrayBuffer | ArrayBufferView) {
    this.#hash = secret === undefined ? createHash("sha256") : createHmac("sha256", bytes(secret));
  }
  update(data: string | ArrayBuffer | ArrayBufferView): void {
    this.#hash.update(bytes(data));
  }
  digest(): Promise<Uint8Array> {
    return Promise.resolve(new Uint8Array(this.#hash.digest()));
  }
}

export interface LeanRequestOptions {
  /** The endpoint; requests are path-style (`<endpoint>/<bucket>/<key>`), as the SDK sends them to one. */
  endpoint: URL;
  bucket: string;
  region: () => Promise<string>;
  credentials: () => Promise<{ accessKeyId: string; secretAccessKey: string; sessionToken?: string }>;
  maxAttempts: number;
  connectTimeoutMs: number;
  requestTimeoutMs: number;
}

/** What S3Store reads of a GET's answer (the SDK's GetObjectCommandOutput's fields of those names). */
export interface LeanGetOutput {
  ContentLength: number | undefined;
  ETag: string | undefined;
  /** A node:http body (a stream), or a socket body that reads straight into a buffer (socket-get.ts). */
  Body: IncomingMessage | SocketBody;
}

/** An HTTP answer that is an error, shaped as the SDK's service errors are where S3Store looks. */
export class LeanRequestError extends Error {
  readonly $metadata: { httpStatusCode?: number; attempts: number };
  constructor(message: string, name: string, status: number | undefined, attempts: number, cause?: unknown) {
    super(message, { cause });
    this.name = name;
    this.$metadata = { httpStatusCode: status, attempts };
  }
}

/** The S3 key as a URI path: every byte but RFC 3986's unreserved ones escaped, "/" kept (SigV4's rule). */
function encodeKey(key: string): string {
  return key
    .split("/")
    .map((s) =>
      encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`),
    )
    .join("/");
}

const RETRYABLE_STATUS = new Set([429, 500, 502, 503, 504]);
/** The SDK's standard strategy's figures: full jitter over 100 ms x 2^attempt, at most 20 s. */
const BACKOFF_BASE_MS = 100;
const BACKOFF_MAX_MS = 20_000;

export class LeanRequests {
  readonly #o: LeanRequestOptions;
  readonly #agent: http.Agent;
  #signer: Promise<SignatureV4> | undefined;
  readonly #client: typeof http | typeof https;
  /** Plain-http endpoints: GETs on sockets that read into the caller's buffer; node:http for the rest. */
  readonly #sockets: SocketGets | undefined;

  constructor(options: LeanRequestOptions) {
    this.#o = options;
    const secure = options.endpoint.protocol === "https:";
    this.#client = secure ? https : http;
    // Keep-alive saves a TCP (and TLS) handshake per GET where the server keeps connections open.
    this.#agent = new (secure ? https.Agent : http.Agent)({ keepAlive: true, maxSockets: 64 });
    this.#sockets = secure
      ? undefined
      : new SocketGets({
          host: options.endpoint.hostname.replace(/^\[|\]$/g, ""),
          port: options.endpoint.port === "" ? 80 : Number(options.endpoint.port),
          connectTimeoutMs: options.connectTimeoutMs,
          requestTimeoutMs: options.requestTimeoutMs,
        });
  }

  /**
   * The SigV4 signer, its module loaded on the first GET: a process that never reads S3 (every local
   * writer) does not pay the 15-25 ms of CPU that loading it takes.
   */
  #signerOf(): Promise<SignatureV4> {
    this.#signer ??= import("@smithy/signature-v4").then(
      ({ SignatureV4: Signer }) =>
        new Signer({
          credentials: this.#o.credentials,
          region: this.#o.region,
          service: "s3",
          sha256: NodeSha256,
          // The path is escaped once, by encodeKey, as S3 signs it.
          uriEscapePath: false,
          applyChecksum: false,
        }),
    );
    return this.#signer;
  }

  /**
   * GET `key` (a full object key) with `range` and `ifMatch`; resolves with the headers and the unread
   * body of a 2xx answer, rejects with a LeanRequestError carrying the status otherwise. Retried as
   * #attempts says; the body is the caller's to read, and its failures are the caller's to retry.
   */
  async get(
    key: string,
    range: string | undefined,
    ifMatch: string | undefined,
    signal: AbortSignal,
  ): Promise<LeanGetOutput> {
    const extra: Record<string, string> = {};
    if (range !== undefined) extra.range = range;
    if (ifMatch !== undefined) extra["if-match"] = ifMatch;
    return this.#attempts("GET", key, extra, signal, async (path, headers, attempt) => {
      const sent = await this.#sendOnSocket(path, headers, signal);
      if (sent !== undefined) {
        if (sent.status >= 200 && sent.status < 300) {
          return { ContentLength: sent.length, ETag: sent.headers.etag, Body: sent.body };
        }
        throw answerError("GET", sent.status, await socketErrorCode(sent.length, sent.body), attempt);
      }
      const res = await this.#send("GET", path, headers, signal);
      const status = res.statusCode ?? 0;
      if (status >= 200 && status < 300) {
        return { ContentLength: contentLength(res.headers), ETag: res.headers.etag, Body: res };
      }
      throw answerError("GET", status, await errorCode(res), attempt);
    });
  }

  /**
   * PUT `body` at `key` (a full object key), with `ifMatch` or `ifNoneMatch` ("*") when given; resolves with
   * the answer's ETag (undefined when it sent none), rejects with a LeanRequestError carrying the status of
   * an answer that is not 2xx (a refused condition is a 412). Retried as #attempts says, with the attempt
   * count on the error, as the SDK's PutObject reports it, so a retry that meets its own landed write can
   * be told from a refusal (S3Store's #write).
   */
  async put(
    key: string,
    body: Uint8Array,
    condition: { ifMatch?: string; ifNoneMatch?: string },
    signal: AbortSignal,
  ): Promise<string | undefined> {
    const headers: Record<string, string> = { "content-length": String(body.length) };
    if (condition.ifMatch !== undefined) headers["if-match"] = condition.ifMatch;
    if (condition.ifNoneMatch !== undefined) headers["if-none-match"] = condition.ifNoneMatch;
    return (await this.#answered("PUT", key, headers, signal, body)).etag;
  }

  /**
   * HEAD `key` (a full object key), with `ifMatch` when given: the ETag and length of a 2xx answer; a
   * LeanRequestError with the status otherwise (404 absent, 412 replaced), retried as `put` is.
   */
  async head(
    key: string,
    ifMatch: string | undefined,
    signal: AbortSignal,
  ): Promise<{ ETag: string | undefined; ContentLength: number | undefined }> {
    const headers: Record<string, string> = {};
    if (ifMatch !== undefined) headers["if-match"] = ifMatch;
    const answer = await this.#answered("HEAD", key, headers, signal);
    return { ETag: answer.etag, ContentLength: contentLength(answer) };
  }

  /** A PUT or HEAD on node:http: the headers of its 2xx answer, whose body is drained; a LeanRequestError otherwise. */
  #answered(
    method: "PUT" | "HEAD",
    key: string,
    extra: Record<string, string>,
    signal: AbortSignal,
    body?: Uint8Array,
  ): Promise<IncomingMessage["headers"]> {
    return this.#attempts(method, key, extra, signal, async (path, headers, attempt) => {
      const res = await this.#send(method, path, headers, signal, body);
      const status = res.statusCode ?? 0;
      if (status >= 200 && status < 300) {
        res.resume();
        return res.headers;
      }
      // A HEAD's answer has no body to name the error by.
      const code = method === "HEAD" ? undefined : await errorCode(res);
      if (method === "HEAD") res.resume();
      throw answerError(method, status, code, attempt);
    });
  }

  /**
   * `send` with `key`'s path and the request's SigV4-signed headers (UNSIGNED-PAYLOAD, `extra` among the
   * signed ones), once per attempt. A 4xx is an answer; a connection that failed or went silent, a 5xx or
   * a 429 is tried again with the SDK's standard back-off, unless the deadline aborted the call (then at
   * once) or maxAttempts are used up: the last failure then carries the attempt count
   * (`$metadata.attempts`), as the SDK's errors do.
   */
  async #attempts<T>(
    method: "GET" | "PUT" | "HEAD",
    key: string,
    extra: Record<string, string>,
    signal: AbortSignal,
    send: (path: string, headers: Record<string, string>, attempt: number) => Promise<T>,
  ): Promise<T> {
    const { endpoint, bucket, maxAttempts } = this.#o;
    const path = `${endpoint.pathname.replace(/\/+$/, "")}/${bucket}/${encodeKey(key)}`;
    const signer = await this.#signerOf();
    for (let attempt = 1; ; attempt++) {
      const signed = await signer.sign({
        method,
        protocol: endpoint.protocol,
        hostname: endpoint.hostname,
        port: endpoint.port === "" ? undefined : Number(endpoint.port),
        path,
        query: {},
        headers: { host: endpoint.host, "x-amz-content-sha256": "UNSIGNED-PAYLOAD", ...extra },
      });
      try {
        return await send(path, signed.headers as Record<string, string>, attempt);
      } catch (err) {
        const status = err instanceof LeanRequestError ? err.$metadata.httpStatusCode : undefined;
        const retryable = status === undefined ? !signal.aborted : RETRYABLE_STATUS.has(status);
        if (!retryable || attempt >= maxAttempts) {
          if (err instanceof LeanRequestError) throw err;
          throw Object.assign(err as Error, { $metadata: { attempts: attempt } });
        }
      }
      const delay = Math.random() * Math.min(BACKOFF_MAX_MS, BACKOFF_BASE_MS * 2 ** attempt);
      await sleep(delay, undefined, { signal });
    }
  }

  /** One request on the socket path; undefined where it does not apply (https, or an answer it cannot frame). */
  async #sendOnSocket(path: string, headers: Record<string, string>, signal: AbortSignal) {
    if (this.#sockets === undefined) return undefined;
    try {
      return await this.#sockets.get(path, headers, signal);
    } catch (err) {
      if (err instanceof SocketUnsupported) return undefined;
      throw err;
    }
  }

  /** One request (with `body`, if any): resolves with the response once its headers arrive. */
  #send(
    method: "GET" | "PUT" | "HEAD",
    path: string,
    headers: Record<string, string>,
    signal: AbortSignal,
    body?: Uint8Array,
  ): Promise<IncomingMessage> {
    const { endpoint, connectTimeoutMs, requestTimeoutMs } = this.#o;
    return new Promise((resolve, reject) => {
      let response: IncomingMessage | undefined;
      const req = this.#client.request(
        {
          protocol: endpoint.protocol,
          hostname: endpoint.hostname,
          port: endpoint.port === "" ? undefined : Number(endpoint.port),
          method,
          path,
          headers: { ...headers, host: endpoint.host },
          agent: this.#agent,
          signal,
        },
        (res) => {
          clearTimeout(connectTimer);
          response = res;
          resolve(res);
        },
      );
      // No byte either way for requestTimeoutMs, the body's reading included (the socket stays armed).
      req.setTimeout(requestTimeoutMs, () => {
        const timeout = Object.assign(new Error(`no byte for ${requestTimeoutMs} ms`), {
          name: "TimeoutError",
        });
        // A body being read ends with this error rather than node's plain "aborted", so a body that goes
        // silent on every attempt is reported as the timeout it is (StoreTimeout).
        response?.destroy(timeout);
        req.destroy(timeout);
      });
      const connectTimer = setTimeout(() => {
        req.destroy(
          Object.assign(new Error(`not connected within ${connectTimeoutMs} ms`), { name: "TimeoutError" }),
        );
      }, connectTimeoutMs);
      req.on("socket", (socket) => {
        if (!socket.connecting) clearTimeout(connectTimer);
        else socket.once("connect", () => clearTimeout(connectTimer));
      });
      req.on("error", (err) => {
        clearTimeout(connectTimer);
        reject(err);
      });
      req.end(body);
    });
  }

  destroy(): void {
    this.#agent.destroy();
    this.#sockets?.destroy();
  }
}

/** The error of an answer that is not 2xx: its status, and the S3 error code (else HttpNNN) as its name. */
function answerError(
  method: string,
  status: number,
  code: string | undefined,
  attempt: number,
): LeanRequestError {
  const message = `S3 ${method} answered HTTP ${status}${code ? ` ${code}` : ""}`;
  return new LeanRequestError(message, code ?? `Http${status}`, status, attempt);
}

/** The Content-Length an answer announced, if any. */
function contentLength(headers: IncomingMessage["headers"]): number | undefined {
  const length = headers["content-length"];
  return length === undefined ? undefined : Number(length);
}

/** The <Code> of an error body on the socket path (at most 64 KiB read; a longer one is dropped). */
async function socketErrorCode(length: number, body: SocketBody): Promise<string | undefined> {
  if (length > 64 * 1024) {
    body.destroy();
    return undefined;
  }
  const text = new Uint8Array(length);
  try {
    const n = await body.readInto(text);
    return /<Code>([^<]+)<\/Code>/.exec(Buffer.from(text.buffer, 0, n).toString("utf8"))?.[1];
  } catch {
    return undefined;
  }
}

/** The <Code> of an S3 error body (read whole: error bodies are small), or undefined. */
async function errorCode(res: IncomingMessage): Promise<string | undefined> {
  let text = "";
  try {
    for await (const chunk of res) {
      if (text.length < 64 * 1024) text += (chunk as Buffer).toString("utf8");
    }
  } catch {
    return undefined;
  }
  return /<Code>([^<]+)<\/Code>/.exec(text)?.[1];
}
