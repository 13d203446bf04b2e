import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { createServer, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { CreateBucketCommand, S3Client } from "@aws-sdk/client-s3";
import { inCi, REPO } from "./repo.js";

export const MOTO_SERVER = join(REPO, ".venv", "bin", "moto_server");
/**
 * moto's application behind a lock on mutating requests, so conditional writes are atomic as on S3
 * (python/moto_server.py says why); it runs on the .venv's Python, which has moto when MOTO_SERVER exists.
 */
const MOTO_ATOMIC = [join(REPO, ".venv", "bin", "python"), join(REPO, "python", "moto_server.py")] as const;
/** Versity's S3 gateway, built by scripts/setup-test-env.sh into a git-ignored folder. */
export const VERSITYGW = join(REPO, ".tools", "gopath", "bin", "versitygw");
/** Both servers accept these; they keep the SDK from searching the machine for real credentials. */
export const TEST_CREDENTIALS = { accessKeyId: "zs-test", secretAccessKey: "zs-test" };

/** The S3 servers the suites run against: an emulator (moto) and a real gateway (versitygw). */
export type S3ServerKind = "moto" | "versitygw";
export const S3_SERVER_KINDS: readonly S3ServerKind[] = ["moto", "versitygw"];

/** What a store on the server needs; the caller's factory turns it into its Store. */
export interface S3TestStoreOptions {
  bucket: string;
  prefix: string;
  endpoint: string;
  region: string;
  credentials: { accessKeyId: string; secretAccessKey: string };
}

export interface S3Server<S = S3TestStoreOptions> {
  endpoint: string;
  /** A fresh bucket on the server. */
  makeBucket(name?: string): Promise<string>;
  /** A store on `bucket` (default: the first bucket made) under a new prefix, unless `prefix` is given. */
  store(options?: Partial<S3TestStoreOptions> & Record<string, unknown>): S;
  /** Environment for a child process so that openStore("s3://...") reaches this server. */
  env: Record<string, string>;
  stop(): Promise<void>;
}

const SETUP: Record<S3ServerKind, [string, string]> = {
  moto: [MOTO_SERVER, "`bash scripts/setup-python.sh`"],
  versitygw: [VERSITYGW, "`bash scripts/setup-test-env.sh` (it builds versitygw with go)"],
};

/**
 * Why the suites cannot run on `kind`, or undefined when they can. The rule is the Python probe's:
 * a missing server skips on a developer's machine and fails under CI (CI=true).
 */
export function s3ServerSkipReason(
  kind: S3ServerKind,
  env: NodeJS.ProcessEnv = process.env,
): string | undefined {
  const [binary, setup] = SETUP[kind];
  if (existsSync(binary) || inCi(env)) return undefined;
  return `${binary} is missing: run ${setup}`;
}

/**
 * Starts a server of `kind` on a free loopback port. `makeStore` builds the package's store from the
 * options `store()` assembles (test-support imports none of the project's packages); without it,
 * `store()` returns those options. `tls` (versitygw only) serves https with that certificate and key;
 * the process must trust the certificate (NODE_EXTRA_CA_CERTS, read at its start).
 */
export async function startS3Server<S = S3TestStoreOptions>(
  kind: S3ServerKind,
  makeStore: (options: S3TestStoreOptions) => S = (options) => options as S,
  options: { tls?: { cert: string; key: string } } = {},
): Promise<S3Server<S>> {
  const [binary, setup] = SETUP[kind];
  if (!existsSync(binary)) throw new Error(`${binary} is missing: run ${setup}`);
  if (options.tls !== undefined && kind !== "versitygw") throw new Error("only versitygw serves TLS here");
  if (kind === "moto") {
    const { proc, endpoint } = await spawnOnFreePort(
      "moto_server",
      (port) => [MOTO_ATOMIC[0], [MOTO_ATOMIC[1], "-H", "127.0.0.1", "-p", String(port)], {}],
      (endpoint) => answers(`${endpoint}/moto-api/`),
    );
    return serverOn(endpoint, proc, makeStore, () => {});
  }
  const root = mkdtempSync(join(tmpdir(), "zs-versitygw-"));
  const { accessKeyId: access, secretAccessKey: secret } = TEST_CREDENTIALS;
  const tls = options.tls === undefined ? [] : ["--cert", options.tls.cert, "--key", options.tls.key];
  const { proc, endpoint } = await spawnOnFreePort(
    "versitygw",
    (port) => [
      binary,
      ["--port", `127.0.0.1:${port}`, "--access", access, "--secret", secret, ...tls, "posix", root],
      { ROOT_ACCESS_KEY: access, ROOT_SECRET_KEY: secret },
    ],
    // versitygw answers an unsigned request with 403: any answer means the port is served.
    (endpoint) => answers(`${endpoint}/`),
    options.tls === undefined ? "http" : "https",
  );
  return serverOn(endpoint, proc, makeStore, () => rmSync(root, { recursive: true, force: true }));
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const address = srv.address();
      srv.close(() =>
        typeof address === "object" && address ? resolve(address.port) : reject(new Error("no port")),
      );
    });
  });
}

