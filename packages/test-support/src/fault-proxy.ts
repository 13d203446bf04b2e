import { createServer, type IncomingMessage, request, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";

/**
 * What the proxy does to one request, instead of passing it through:
 * - `status`: answers with that status and `body` (default none; an S3 error document names the error the
 *   SDK reports), without passing the request on (5xx: the SDK retries; 4xx: it does not);
 * - `reset`: drops the connection before any byte of the answer;
 * - `cut-body`: passes the request on, sends the answer's headers and its first `at` body bytes, then
 *   drops the connection (a proxy or a load balancer that gives up halfway);
 * - `delay`: waits `ms`, then passes the request on;
 * - `lose-ack`: passes the request on and lets it complete upstream, then drops the connection before
 *   any byte of the answer (the write happened; its acknowledgement is lost).
 */
export type ProxyFault =
  | { kind: "status"; status: number; body?: string }
  | { kind: "reset" }
  | { kind: "cut-body"; at: number }
  | { kind: "delay"; ms: number }
  | { kind: "lose-ack" };

/** One scripted fault: the first request `match` accepts gets it, once (or `times` times). */
export interface ProxyRule {
  /** `n` numbers the proxy's requests from 1, in the order they arrive. */
  match: (request: {
    method: string;
    path: string;
    headers: IncomingMessage["headers"];
    n: number;
  }) => boolean;
  fault: ProxyFault;
  times?: number;
}

export interface SeenRequest {
  method: string;
  path: string;
  headers: IncomingMessage["headers"];
  fault?: ProxyFault["kind"];
}

export interface FaultProxy {
  /** The proxy's own endpoint (loopback): point a client here instead of at `upstream`. */
  endpoint: string;
  /** Every request seen, in order, with the fault it got. */
  seen: SeenRequest[];
  /** Adds rules; the first matching rule with uses left is applied. */
  script(...rules: ProxyRule[]): void;
  close(): Promise<void>;
}

/**
 * A loopback HTTP proxy in front of a test S3 server that injects scripted faults per request. It only
 * listens on 127.0.0.1 and only forwards to the loopback `upstream` it is given.
 */
export async function startFaultProxy(upstream: string): Promise<FaultProxy> {
  const target = new URL(upstream);
  if (!["127.0.0.1", "localhost", "[::1]"].includes(target.hostname))
    throw new Error(`the fault proxy forwards to loopback only, not ${upstream}`);
  const rules: { rule: ProxyRule; left: number }[] = [];
  const seen: SeenRequest[] = [];
  const sockets = new Set<Socket>();

  function forward(req: IncomingMessage, onAnswer: (answer: IncomingMessage) => void, onError: () => void) {
    const out = request(
      {
        host: target.hostname,
        port: target.port,
        method: req.method,
        path: req.url,
        headers: req.headers,
      },
      onAnswer,
    );
    out.on("error", onError);
    req.pipe(out);
  }

  function passOn(req: IncomingMessage, res: ServerResponse, cutAt?: number) {
    forward(
      req,
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        if (cutAt === undefined) {
          answer.pipe(res);
          return;
        }
        let sent = 0;
        answer.on("data", (chunk: Buffer) => {
          if (sent >= cutAt) return;
          const part = chunk.subarray(0, cutAt - sent);
          sent += part.length;
          res.write(part);
          if (sent >= cutAt) {
            answer.destroy();
            res.socket?.destroy();
          }
        });
        answer.on("end", () => res.end());
      },
      () => res.socket?.destroy(),
    );
  }

  const server = createServer((req, res) => {
    const method = req.method ?? "GET";
    const path = req.url ?? "/";
    const entry: SeenRequest = { method, path, headers: req.headers };
    seen.push(entry);
    const n = seen.length;
    const hit = rules.find((r) => r.left > 0 && r.rule.match({ method, path, headers: req.headers, n }));
    if (hit === undefined) return passOn(req, res);
    hit.left--;
    const fault = hit.rule.fault;
    entry.fault = fault.kind;
    switch (fault.kind) {
      case "status":
        req.resume();
        res.writeHead(fault.status, {
          "content-length": String(Buffer.byteLength(fault.body ?? "")),
          ...(fault.body === undefined ? {} : { "content-type": "application/xml" }),
        });
        res.end(fault.body ?? "");
        return;
      case "reset":
        req.socket.destroy();
        return;
      case "cut-body":
        return passOn(req, res, fault.at);
      case "delay":
        setTimeout(() => passOn(req, res), fault.ms);
        return;
      case "lose-ack":
        forward(
          req,
          (answer) => {
            answer.resume();
            answer.on("end", () => res.socket?.destroy());
          },
          () => res.socket?.destroy(),
        );
        return;
    }
  });
  server.on("connection", (socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    seen,
    script(...more) {
      for (const rule of more) rules.push({ rule, left: rule.times ?? 1 });
    },
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/**
 * Rules that give every `every`-th request a fault, taking `faults` in turn, for as long as the proxy
 * runs: a steady drizzle of faults over a whole workload. A `cut-body` falls on GETs only (other answers
 * have no body to cut), so its turn passes a request of another method through untouched.
 */
export function faultEvery(every: number, faults: ProxyFault[]): ProxyRule[] {
  return faults.map((fault, i) => ({
    match: ({ method, n }) =>
      n % every === 0 &&
      Math.floor(n / every) % faults.length === i &&
      (fault.kind !== "cut-body" || method === "GET"),
    fault,
    times: Number.POSITIVE_INFINITY,
  }));
}

/** Faults the SDK's retries (and S3Store's own, for a cut body or a lost acknowledgement) heal. */
export const HEALABLE_FAULTS: ProxyFault[] = [
  { kind: "status", status: 503 },
  { kind: "reset" },
  { kind: "lose-ack" },
  { kind: "status", status: 500 },
  { kind: "cut-body", at: 16 },
  { kind: "delay", ms: 40 },
];
