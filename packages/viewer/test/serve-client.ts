import { request } from "node:http";
import { HttpStore, TOKEN_HEADER, type ViewerServer } from "../src/index.js";

export interface RawAnswer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
}

/**
 * A raw request, so paths reach the server exactly as written (fetch would normalise ".."), carrying
 * the server's token unless `auth` is false.
 */
export function raw(
  server: ViewerServer,
  path: string,
  headers: Record<string, string> = {},
  method = "GET",
  auth = true,
): Promise<RawAnswer> {
  const u = new URL(server.url);
  const all = auth && server.token !== undefined ? { [TOKEN_HEADER]: server.token, ...headers } : headers;
  return new Promise((resolve, reject) => {
    const req = request({ host: u.hostname, port: u.port, path, method, headers: all }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () =>
        resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks) }),
      );
    });
    req.on("error", reject);
    req.end();
  });
}

/** fetch that sends the server's token in its header, as a non-browser client does. */
export function tokenFetch(server: ViewerServer): typeof fetch {
  return (input, init) => {
    const headers = new Headers(init?.headers);
    if (server.token !== undefined) headers.set(TOKEN_HEADER, server.token);
    return fetch(input, { ...init, headers });
  };
}

/** An HttpStore on the server's store (or a directory below it), carrying the token. */
export function httpStoreOf(server: ViewerServer, sub = ""): HttpStore {
  return new HttpStore(`${server.url}store/${sub}`, tokenFetch(server));
}
