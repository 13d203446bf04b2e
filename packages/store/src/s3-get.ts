import { createHash, createHmac } from "node:crypto";
import http, { type IncomingMessage } from "node:http";
import https from "node:https";
import { setTimeout as sleep } from "node:timers/promises";
import { SignatureV4 } from "@smithy/signature-v4";

/**
 * Ranged GETs of S3Store without the SDK's per-request machinery: one SigV4-signed request on node:http
 * through a keep-alive agent, its body handed over as the socket delivers it. The SDK resolves its
 * middleware stack, serializes through its schema, builds its user agent and wraps the body for every
 * request: 1.5-1.8 ms of CPU per small GET through S3Store where we measured, against 0.7-1 ms here, and a
 * reader makes one GET per shard (packages/spec/docs/s3-reads.md has the figures). Everything else (writes, HEAD, LIST,
 * multipart) stays on the SDK. The answer mimics the SDK's where S3Store looks at it: `$metadata`
 * (httpStatusCode, attempts) on errors, ContentLength and ETag and an async-iterable Body on success.
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

export interface LeanGetOptions {
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
  Body: IncomingMessage;
}

/** An HTTP answer that is an error, shaped as the SDK's service errors are where S3Store looks. */
export class LeanGetError extends Error {
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

export class LeanGet {
  readonly #o: LeanGetOptions;
  readonly #agent: http.Agent;
  readonly #signer: SignatureV4;
  readonly #client: typeof http | typeof https;

  constructor(options: LeanGetOptions) {
    this.#o = options;
    const secure = options.endpoint.protocol === "https:";
    this.#client = secure ? https : http;
    // Keep-alive saves a TCP (and TLS) handshake per GET where the server keeps connections open.
    this.#agent = new (secure ? https.Agent : http.Agent)({ keepAlive: true, maxSockets: 64 });
    this.#signer = new SignatureV4({
      credentials: options.credentials,
      region: options.region,
      service: "s3",
      sha256: NodeSha256,
      // The path is escaped once, by encodeKey, as S3 signs it.
      uriEscapePath: false,
      applyChecksum: false,
    });
  }

  /**
   * GET `key` (a full object key) with `range` and `ifMatch`; resolves with the headers and the unread
   * body of a 2xx answer, rejects with a LeanGetError carrying the status otherwise. 5xx, 429 and
   * connection failures are retried (maxAttempts in all, backing off as the SDK does); the body is the
   * caller's to read, and its failures are the caller's to retry.
   */
  async get(
    key: string,
    range: string | undefined,
    ifMatch: string | undefined,
    signal: AbortSignal,
  ): Promise<LeanGetOutput> {
    const { endpoint, bucket, maxAttempts } = this.#o;
    const path = `${endpoint.pathname.replace(/\/+$/, "")}/${bucket}/${encodeKey(key)}`;
    const host = endpoint.host;
    for (let attempt = 1; ; attempt++) {
      const headers: Record<string, string> = { host, "x-amz-content-sha256": "UNSIGNED-PAYLOAD" };
      if (range !== undefined) headers.range = range;
      if (ifMatch !== undefined) headers["if-match"] = ifMatch;
      const signed = await this.#signer.sign({
        method: "GET",
        protocol: endpoint.protocol,
        hostname: endpoint.hostname,
        port: endpoint.port === "" ? undefined : Number(endpoint.port),
        path,
        query: {},
        headers,
      });
      try {
        const res = await this.#send(host, path, signed.headers as Record<string, string>, signal);
        const status = res.statusCode ?? 0;
        if (status >= 200 && status < 300) {
          const length = res.headers["content-length"];
          return {
            ContentLength: length === undefined ? undefined : Number(length),
            ETag: res.headers.etag,
            Body: res,
          };
        }
        const code = await errorCode(res);
        const message = `S3 GET answered HTTP ${status}${code ? ` ${code}` : ""}`;
        throw new LeanGetError(message, code ?? `Http${status}`, status, attempt);
      } catch (err) {
        const status = err instanceof LeanGetError ? err.$metadata.httpStatusCode : undefined;
        // A 4xx is an answer; a connection that failed or went silent, a 5xx or a 429 is tried again,
        // unless the deadline aborted the call (then at once) or the attempts are used up.
        const retryable = status === undefined ? !signal.aborted : RETRYABLE_STATUS.has(status);
        if (!retryable || attempt >= maxAttempts) {
          if (err instanceof LeanGetError) throw err;
          throw Object.assign(err as Error, { $metadata: { attempts: attempt } });
        }
      }
      const delay = Math.random() * Math.min(BACKOFF_MAX_MS, BACKOFF_BASE_MS * 2 ** attempt);
      await sleep(delay, undefined, { signal });
    }
  }

  /** One request: resolves with the response once its headers arrive. */
  #send(
    host: string,
    path: string,
    headers: Record<string, string>,
    signal: AbortSignal,
  ): Promise<IncomingMessage> {
    const { endpoint, connectTimeoutMs, requestTimeoutMs } = this.#o;
    return new Promise((resolve, reject) => {
      let response: IncomingMessage | undefined;
      const req = this.#client.request(
        {
          protocol: endpoint.protocol,
          hostname: endpoint.hostname,
          port: endpoint.port === "" ? undefined : Number(endpoint.port),
          method: "GET",
          path,
          headers: { ...headers, host },
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
      req.end();
    });
  }

  destroy(): void {
    this.#agent.destroy();
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
