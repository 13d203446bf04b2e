import type { Readable } from "node:stream";
import { setTimeout as sleep } from "node:timers/promises";
import type {
  GetObjectCommandOutput,
  HeadObjectCommandOutput,
  S3Client,
  S3ClientConfig,
} from "@aws-sdk/client-s3";
import { SchemaError, StoreError, StoreTimeout } from "@zarr-stream/spec";
import * as check from "./arguments.js";
import { withDeadline } from "./deadline.js";
import { assertValidPrefix, keyProblem } from "./keys.js";
import { loopbackHost } from "./loopback.js";
import { type LeanGetOutput, LeanRequests } from "./s3-lean.js";
import type { SocketBody } from "./socket-get.js";
import type { PinnedObject, ReadCost, Store } from "./store.js";
import { type PinnedAnswer, VersionPin } from "./version-pin.js";

/** The SDK module, loaded on first use so that opening a local store never pays for it. */
type Sdk = typeof import("@aws-sdk/client-s3");
let sdkModule: Promise<Sdk> | undefined;
const loadSdk = (): Promise<Sdk> => {
  sdkModule ??= import("@aws-sdk/client-s3");
  return sdkModule;
};

export interface S3StoreOptions {
  bucket: string;
  /** Key prefix inside the bucket ("" or "runs/42"); store keys live below `<prefix>/`. */
  prefix?: string;
  /** Endpoint URL; default AWS_ENDPOINT_URL_S3, then AWS_ENDPOINT_URL, else AWS's own. */
  endpoint?: string;
  /** Default AWS_REGION, then AWS_DEFAULT_REGION, then "us-east-1". */
  region?: string;
  /** Default: the SDK's provider chain (AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, profiles, ...). */
  credentials?: { accessKeyId: string; secretAccessKey: string; sessionToken?: string };
  /** Path-style URLs (needed by most local servers). Default AWS_S3_FORCE_PATH_STYLE, else true iff an endpoint is set. */
  forcePathStyle?: boolean;
  /** Objects larger than this go up as a multipart upload (default 64 MiB; S3's floor for a part is 5 MiB). */
  multipartThreshold?: number;
  /** Part size of multipart uploads (default 16 MiB). */
  partSize?: number;
  /** Attempts per request, the first included (default 5). The SDK's standard retry strategy backs off
   *  exponentially with jitter on 5xx, throttling and connection errors, and never retries other 4xx. */
  maxAttempts?: number;
  /** One attempt fails when its TCP connection is not established within this long (default 10 s). */
  connectTimeoutMs?: number;
  /**
   * One attempt fails when its connection carries no byte, either way, for this long (default 30 s). It is
   * an idle bound, not a transfer bound, so a slow upload that keeps moving is not cut off. The SDK retries
   * a timed-out attempt like a connection error.
   */
  requestTimeoutMs?: number;
  /**
   * Every S3 request ends within this long, its retries, back-off and response body included (default
   * ZSTREAM_S3_TIMEOUT_MS, else 120 s); past it the request is aborted and the store call throws
   * StoreTimeout. A store call makes one request, except `list` (one per page of 1000 keys) and a
   * multipart `put` (one per part). The attempt timeouts are capped at this bound.
   */
  deadlineMs?: number;
  /** A ready client (tests, custom middleware); endpoint/region/credentials and the attempt timeouts are then ignored. */
  client?: S3Client;
  /**
   * Reads (get, getRange, getSuffix and their pinned and `Into` forms), HEADs (size, version) and
   * single-request writes through the SDK's GetObject, HeadObject and PutObject even where the lean path
   * applies (default false). The lean path (s3-lean.ts) serves stores with an endpoint set, path-style
   * addressing and no ready `client`; it signs and sends each GET, HEAD and PUT itself, at a fraction of
   * the SDK's CPU per request (packages/spec/docs/s3-reads.md). LIST, DELETE and multipart uploads always
   * go through the SDK.
   */
  sdkRequests?: boolean;
  /**
   * Sign each request body's SHA-256 (default false: UNSIGNED-PAYLOAD, as the SDK sends over https).
   * Over https TLS protects the body either way; over plain http a signed payload also lets the server
   * refuse a body altered in transit, at a SHA-256 pass over every byte written.
   */
  signedPayload?: boolean;
}

/** Defaults of the timeouts (store-capabilities.md, "Deadlines", says why these). */
export const S3_TIMEOUT_DEFAULTS = {
  connectTimeoutMs: 10_000,
  requestTimeoutMs: 30_000,
  deadlineMs: 120_000,
} as const;
/** The environment variable that sets the default `deadlineMs` (the CLI and `openStore` have no options). */
export const S3_TIMEOUT_ENV = "ZSTREAM_S3_TIMEOUT_MS";

const MiB = 1024 * 1024;
const CONFLICT_ATTEMPTS = 5;
/** Reads of one GET whose body arrived cut short, the first included. */
const BODY_ATTEMPTS = 4;
const MIN_PART = 5 * MiB;

/** Conditions S3 evaluates atomically at the moment the new object would become visible. */
type WriteCondition = { ifNoneMatch: "*" } | { ifMatch: string } | undefined;

/**
 * A Store on an S3 bucket (AWS or any S3-compatible server). Every write is a single PutObject, or a
 * multipart upload that becomes visible only at CompleteMultipartUpload, so readers never see a part.
 * `putIfAbsent` and `putIfVersion` are S3 conditional writes (If-None-Match / If-Match): the server
 * decides, so they are exclusive across processes and machines.
 */
