import { StoreError } from "@zarr-stream/spec";
import {
  check,
  type ListableStore,
  loopbackHost,
  type PinnedAnswer,
  type PinnedObject,
  type ReadableStore,
  type ReadCost,
  VersionPin,
} from "@zarr-stream/store/browser";

/** The paths serveViewer answers besides the store's own objects. */
export const LIST_PATH = "__list";
export const NODES_PATH = "__nodes";

type Fetch = typeof fetch;

/**
 * A readable, listable store over HTTP: whole objects with GET, byte ranges with `Range: bytes=a-b` and
 * `bytes=-N`, sizes with HEAD. Every response is checked (status, Content-Range, body length) before its
 * bytes are handed on. It has no writes: a viewer never changes a store. `list` needs a server that
 * answers `GET <base>/__list?prefix=...` with a JSON array of keys, as serveViewer does. Keys follow the
 * store package's rules, checked before any request. `pin` reads one version of an object by its strong
 * ETag (If-Match, 412 when replaced); a server that sends none, or only weak ones, gives no snapshot.
 * `readCost` is "cheap" on a loopback host (see loopbackHost), "per-request" elsewhere.
 */
export class HttpStore implements ReadableStore, ListableStore {
  readonly url: string;
  readonly readCost: ReadCost;
  readonly #base: string;
  readonly #fetch: Fetch;

  /** `baseUrl` is the store root ("http://127.0.0.1:8080/store/"); a missing trailing "/" is added. */
  constructor(baseUrl: string, fetchImpl: Fetch = globalThis.fetch.bind(globalThis)) {
    let parsed: URL;
    try {
      parsed = new URL(baseUrl);
    } catch {
      throw new StoreError(`HttpStore base URL ${JSON.stringify(baseUrl)} is not an absolute URL`);
    }
    if (parsed.protocol !== "http:" && parsed.protocol !== "https:")
      throw new StoreError(`HttpStore base URL ${JSON.stringify(baseUrl)} must be http: or https:`);
    if (parsed.search !== "" || parsed.hash !== "")
      throw new StoreError(`HttpStore base URL ${JSON.stringify(baseUrl)} must have no query or fragment`);
    this.#base = parsed.href.endsWith("/") ? parsed.href : `${parsed.href}/`;
    this.url = this.#base;
    this.readCost = loopbackHost(parsed.hostname) ? "cheap" : "per-request";
    this.#fetch = fetchImpl;
  }

  async get(key: string): Promise<Uint8Array | undefined> {
    check.key(key);
    const res = await this.#request("GET", key);
    if (res.status === 404) return undefined;
    if (res.status !== 200) throw this.#statusError("GET", key, res);
    return this.#body(res, key, contentLength(res));
  }

  async getRange(key: string, offset: number, length: number): Promise<Uint8Array | undefined> {
    check.range(key, offset, length);
    // An empty range cannot be spelled in a Range header; only whether the object exists matters.
    if (length === 0) return (await this.size(key)) === undefined ? undefined : new Uint8Array(0);
    const res = await this.#request("GET", key, `bytes=${offset}-${offset + length - 1}`);
    return this.#ranged(res, key, offset, length, "getRange");
  }

  async getSuffix(key: string, n: number): Promise<Uint8Array | undefined> {
    check.suffix(key, n);
    if (n === 0) return (await this.size(key)) === undefined ? undefined : new Uint8Array(0);
    const res = await this.#request("GET", key, `bytes=-${n}`);
    return this.#ranged(res, key, undefined, n, "getSuffix");
  }

  /**
   * Reads of one version: the first response's strong ETag rides as If-Match on every later request of
   * the pin, requests that are made anyway; 412 means the object was replaced (ObjectChanged).
   */
  pin(key: string): PinnedObject {
    check.key(key);
    const pin = new VersionPin(key, `HttpStore ${this.#base}`);
    const read = (op: string, offset: number | undefined, length: number) =>
      pin.read(op, async (ifMatch): Promise<PinnedAnswer<Uint8Array>> => {
        // An empty range cannot be spelled in a Range header: a HEAD answers whether the version is there.
        const range =
          length === 0
            ? undefined
            : offset === undefined
              ? `bytes=-${length}`
              : `bytes=${offset}-${offset + length - 1}`;
        const res = await this.#request(range === undefined ? "HEAD" : "GET", key, range, ifMatch);
        if (res.status === 412) {
          await res.body?.cancel();
          return "changed";
        }
        if (range === undefined) {
          if (res.status !== 200 && res.status !== 404) throw this.#statusError(`${op} HEAD`, key, res);
          return res.status === 404 ? "absent" : { value: new Uint8Array(0), version: strongEtag(res) };
        }
        const bytes = await this.#ranged(res, key, offset, length, op);
        return bytes === undefined ? "absent" : { value: bytes, version: strongEtag(res) };
      });
    return {
      key,
      getRange: (offset, length) => {
        check.range(key, offset, length);
        return read("getRange", offset, length);
      },
      getSuffix: (n) => {
        check.suffix(key, n);
        return read("getSuffix", undefined, n);
      },
      close: () => Promise.resolve(),
    };
  }

  async size(key: string): Promise<number | undefined> {
    check.key(key);
    const res = await this.#request("HEAD", key);
    if (res.status === 404) return undefined;
    if (res.status !== 200) throw this.#statusError("HEAD", key, res);
    const n = contentLength(res);
    if (n === undefined) throw new StoreError(`HEAD ${this.#base}${key}: no valid Content-Length`, key);
    return n;
  }