/** Any HTTP answer at all from `url`. */
async function answers(url: string): Promise<boolean> {
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(1000) });
    await res.arrayBuffer();
    return true;
  } catch {
    return false;
  }
}

/** Starts a server process on free loopback ports until one answers `probe` (3 attempts, 20 s each). */
async function spawnOnFreePort(
  name: string,
  command: (port: number) => [string, string[], Record<string, string>],
  probe: (endpoint: string) => Promise<boolean>,
  scheme: "http" | "https" = "http",
): Promise<{ proc: ChildProcess; endpoint: string }> {
  let log = "";
  for (let attempt = 0; attempt < 3; attempt++) {
    const port = await freePort();
    const endpoint = `${scheme}://127.0.0.1:${port}`;
    const [file, args, env] = command(port);
    const proc = spawn(file, args, { stdio: ["ignore", "ignore", "pipe"], env: { ...process.env, ...env } });
    proc.stderr?.on("data", (d: Buffer) => {
      log = (log + d.toString()).slice(-4000);
    });
    const deadline = Date.now() + 20_000;
    while (Date.now() < deadline && proc.exitCode === null && !(await probe(endpoint))) await sleep(100);
    if (proc.exitCode === null && (await probe(endpoint))) return { proc, endpoint };
    proc.kill("SIGKILL");
  }
  throw new Error(`${name} did not start: ${log}`);
}

/** The S3Server around a started server process; `cleanup` runs once it has exited. */
function serverOn<S>(
  endpoint: string,
  server: ChildProcess,
  makeStore: (options: S3TestStoreOptions) => S,
  cleanup: () => void,
): S3Server<S> {
  const client = new S3Client({
    endpoint,
    region: "us-east-1",
    forcePathStyle: true,
    credentials: TEST_CREDENTIALS,
  });
  const buckets: string[] = [];
  let n = 0;
  return {
    endpoint,
    env: {
      AWS_ENDPOINT_URL_S3: endpoint,
      AWS_REGION: "us-east-1",
      AWS_ACCESS_KEY_ID: TEST_CREDENTIALS.accessKeyId,
      AWS_SECRET_ACCESS_KEY: TEST_CREDENTIALS.secretAccessKey,
      AWS_S3_FORCE_PATH_STYLE: "true",
    },
    async makeBucket(name = `zs-test-${process.pid}-${buckets.length}`) {
      await client.send(new CreateBucketCommand({ Bucket: name }));
      buckets.push(name);
      return name;
    },
    store(options = {}) {
      const bucket = options.bucket ?? buckets[0];
      if (bucket === undefined) throw new Error("makeBucket first");
      return makeStore({
        endpoint,
        region: "us-east-1",
        credentials: TEST_CREDENTIALS,
        prefix: `store-${n++}`,
        ...options,
        bucket,
      });
    },
    async stop() {
      client.destroy();
      server.kill("SIGTERM");
      await new Promise((resolve) => {
        if (server.exitCode !== null) resolve(undefined);
        else server.once("exit", resolve);
      });
      cleanup();
    },
  };
}

/** A loopback endpoint that accepts TCP connections and never answers a byte (a hung S3 server). */
export interface SilentServer {
  endpoint: string;
  /** Connections accepted so far (each SDK attempt opens one). */
  readonly connections: number;
  /** Closes the listener and every accepted socket, so no handle keeps the test process alive. */
  close(): Promise<void>;
}

export async function startSilentServer(): Promise<SilentServer> {
  const sockets = new Set<Socket>();
  let connections = 0;
  const srv = createServer((socket) => {
    connections++;
    sockets.add(socket);
    // The client may give up and reset the connection; that is not the server's error.
    socket.on("error", () => undefined);
    socket.on("close", () => sockets.delete(socket));
  });
  await new Promise<void>((resolve, reject) => {
    srv.once("error", reject);
    srv.listen(0, "127.0.0.1", resolve);
  });
  const { port } = srv.address() as { port: number };
  return {
    endpoint: `http://127.0.0.1:${port}`,
    get connections() {
      return connections;
    },
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => srv.close(() => resolve()));
    },
  };
}

/** The error `call` rejects with and how long it took to; a call that succeeds is an error of the test. */
export async function timedFailure(call: () => Promise<unknown>): Promise<{ err: unknown; ms: number }> {
  const started = performance.now();
  try {
    await call();
  } catch (err) {
    return { err, ms: performance.now() - started };
  }
  throw new Error("the call on a silent endpoint succeeded");
}
