// A measuring stick, not a client for use: S3 GETs on bare TCP sockets whose reads land straight in the
// caller's buffer (net.connect's `onread` with a buffer function), so no buffer is allocated per socket
// read and no stream carries the body. It speaks just enough HTTP/1.1 for the bench's reads from a
// loopback gateway: plain http, a Content-Length on every answer, keep-alive unless the answer says
// `connection: close`; any other status than 2xx and 404 rejects. It has no timeouts and no retries.
// s3-gets.mjs and s3-read-all.mjs run it beside S3Store to show what a GET costs below Node's HTTP
// clients (packages/spec/docs/s3-reads.md, "Below the HTTP client").
import { createHash, createHmac } from "node:crypto";
import net from "node:net";
import { SignatureV4 } from "@smithy/signature-v4";

const bytesOf = (d) =>
  typeof d === "string"
    ? d
    : d instanceof ArrayBuffer
      ? new Uint8Array(d)
      : new Uint8Array(d.buffer, d.byteOffset, d.byteLength);

/** SHA-256 and HMAC-SHA-256 on node:crypto in the shape the signer takes. */
class Sha256 {
  constructor(secret) {
    this.hash = secret === undefined ? createHash("sha256") : createHmac("sha256", bytesOf(secret));
  }
  update(data) {
    this.hash.update(bytesOf(data));
  }
  digest() {
    return Promise.resolve(new Uint8Array(this.hash.digest()));
  }
}

const HEAD_END = Buffer.from("\r\n\r\n");

export class SocketGets {
  /** `endpoint` an http:// URL; credentials from AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY. */
  constructor(endpoint, bucket) {
    this.url = new URL(endpoint);
    if (this.url.protocol !== "http:") throw new Error("SocketGets speaks plain http only");
    this.bucket = bucket;
    this.idle = [];
    this.scratch = Buffer.allocUnsafe(64 * 1024);
    this.signer = new SignatureV4({
      credentials: {
        accessKeyId: process.env.AWS_ACCESS_KEY_ID,
        secretAccessKey: process.env.AWS_SECRET_ACCESS_KEY,
      },
      region: process.env.AWS_REGION ?? "us-east-1",
      service: "s3",
      sha256: Sha256,
      uriEscapePath: false,
      applyChecksum: false,
    });
  }

  /** A connection: reads go to `scratch` until an answer's headers are in, then into the caller's buffer. */
  #connect() {
    const c = { sock: undefined, req: undefined };
    const target = () => (c.req?.len !== undefined ? c.req.into.subarray(c.req.n, c.req.len) : this.scratch);
    const done = (req, value, reuse) => {
      c.req = undefined;
      if (reuse) this.idle.push(c);
      else c.sock.destroy();
      req.resolve(value);
    };
    const onread = (nread, buf) => {
      const req = c.req;
      if (req === undefined) return;
      if (req.len !== undefined) {
        req.n += nread;
        if (req.n >= req.len) done(req, req.n, req.reuse);
        return;
      }
      req.head = req.head
        ? Buffer.concat([req.head, buf.subarray(0, nread)])
        : Buffer.from(buf.subarray(0, nread));
      const end = req.head.indexOf(HEAD_END);
      if (end < 0) return;
      const text = req.head.subarray(0, end).toString("latin1");
      const status = Number(text.slice(9, 12));
      const length = /\r\ncontent-length:\s*(\d+)/i.exec(text);
      const reuse = !/\r\nconnection:\s*close/i.test(text);
      if (status === 404) return done(req, undefined, false);
      if (status < 200 || status >= 300 || length === null) {
        c.req = undefined;
        c.sock.destroy();
        return req.reject(
          new Error(`SocketGets: HTTP ${status}${length === null ? " without a length" : ""}`),
        );
      }
      const len = Number(length[1]);
      if (len > req.into.length) {
        c.req = undefined;
        c.sock.destroy();
        return req.reject(new Error(`SocketGets: ${len} bytes, the buffer holds ${req.into.length}`));
      }
      const rest = req.head.subarray(end + HEAD_END.length);
      req.into.set(rest, 0);
      Object.assign(req, { head: undefined, len, n: rest.length, reuse });
      if (req.n >= len) done(req, req.n, reuse);
    };
    c.sock = net.connect({
      host: this.url.hostname,
      port: Number(this.url.port || 80),
      onread: { buffer: target, callback: onread },
    });
    c.sock.setNoDelay(true);
    c.sock.on("error", (err) => c.req?.reject(err));
    c.sock.on("close", () => {
      this.idle = this.idle.filter((x) => x !== c);
      c.req?.reject(new Error("SocketGets: the connection closed mid-answer"));
    });
    return c;
  }

  /** GET `key` with the HTTP `range` into `into`; resolves with the byte count, or undefined on 404. */
  async get(key, range, into) {
    const path = `${this.url.pathname.replace(/\/+$/, "")}/${this.bucket}/${key}`;
    const signed = await this.signer.sign({
      method: "GET",
      protocol: "http:",
      hostname: this.url.hostname,
      port: Number(this.url.port || 80),
      path,
      query: {},
      headers: { host: this.url.host, "x-amz-content-sha256": "UNSIGNED-PAYLOAD", range },
    });
    let request = `GET ${path} HTTP/1.1\r\n`;
    for (const [k, v] of Object.entries(signed.headers)) request += `${k}: ${v}\r\n`;
    request += "\r\n";
    const c = this.idle.pop() ?? this.#connect();
    return new Promise((resolve, reject) => {
      c.req = { into, resolve, reject };
      c.sock.write(request);
    });
  }

  close() {
    for (const c of this.idle) c.sock.destroy();
    this.idle = [];
  }
}

/**
 * `store` (an S3Store) with its reads into a caller's buffer through SocketGets: what the shard reader
 * calls for a shard's bytes. Keys are the bench's (plain ASCII, no prefix), so they need no escaping.
 */
export function withSocketGets(store, endpoint) {
  const gets = new SocketGets(endpoint, store.bucket);
  return {
    url: store.url,
    readCost: store.readCost,
    get: (k) => store.get(k),
    size: (k) => store.size(k),
    getRange: (k, offset, n) => store.getRange(k, offset, n),
    getSuffix: (k, n) => store.getSuffix(k, n),
    getSuffixInto: (k, n, into) => gets.get(k, `bytes=-${n}`, into),
    getRangeInto: (k, offset, n, into) => gets.get(k, `bytes=${offset}-${offset + n - 1}`, into),
    list: (prefix) => store.list(prefix),
    close: async () => {
      gets.close();
      await store.close();
    },
  };
}