  async list(prefix: string): Promise<string[]> {
    check.prefix(prefix);
    const keys = await this.#json(`${LIST_PATH}?prefix=${encodeURIComponent(prefix)}`);
    const bad = keys.find((k) => !k.startsWith(prefix));
    if (bad !== undefined)
      throw new StoreError(`list(${JSON.stringify(prefix)}): server answered key ${JSON.stringify(bad)}`);
    return [...keys].sort(compareCodeUnits);
  }

  /** The keys of every zarr.json in the store (serveViewer's index): how a plain Zarr store is browsed. */
  async listMetadata(): Promise<string[]> {
    const keys = await this.#json(NODES_PATH);
    const bad = keys.find((k) => k !== "zarr.json" && !k.endsWith("/zarr.json"));
    if (bad !== undefined)
      throw new StoreError(`${NODES_PATH}: ${JSON.stringify(bad)} is not a zarr.json key`);
    return [...keys].sort(compareCodeUnits);
  }

  async #request(method: "GET" | "HEAD", key: string, range?: string, ifMatch?: string): Promise<Response> {
    const headers: Record<string, string> = range ? { Range: range } : {};
    if (ifMatch !== undefined) headers["If-Match"] = ifMatch;
    try {
      // no-store: the manifest is polled, and a cached copy would hide new commits.
      return await this.#fetch(this.#base + keyToUrlPath(key), { method, headers, cache: "no-store" });
    } catch (err) {
      throw new StoreError(`${method} ${this.#base}${key} failed: ${(err as Error).message}`, key);
    }
  }

  async #ranged(
    res: Response,
    key: string,
    offset: number | undefined,
    length: number,
    op: string,
  ): Promise<Uint8Array | undefined> {
    if (res.status === 404) return undefined;
    // 416: the object exists but the range starts at or past its end (or it is empty).
    if (res.status === 416) {
      await res.body?.cancel();
      return new Uint8Array(0);
    }
    if (res.status === 200) {
      // A server that ignores Range sends the whole object; cut the asked-for part out of it.
      const all = await this.#body(res, key, contentLength(res));
      const start = offset ?? Math.max(0, all.length - length);
      return all.slice(Math.min(start, all.length), Math.min(start + length, all.length));
    }
    if (res.status !== 206) throw this.#statusError(`${op} GET`, key, res);
    const cr = parseContentRange(res.headers.get("content-range"));
    if (cr === undefined)
      throw new StoreError(`${op}(${key}): 206 without a valid Content-Range header`, key);
    const expectStart = offset ?? Math.max(0, cr.total - length);
    const expectEnd = Math.min(expectStart + length, cr.total) - 1;
    if (cr.start !== expectStart || cr.end !== expectEnd) {
      throw new StoreError(
        `${op}(${key}): server sent bytes ${cr.start}-${cr.end}/${cr.total}, expected ${expectStart}-${expectEnd}`,
        key,
      );
    }
    return this.#body(res, key, cr.end - cr.start + 1);
  }

  async #body(res: Response, key: string, expected: number | undefined): Promise<Uint8Array> {
    const bytes = new Uint8Array(await res.arrayBuffer());
    if (expected !== undefined && bytes.length !== expected) {
      throw new StoreError(
        `GET ${this.#base}${key}: body has ${bytes.length} bytes, expected ${expected}`,
        key,
      );
    }
    return bytes;
  }

  async #json(path: string): Promise<string[]> {
    let res: Response;
    try {
      res = await this.#fetch(this.#base + path, { cache: "no-store" });
    } catch (err) {
      throw new StoreError(`GET ${this.#base}${path} failed: ${(err as Error).message}`);
    }
    if (res.status !== 200) throw this.#statusError("GET", path, res);
    let doc: unknown;
    try {
      doc = JSON.parse(await res.text());
    } catch {
      throw new StoreError(`GET ${this.#base}${path}: not JSON`);
    }
    if (!Array.isArray(doc) || !doc.every((k) => typeof k === "string" && k !== ""))
      throw new StoreError(`GET ${this.#base}${path}: expected a JSON array of keys`);
    return doc as string[];
  }

  #statusError(op: string, key: string, res: Response): StoreError {
    void res.body?.cancel();
    return new StoreError(`${op} ${this.#base}${key}: HTTP ${res.status} ${res.statusText}`, key);
  }
}

/** The response's ETag when it is a strong one: If-Match compares strongly, so a weak one never matches. */
function strongEtag(res: Response): string | undefined {
  const etag = res.headers.get("etag");
  return etag === null || etag.startsWith("W/") ? undefined : etag;
}

/** The URL path of a key: each segment percent-encoded, so "#", "?" and "%" in keys survive. */
function keyToUrlPath(key: string): string {
  return key.split("/").map(encodeURIComponent).join("/");
}

function compareCodeUnits(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function contentLength(res: Response): number | undefined {
  const h = res.headers.get("content-length");
  if (h === null || !/^\d+$/.test(h)) return undefined;
  return Number(h);
}

/** `bytes a-b/total` with a <= b < total. */
export function parseContentRange(
  h: string | null,
): { start: number; end: number; total: number } | undefined {
  const m = h === null ? null : /^bytes (\d+)-(\d+)\/(\d+)$/.exec(h.trim());
  if (!m) return undefined;
  const [start, end, total] = [Number(m[1]), Number(m[2]), Number(m[3])];
  if (!(start <= end && end < total)) return undefined;
  return { start, end, total };
}