export class S3Store implements Store {
  readonly url: string;
  /** "per-request", or "cheap" when the endpoint is on this machine (loopbackHost: no network crossed). */
  readonly readCost: ReadCost;
  readonly bucket: string;
  /** "" or "<prefix>/": prepended to every key. */
  readonly #root: string;
  readonly #options: S3StoreOptions;
  readonly #threshold: number;
  readonly #partSize: number;
  readonly #timeouts: { connectTimeoutMs: number; requestTimeoutMs: number; deadlineMs: number };
  #client: Promise<S3Client> | undefined;
  #lean: Promise<LeanRequests | undefined> | undefined;

  constructor(options: S3StoreOptions) {
    const { bucket } = options ?? {};
    if (typeof bucket !== "string" || !/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(bucket)) {
      throw new StoreError(`S3 bucket name ${JSON.stringify(bucket)} is not a valid bucket name`);
    }
    const prefix = (options.prefix ?? "").replace(/^\/+|\/+$/g, "");
    if (prefix !== "") assertValidPrefix(`${prefix}/`);
    this.#threshold = options.multipartThreshold ?? 64 * MiB;
    this.#partSize = options.partSize ?? 16 * MiB;
    for (const [name, value] of [
      ["multipartThreshold", this.#threshold],
      ["partSize", this.#partSize],
    ] as const) {
      if (!Number.isSafeInteger(value) || value < MIN_PART) {
        throw new StoreError(`S3Store ${name} must be an integer >= ${MIN_PART} (5 MiB), got ${value}`);
      }
    }
    this.#timeouts = timeouts(options);
    this.bucket = bucket;
    this.#root = prefix === "" ? "" : `${prefix}/`;
    this.#options = options;
    this.url = `s3://${bucket}${prefix === "" ? "" : `/${prefix}`}`;
    this.readCost = onThisMachine(this.#endpoint()) ? "cheap" : "per-request";
  }

  /** `s3://bucket[/prefix]` plus options; the URL's bucket and prefix win over the options'. */
  static fromUrl(url: string, options: Omit<S3StoreOptions, "bucket" | "prefix"> = {}): S3Store {
    const m = /^s3:\/\/([^/?#]+)\/?([^?#]*)$/i.exec(url);
    if (m === null) throw new StoreError(`${url} is not an s3://bucket[/prefix] URL`);
    return new S3Store({ ...options, bucket: m[1]!, prefix: decodeURIComponent(m[2]!) });
  }

  async get(key: string): Promise<Uint8Array | undefined> {
    check.key(key);
    return (await this.#getObject(key, undefined))?.bytes;
  }

  async getRange(key: string, offset: number, length: number): Promise<Uint8Array | undefined> {
    check.range(key, offset, length);
    // An HTTP range cannot be empty; the object's presence is all a zero-length read can report.
    if (length === 0) return (await this.size(key)) === undefined ? undefined : new Uint8Array(0);
    return (await this.#getObject(key, `bytes=${offset}-${offset + length - 1}`))?.bytes;
  }

  async getSuffix(key: string, n: number): Promise<Uint8Array | undefined> {
    check.suffix(key, n);
    if (n === 0) return (await this.size(key)) === undefined ? undefined : new Uint8Array(0);
    return (await this.#getObject(key, `bytes=-${n}`))?.bytes;
  }

  /** getSuffix into the caller's buffer: the body streams into `into` (no buffer of its own per read). */
  async getSuffixInto(key: string, n: number, into: Uint8Array): Promise<number | undefined> {
    check.suffix(key, n);
    checkInto("getSuffixInto", into);
    if (n === 0) return (await this.size(key)) === undefined ? undefined : 0;
    return (await this.#getObject(key, `bytes=-${n}`, undefined, into))?.bytes.length;
  }

  /** getRange into the caller's buffer, as getSuffixInto. */
  async getRangeInto(
    key: string,
    offset: number,
    length: number,
    into: Uint8Array,
  ): Promise<number | undefined> {
    check.range(key, offset, length);
    checkInto("getRangeInto", into);
    if (length === 0) return (await this.size(key)) === undefined ? undefined : 0;
    return (await this.#getObject(key, `bytes=${offset}-${offset + length - 1}`, undefined, into))?.bytes
      .length;
  }

  /**
   * Reads of one version: the ETag of the first answer rides as If-Match on every later GET of the pin,
   * requests that are made anyway; 412 means the object was replaced (ObjectChanged).
   */
  pin(key: string): PinnedObject {
    check.key(key);
    const pin = new VersionPin(key, `S3Store ${this.url}`);
    const read = (what: string, range: string | undefined, into?: Uint8Array) =>
      pin.read(what, async (ifMatch): Promise<PinnedAnswer<Uint8Array>> => {
        try {
          // An HTTP range cannot be empty: a HEAD answers whether the pinned version is still there.
          const got =
            range === undefined
              ? await this.#head(what, key, ifMatch).then(
                  (h) => h && { bytes: new Uint8Array(0), version: h.ETag },
                )
              : await this.#getObject(key, range, ifMatch, into);
          return got === undefined ? "absent" : { value: got.bytes, version: got.version };
        } catch (err) {
          if (ifMatch !== undefined && httpStatus(err instanceof StoreError ? err.cause : err) === 412)
            return "changed";
          throw err;
        }
      });
    return {
      key,
      getRange: (offset, length) => {
        check.range(key, offset, length);
        return read("getRange", length === 0 ? undefined : `bytes=${offset}-${offset + length - 1}`);
      },
      getSuffix: (n) => {
        check.suffix(key, n);
        return read("getSuffix", n === 0 ? undefined : `bytes=-${n}`);
      },
      getRangeInto: async (offset, length, into) => {
        check.range(key, offset, length);
        checkInto("getRangeInto", into);
        const range = length === 0 ? undefined : `bytes=${offset}-${offset + length - 1}`;
        return (await read("getRangeInto", range, into))?.length;
      },
      getSuffixInto: async (n, into) => {
        check.suffix(key, n);
        checkInto("getSuffixInto", into);
        return (await read("getSuffixInto", n === 0 ? undefined : `bytes=-${n}`, into))?.length;
      },
      close: () => Promise.resolve(),
    };
  }

  async size(key: string): Promise<number | undefined> {
    check.key(key);
    const head = await this.#head("size", key);
    return head === undefined ? undefined : (head.ContentLength ?? 0);
  }

  async put(key: string, bytes: Uint8Array): Promise<void> {
    check.write(key, bytes);
    await this.#write("put", key, bytes, undefined);
  }

  async putIfAbsent(key: string, bytes: Uint8Array): Promise<boolean> {
    check.write(key, bytes);
    return (await this.#write("putIfAbsent", key, bytes, { ifNoneMatch: "*" })) !== undefined;
  }

  /**
   * A source that ends within one part goes up as one PutObject (as put sends it); a longer one as a
   * multipart upload fed part by part, so at most one part being filled and four in flight are held.
   * With ifAbsent the condition (If-None-Match: *) is S3's at CompleteMultipartUpload, as for putIfAbsent.
   */
  async putStream(
    key: string,
    chunks: AsyncIterable<Uint8Array>,
    options: { ifAbsent?: boolean } = {},
  ): Promise<boolean> {
    check.stream(key, chunks);
    const condition: WriteCondition = options.ifAbsent ? { ifNoneMatch: "*" } : undefined;
    // Cheap early answer for the common "already there" case; the conditional write is what decides.
    if (options.ifAbsent && (await this.#head("putStream", key)) !== undefined) return false;
    const parts = new PartFiller(chunks, Math.min(this.#partSize, this.#threshold));
    const first = await parts.next();
    if (parts.done) return (await this.#write("putStream", key, first, condition)) !== undefined;
    return (
      (await this.#multipartFrom(key, first, new PartFiller(parts, this.#partSize), condition)) !== undefined
    );
  }

  /** The object and its ETag, or undefined when absent. */
  async getVersioned(key: string): Promise<{ bytes: Uint8Array; version: string } | undefined> {
    check.key(key);
    const got = await this.#getObject(key, undefined);
    if (got !== undefined && got.version === "") throw noEtag("getVersioned", key);
    return got;
  }

  /** The object's ETag from a HEAD, or undefined when absent. */
  async version(key: string): Promise<string | undefined> {
    check.key(key);
    const head = await this.#head("version", key);
    if (head === undefined) return undefined;
    if (!head.ETag) throw noEtag("version", key);
    return head.ETag;
  }

  /** PUT with If-Match: expected (If-None-Match: * when expected is null); undefined on 412. */
  async putIfVersion(key: string, bytes: Uint8Array, expected: string | null): Promise<string | undefined> {
    check.conditionalWrite(key, bytes, expected);
    const condition: WriteCondition = expected === null ? { ifNoneMatch: "*" } : { ifMatch: expected };
    const version = await this.#write("putIfVersion", key, bytes, condition);
    if (version === "") throw noEtag("putIfVersion", key);
    return version;
  }

  async delete(key: string): Promise<void> {
    check.key(key);
    const { DeleteObjectCommand } = await loadSdk();
    try {
      await this.#request("delete", key, (s3, abortSignal) =>
        s3.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: this.#root + key }), { abortSignal }),
      );
    } catch (err) {
      if (httpStatus(err) === 404) return;
      throw s3Error("delete", key, err);
    }
  }

  async list(prefix: string): Promise<string[]> {
    check.prefix(prefix);
    const { ListObjectsV2Command } = await loadSdk();
    const keys: string[] = [];
    try {
      // Page by page (the SDK's paginator takes no abort signal, and each page gets its own deadline).
      let token: string | undefined;
      do {
        const input = { Bucket: this.bucket, Prefix: this.#root + prefix, ContinuationToken: token };
        const page = await this.#request("list", prefix, (s3, abortSignal) =>
          s3.send(new ListObjectsV2Command(input), { abortSignal }),
        );
        for (const object of page.Contents ?? []) {
          const key = object.Key?.slice(this.#root.length);
          // Objects no store key could name (folder markers "a/", "a//b") are not objects of this store.
          if (key !== undefined && keyProblem(key) === undefined) keys.push(key);
        }
        token = page.IsTruncated ? page.NextContinuationToken : undefined;
      } while (token !== undefined);
    } catch (err) {
      throw s3Error("list", prefix, err);
    }
    // S3 lists in UTF-8 byte order; the Store contract is UTF-16 code-unit order.
    return keys.sort();
  }

  /** The object's HEAD response, or undefined when absent. */
  async #head(
    action: string,
    key: string,
    ifMatch?: string,
  ): Promise<Pick<HeadObjectCommandOutput, "ETag" | "ContentLength"> | undefined> {
    const { HeadObjectCommand } = await loadSdk();
    const lean = await this.#leanRequests();
    try {
      return await this.#request<Pick<HeadObjectCommandOutput, "ETag" | "ContentLength">>(
        action,
        key,
        (s3, abortSignal) =>
          lean !== undefined
            ? lean.head(this.#root + key, ifMatch, abortSignal)
            : s3.send(
                new HeadObjectCommand({ Bucket: this.bucket, Key: this.#root + key, IfMatch: ifMatch }),
                {
                  abortSignal,
                },
              ),
      );
    } catch (err) {
      if (httpStatus(err) === 404) return undefined;
      throw s3Error(action, key, err);
    }
  }

  /** The object or a range of it with its ETag; with `ifMatch`, a 412 rejects (StoreError, cause 412). */
  async #getObject(
    key: string,
    range: string | undefined,
    ifMatch?: string,
    into?: Uint8Array,
  ): Promise<{ bytes: Uint8Array; version: string } | undefined> {
    const { GetObjectCommand } = await loadSdk();
    const lean = await this.#leanRequests();
    try {
      // The body is read inside the deadline: a server that sends headers and then stalls is silent too.
      // The SDK retries a request, not the reading of its body: a body cut short (a reset connection, a
      // proxy that drops it) is read again here, pinned with If-Match to the version its headers named,
      // so a retry never hands out another version's bytes. A plain read whose object was replaced
      // meanwhile (412 on the pinned retry) starts over unpinned: one response, one version.
      const [out, bytes] = await this.#request("read", key, async (s3, abortSignal) => {
        let pin = ifMatch;
        for (let attempt = 1; ; attempt++) {
          let out: GetObjectCommandOutput | LeanGetOutput;
          try {
            out =
              lean !== undefined
                ? await lean.get(this.#root + key, range, pin, abortSignal)
                : await s3.send(
                    new GetObjectCommand({
                      Bucket: this.bucket,
                      Key: this.#root + key,
                      Range: range,
                      IfMatch: pin,
                    }),
                    { abortSignal },
                  );
          } catch (err) {
            if (ifMatch !== undefined || pin === undefined || httpStatus(err) !== 412) throw err;
            pin = undefined;
            continue;
          }
          try {
            const body = await readBody(out, key, into);
            const whole = out.ContentLength === undefined || body.length === out.ContentLength;
            if (whole || attempt >= BODY_ATTEMPTS) return [out, body] as const;
          } catch (err) {
            if (abortSignal.aborted || attempt >= BODY_ATTEMPTS || err instanceof SchemaError) throw err;
          }
          pin ??= out.ETag;
          await sleep(25 * attempt);
        }
      });
      if (out.ContentLength !== undefined && bytes.length !== out.ContentLength) {
        throw new StoreError(
          `S3Store read ${JSON.stringify(key)}: got ${bytes.length} bytes, the response announced ${out.ContentLength}`,
          key,
        );
      }
      return { bytes, version: out.ETag ?? "" };
    } catch (err) {
      const status = httpStatus(err);
      if (status === 404) return undefined;
      // 416: the object exists but the range starts at or past its end (or it is empty).
      if (status === 416 && range !== undefined) return { bytes: new Uint8Array(0), version: "" };
      if (err instanceof SchemaError) throw err;
      throw s3Error("read", key, err);
    }
  }

  /**
   * Returns the new ETag, or undefined when the condition failed (412, or If-Match on an absent key).
   *
   * A refusal that follows a retried attempt is ambiguous: the attempt before may have landed with its
   * answer lost (a reset after the server wrote, a timeout), and then the retry is refused by our own
   * write. The object is read back: holding exactly these bytes, the write landed and succeeds with that
   * version; anything else is a refusal. So a lost acknowledgement turns neither a landed write into a
   * refusal nor a refusal into a success. What the read cannot tell apart: another writer that wrote the
   * same bytes under the same condition at the same moment; both then see success, and the object holds
   * what each asked for (callers that must tell, the writer's leases, put a nonce in their bytes).
   */
  async #write(
    action: string,
    key: string,
    bytes: Uint8Array,
    condition: WriteCondition,
  ): Promise<string | undefined> {
    let retried = false;
    for (let attempt = 1; ; attempt++) {
      try {
        return bytes.length > this.#threshold
          ? await this.#multipart(action, key, bytes, condition)
          : await this.#putObject(action, key, bytes, condition);
      } catch (err) {
        const status = httpStatus(err);
        // Only the SDK's own retries are ambiguous: a 409 that sends us round the loop was an answer.
        retried ||= attemptsOf(err) > 1;
        if (condition !== undefined && (status === 412 || (status === 404 && "ifMatch" in condition))) {
          return retried ? await this.#landed(key, bytes) : undefined;
        }
        // A multipart upload whose completion landed with its answer lost: the retried completion finds
        // the upload gone (404 NoSuchUpload).
        if (retried && status === 404 && errorName(err) === "NoSuchUpload") {
          const version = await this.#landed(key, bytes);
          if (version !== undefined) return version;
        }
        // 409 ConditionalRequestConflict: another conditional write to the key was in flight. S3 asks for a
        // retry, which then sees the other write's outcome (usually a 412).
        if (condition !== undefined && status === 409 && attempt < CONFLICT_ATTEMPTS) {
          await sleep(25 * 2 ** attempt * (0.5 + Math.random()));
          continue;
        }
        throw s3Error(action, key, err);
      }
    }
  }

  /** The object's version when it holds exactly `bytes` (an earlier attempt of ours landed), else undefined. */
  async #landed(key: string, bytes: Uint8Array): Promise<string | undefined> {
    const now = await this.#getObject(key, undefined);
    if (now === undefined || now.version === "" || !sameBytes(now.bytes, bytes)) return undefined;
    return now.version;
  }

  async #putObject(
    action: string,
    key: string,
    bytes: Uint8Array,
    condition: WriteCondition,
  ): Promise<string> {
    const { PutObjectCommand } = await loadSdk();
    const lean = this.#options.signedPayload === true ? undefined : await this.#leanRequests();
    if (lean !== undefined) {
      const etag = await this.#request(action, key, (_s3, abortSignal) =>
        lean.put(this.#root + key, bytes, condition ?? {}, abortSignal),
      );
      return etag ?? "";
    }
    const input = { Bucket: this.bucket, Key: this.#root + key, Body: bytes, ...conditionFields(condition) };
    const out = await this.#request(action, key, (s3, abortSignal) =>
      s3.send(new PutObjectCommand(input), { abortSignal }),
    );
    return out.ETag ?? "";
  }

  /** Parts go up a few at a time; the object appears only when CompleteMultipartUpload succeeds. */
  async #multipart(
    action: string,
    key: string,
    bytes: Uint8Array,
    condition: WriteCondition,
  ): Promise<string> {
    const sdk = await loadSdk();
    const target = { Bucket: this.bucket, Key: this.#root + key };
    // Each request (create, every part, complete) gets its own deadline: a large upload takes as long as
    // its parts need, and a silent endpoint still ends it within one deadline of going silent.
    const { UploadId } = await this.#request(action, key, (s3, abortSignal) =>
      s3.send(new sdk.CreateMultipartUploadCommand(target), { abortSignal }),
    );
    if (UploadId === undefined) throw new Error("CreateMultipartUpload returned no UploadId");
    try {
      const count = Math.ceil(bytes.length / this.#partSize);
      const etags: string[] = new Array(count);
      let next = 0;
      const uploader = async () => {
        while (next < count) {
          const i = next++;
          const body = bytes.subarray(i * this.#partSize, Math.min(bytes.length, (i + 1) * this.#partSize));
          const input = { ...target, UploadId, PartNumber: i + 1, Body: body };
          const part = await this.#request(action, key, (s3, abortSignal) =>
            s3.send(new sdk.UploadPartCommand(input), { abortSignal }),
          );
          etags[i] = part.ETag ?? "";
        }
      };
      await Promise.all(Array.from({ length: Math.min(4, count) }, uploader));
      const input = {
        ...target,
        UploadId,
        MultipartUpload: { Parts: etags.map((ETag, i) => ({ ETag, PartNumber: i + 1 })) },
        ...conditionFields(condition),
      };
      const done = await this.#request(action, key, (s3, abortSignal) =>
        s3.send(new sdk.CompleteMultipartUploadCommand(input), { abortSignal }),
      );
      return done.ETag ?? "";
    } catch (err) {
      await this.#request(action, key, (s3, abortSignal) =>
        s3.send(new sdk.AbortMultipartUploadCommand({ ...target, UploadId }), { abortSignal }),
      ).catch(() => undefined);
      throw err;
    }
  }

  /**
   * A multipart upload whose parts come from a stream: `first`, then each part the filler hands out,
   * up to four uploading at once. Undefined when the condition failed at completion (412). An error of
   * the source is rethrown as it is, the upload aborted.
   */
  async #multipartFrom(
    key: string,
    first: Uint8Array,
    rest: PartFiller,
    condition: WriteCondition,
  ): Promise<string | undefined> {
    const sdk = await loadSdk();
    const action = "putStream";
    const target = { Bucket: this.bucket, Key: this.#root + key };
    let UploadId: string | undefined;
    try {
      ({ UploadId } = await this.#request(action, key, (s3, abortSignal) =>
        s3.send(new sdk.CreateMultipartUploadCommand(target), { abortSignal }),
      ));
    } catch (err) {
      throw s3Error(action, key, err);
    }
    if (UploadId === undefined)
      throw s3Error(action, key, new Error("CreateMultipartUpload returned no UploadId"));
    const etags: string[] = [];
    const inFlight = new Set<Promise<void>>();
    let failure: unknown;
    const upload = (PartNumber: number, Body: Uint8Array) => {
      const input = { ...target, UploadId, PartNumber, Body };
      const sent: Promise<void> = this.#request(action, key, (s3, abortSignal) =>
        s3.send(new sdk.UploadPartCommand(input), { abortSignal }),
      ).then(
        (part) => {
          etags[PartNumber - 1] = part.ETag ?? "";
          inFlight.delete(sent);
        },
        (err) => {
          failure ??= s3Error(action, key, err);
          inFlight.delete(sent);
        },
      );
      inFlight.add(sent);
    };
    try {
      upload(1, first);
      for (let n = 2; !rest.done; n++) {
        const body = await rest.next();
        if (body.length === 0) break;
        while (inFlight.size >= 4 && failure === undefined) await Promise.race(inFlight);
        if (failure !== undefined) throw failure;
        upload(n, body);
      }
      await Promise.all(inFlight);
      if (failure !== undefined) throw failure;
      const input = {
        ...target,
        UploadId,
        MultipartUpload: { Parts: etags.map((ETag, i) => ({ ETag, PartNumber: i + 1 })) },
        ...conditionFields(condition),
      };
      for (let attempt = 1; ; attempt++) {
        try {
          const done = await this.#request(action, key, (s3, abortSignal) =>
            s3.send(new sdk.CompleteMultipartUploadCommand(input), { abortSignal }),
          );
          return done.ETag ?? "";
        } catch (err) {
          const status = httpStatus(err);
          if (condition !== undefined && status === 412) {
            await this.#abort(target, UploadId);
            return undefined;
          }
          // 409: another conditional write was in flight; the parts are still there, so only the
          // completion is asked again.
          if (condition !== undefined && status === 409 && attempt < CONFLICT_ATTEMPTS) {
            await sleep(25 * 2 ** attempt * (0.5 + Math.random()));
            continue;
          }
          throw s3Error(action, key, err);
        }
      }
    } catch (err) {
      await Promise.allSettled(inFlight);
      await this.#abort(target, UploadId);
      throw err;
    }
  }

  async #abort(target: { Bucket: string; Key: string }, UploadId: string): Promise<void> {
    const sdk = await loadSdk();
    await this.#request("putStream", target.Key, (s3, abortSignal) =>
      s3.send(new sdk.AbortMultipartUploadCommand({ ...target, UploadId }), { abortSignal }),
    ).catch(() => undefined);
  }

  /**
   * Runs one S3 request under the deadline: the signal aborts the SDK's attempts and back-off, and the
   * race ends the call even if some step (credential or endpoint resolution) does not heed the signal.
   */
  async #request<T>(
    action: string,
    key: string,
    run: (s3: S3Client, abortSignal: AbortSignal) => Promise<T>,
  ): Promise<T> {
    const { deadlineMs } = this.#timeouts;
    const controller = new AbortController();
    try {
      return await withDeadline((async () => run(await this.#s3(), controller.signal))(), deadlineMs, () => {
        controller.abort();
        return this.#timeoutError(action, key, deadlineMs, undefined);
      });
    } catch (err) {
      // An SDK that gave up on its own after timed-out attempts (maxAttempts used up) is a timeout too.
      if (!(err instanceof StoreError) && isTimeout(err)) {
        throw this.#timeoutError(action, key, deadlineMs, err);
      }
      throw err;
    }
  }

  #timeoutError(action: string, key: string, deadlineMs: number, cause: unknown): StoreTimeout {
    const endpoint = this.#endpoint() ?? `AWS S3 in ${this.#region()}`;
    const what =
      cause === undefined
        ? `got no answer within ${deadlineMs} ms (retries included)`
        : `timed out on every attempt (${cause instanceof Error ? cause.message : String(cause)})`;
    return new StoreTimeout(
      `S3Store ${action} ${JSON.stringify(key)} in ${this.url}: the endpoint ${endpoint} ${what}; ` +
        "check the endpoint URL (the endpoint option, AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL), that the " +
        `server is up and reachable from this machine (network, proxy, firewall); ${S3_TIMEOUT_ENV} sets the bound`,
      key,
      endpoint,
      deadlineMs,
      { cause },
    );
  }

  #endpoint(): string | undefined {
    const env = process.env;
    return this.#options.endpoint ?? env.AWS_ENDPOINT_URL_S3 ?? env.AWS_ENDPOINT_URL;
  }

  #region(): string {
    const env = process.env;
    return this.#options.region ?? env.AWS_REGION ?? env.AWS_DEFAULT_REGION ?? "us-east-1";
  }

  /** The lean path (s3-lean.ts) where it applies: an endpoint set, path-style, no ready client, not sdkRequests. */
  #leanRequests(): Promise<LeanRequests | undefined> {
    this.#lean ??= (async () => {
      const o = this.#options;
      const endpoint = this.#endpoint();
      if (o.client !== undefined || o.sdkRequests === true || endpoint === undefined) return undefined;
      const s3 = await this.#s3();
      const config = s3.config as unknown as {
        region: () => Promise<string>;
        credentials: () => Promise<{ accessKeyId: string; secretAccessKey: string; sessionToken?: string }>;
        forcePathStyle?: boolean;
      };
      // Virtual-hosted requests (bucket.host) stay with the SDK, which resolves and addresses them.
      if (config.forcePathStyle !== true) return undefined;
      return new LeanRequests({
        endpoint: new URL(endpoint),
        bucket: this.bucket,
        region: config.region,
        credentials: config.credentials,
        maxAttempts: o.maxAttempts ?? 5,
        connectTimeoutMs: this.#timeouts.connectTimeoutMs,
        requestTimeoutMs: this.#timeouts.requestTimeoutMs,
      });
    })();
    return this.#lean;
  }

  #s3(): Promise<S3Client> {
    this.#client ??= this.#makeClient();
    return this.#client;
  }

  async #makeClient(): Promise<S3Client> {
    const o = this.#options;
    if (o.client !== undefined) return o.client;
    const { S3Client } = await loadSdk();
    const endpoint = this.#endpoint();
    const pathStyleEnv = process.env.AWS_S3_FORCE_PATH_STYLE;
    const { connectTimeoutMs, requestTimeoutMs } = this.#timeouts;
    const config: S3ClientConfig = {
      region: this.#region(),
      forcePathStyle:
        o.forcePathStyle ??
        (pathStyleEnv !== undefined ? /^(1|true|yes)$/i.test(pathStyleEnv) : endpoint !== undefined),
      maxAttempts: o.maxAttempts ?? 5,
      retryMode: "standard",
      // Without these the SDK waits on a silent endpoint forever (its defaults are 0: no timeout).
      // socketTimeout is an idle bound that stays armed through the response body.
      requestHandler: { connectionTimeout: connectTimeoutMs, socketTimeout: requestTimeoutMs },
      // Checksums on every PUT cost a full pass over the bytes and some S3-compatible servers reject them.
      requestChecksumCalculation: "WHEN_REQUIRED",
      responseChecksumValidation: "WHEN_REQUIRED",
    };
    if (endpoint !== undefined) config.endpoint = endpoint;
    if (o.credentials !== undefined) config.credentials = o.credentials;
    const client = new S3Client(config);
    if (o.signedPayload !== true) {
      // The signer takes a request's x-amz-content-sha256 as given: UNSIGNED-PAYLOAD spares it a SHA-256
      // pass over every body, which the SDK makes on plain-http endpoints (over https it sends
      // UNSIGNED-PAYLOAD itself): 3-4 ms of CPU per 2.7 MB shard PUT, a quarter of a loopback writer's
      // CPU (packages/spec/docs/s3-reads.md, "Writes").
      client.middlewareStack.add(
        (next) => (args) => {
          const request = args.request as { headers?: Record<string, string>; body?: unknown };
          if (request.headers !== undefined && request.body !== undefined)
            request.headers["x-amz-content-sha256"] = "UNSIGNED-PAYLOAD";
          return next(args);
        },
        { step: "build", name: "zarrStreamUnsignedPayload" },
      );
    }
    return client;
  }

  /** Closes the client's sockets (a process with an open client would otherwise linger). */
  async close(): Promise<void> {
    const lean = this.#lean;
    this.#lean = undefined;
    (await lean)?.destroy();
    if (this.#client === undefined || this.#options.client !== undefined) return;
    (await this.#client).destroy();
    this.#client = undefined;
  }
}

/** The timeouts of `options`, defaults filled in and checked (a StoreError before any request). */
function timeouts(options: S3StoreOptions): {
  connectTimeoutMs: number;
  requestTimeoutMs: number;
  deadlineMs: number;
} {
  const fromEnv = process.env[S3_TIMEOUT_ENV];
  let deadlineMs = options.deadlineMs;
  if (deadlineMs === undefined && fromEnv !== undefined && fromEnv.trim() !== "") {
    deadlineMs = /^\s*[0-9]+\s*$/.test(fromEnv) ? Number(fromEnv) : Number.NaN;
    if (!Number.isSafeInteger(deadlineMs) || deadlineMs < 1) {
      throw new StoreError(`${S3_TIMEOUT_ENV} must be a whole number of milliseconds >= 1, got "${fromEnv}"`);
    }
  }
  const t = {
    connectTimeoutMs: options.connectTimeoutMs ?? S3_TIMEOUT_DEFAULTS.connectTimeoutMs,
    requestTimeoutMs: options.requestTimeoutMs ?? S3_TIMEOUT_DEFAULTS.requestTimeoutMs,
    deadlineMs: deadlineMs ?? S3_TIMEOUT_DEFAULTS.deadlineMs,
  };
  for (const [name, value] of Object.entries(t)) {
    if (!Number.isSafeInteger(value) || value < 1) {
      throw new StoreError(`S3Store ${name} must be an integer >= 1 (milliseconds), got ${value}`);
    }
  }
  // An attempt timeout past the deadline could never fire; capped, a short deadline bounds attempts too.
  t.connectTimeoutMs = Math.min(t.connectTimeoutMs, t.deadlineMs);
  t.requestTimeoutMs = Math.min(t.requestTimeoutMs, t.deadlineMs);
  return t;
}

function isTimeout(err: unknown): boolean {
  const e = err as { name?: unknown; code?: unknown } | null;
  return typeof e === "object" && e !== null && (e.name === "TimeoutError" || e.code === "ETIMEDOUT");
}

function conditionFields(condition: WriteCondition): { IfNoneMatch?: string; IfMatch?: string } {
  if (condition === undefined) return {};
  return "ifNoneMatch" in condition ? { IfNoneMatch: "*" } : { IfMatch: condition.ifMatch };
}

function noEtag(action: string, key: string): StoreError {
  return new StoreError(
    `S3Store ${action} ${JSON.stringify(key)}: the server sent no ETag to version it by`,
    key,
  );
}

function checkInto(what: string, into: Uint8Array): void {
  if (!(into instanceof Uint8Array))
    throw new SchemaError(`S3Store ${what}: into must be a Uint8Array`, "/into");
}

/**
 * The body of a GET, read chunk by chunk as the socket delivers it into one buffer: `into` when given (the
 * caller's, reused from read to read), else one of the announced length. The SDK's own collector keeps
 * every chunk and then concatenates them, two copies of the body alive at once; at a shard of a few MB
 * per GET that is most of a reader's garbage and a copy per byte (packages/spec/docs/s3-reads.md).
 * A body that outgrows `into` is a SchemaError at /into (the caller's buffer is too small), as FsStore
 * reports it; one shorter than announced is returned short, for the caller's check.
 */
async function readBody(
  out: GetObjectCommandOutput | LeanGetOutput,
  key: string,
  into?: Uint8Array,
): Promise<Uint8Array> {
  const body = out.Body as (AsyncIterable<Uint8Array> & Partial<Readable>) | undefined;
  const announced = out.ContentLength;
  if (body === undefined) return new Uint8Array(0);
  if (into !== undefined && announced !== undefined && announced > into.length) {
    body.destroy?.();
    throw new SchemaError(
      `S3Store read: ${key} needs ${announced} bytes, into holds ${into.length}`,
      "/into",
    );
  }
  if (typeof (body as Partial<SocketBody>).readInto === "function") {
    // The socket path: the body is read by the kernel straight into the target (socket-get.ts).
    const target = into ?? new Uint8Array(Buffer.allocUnsafeSlow(announced ?? 0).buffer, 0, announced ?? 0);
    return target.subarray(0, await (body as unknown as SocketBody).readInto(target));
  }
  let target =
    into ??
    (announced === undefined
      ? new Uint8Array(0)
      : new Uint8Array(Buffer.allocUnsafeSlow(announced).buffer, 0, announced));
  let n = 0;
  /** Copies one chunk into place, or names why it cannot. */
  const take = (chunk: Uint8Array): Error | undefined => {
    if (n + chunk.length > target.length) {
      // More than `into` holds, or than announced: what the caller's check reports, without the rest.
      if (into !== undefined)
        return new SchemaError(
          `S3Store read: ${key} sends more bytes than into holds (${into.length})`,
          "/into",
        );
      if (announced !== undefined)
        return new StoreError(
          `S3Store read ${JSON.stringify(key)}: the body is longer than the announced ${announced} bytes`,
          key,
        );
      // No length announced: grow by doubling.
      const grown = new Uint8Array(
        Buffer.allocUnsafeSlow(Math.max(2 * target.length, n + chunk.length)).buffer,
      );
      grown.set(target.subarray(0, n));
      target = grown;
    }
    target.set(chunk, n);
    n += chunk.length;
    return undefined;
  };
  if (typeof body.on === "function" && typeof body.destroy === "function") {
    // A Node stream (both paths' bodies are): read in flowing mode, each chunk copied as the socket
    // delivers it. An async iterator pauses the socket between chunks and pays a promise per chunk,
    // which on a loaded machine left the socket unread between turns of the event loop.
    const stream = body as Readable;
    await new Promise<void>((resolve, reject) => {
      stream.on("data", (chunk: Uint8Array) => {
        const err = take(chunk);
        if (err !== undefined) {
          stream.destroy();
          reject(err);
        }
      });
      stream.once("end", resolve);
      stream.once("error", reject);
      stream.once("close", () => {
        // A socket closed before the body's end surfaces as an error, or as a short body the caller's
        // length check reads again; either way the promise settles.
        resolve();
      });
    });
    return target.subarray(0, n);
  }
  for await (const chunk of body) {
    const err = take(chunk);
    if (err !== undefined) throw err;
  }
  return target.subarray(0, n);
}

/** How many attempts the SDK made before it gave up with `err` (1 when it did not say). */
function attemptsOf(err: unknown): number {
  if (typeof err !== "object" || err === null) return 1;
  return (err as { $metadata?: { attempts?: number } }).$metadata?.attempts ?? 1;
}

function errorName(err: unknown): string | undefined {
  return typeof err === "object" && err !== null ? (err as { name?: string }).name : undefined;
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && Buffer.from(a.buffer, a.byteOffset, a.length).equals(b);
}

function httpStatus(err: unknown): number | undefined {
  if (typeof err !== "object" || err === null) return undefined;
  const meta = (err as { $metadata?: { httpStatusCode?: number } }).$metadata;
  return meta?.httpStatusCode;
}

function s3Error(action: string, key: string, cause: unknown): StoreError {
  if (cause instanceof StoreError) return cause;
  const status = httpStatus(cause);
  const name = cause instanceof Error ? `${cause.name}: ${cause.message}` : String(cause);
  return new StoreError(
    `S3Store ${action} ${JSON.stringify(key)} failed${status === undefined ? "" : ` (HTTP ${status})`}: ${name}`,
    key,
    { cause },
  );
}

/**
 * Cuts a stream of chunks into parts of `size` bytes (the last one shorter), holding one part at a time;
 * itself a stream of its leftover, so a second filler with another size can take over.
 */
class PartFiller implements AsyncIterable<Uint8Array> {
  readonly #iterator: AsyncIterator<Uint8Array>;
  #leftover: Uint8Array | undefined;
  done = false;

  constructor(
    source: AsyncIterable<Uint8Array>,
    readonly size: number,
  ) {
    this.#iterator = source[Symbol.asyncIterator]();
  }

  /** The next part: `size` bytes, or fewer once the source ends (then `done`). */
  async next(): Promise<Uint8Array> {
    const part = Buffer.allocUnsafe(this.size);
    let used = 0;
    while (used < this.size) {
      let chunk = this.#leftover;
      this.#leftover = undefined;
      if (chunk === undefined) {
        const next = await this.#iterator.next();
        if (next.done) {
          this.done = true;
          return part.subarray(0, used);
        }
        chunk = next.value;
      }
      const n = Math.min(chunk.length, this.size - used);
      part.set(chunk.subarray(0, n), used);
      used += n;
      if (n < chunk.length) this.#leftover = chunk.subarray(n);
    }
    // A full part: the source may or may not have more; the next call finds out.
    if (this.#leftover === undefined) {
      const next = await this.#iterator.next();
      if (next.done) this.done = true;
      else this.#leftover = next.value;
    }
    return part;
  }

  async *[Symbol.asyncIterator](): AsyncIterator<Uint8Array> {
    if (this.#leftover !== undefined) {
      yield this.#leftover;
      this.#leftover = undefined;
    }
    if (this.done) return;
    for (;;) {
      const next = await this.#iterator.next();
      if (next.done) return;
      yield next.value;
    }
  }
}

/** Whether the endpoint URL names this machine; an endpoint that is no URL is left to the SDK to refuse. */
function onThisMachine(endpoint: string | undefined): boolean {
  if (endpoint === undefined || !URL.canParse(endpoint)) return false;
  return loopbackHost(new URL(endpoint).hostname);
}
