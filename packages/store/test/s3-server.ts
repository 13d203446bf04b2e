import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import { CreateBucketCommand, S3Client } from "@aws-sdk/client-s3";
import { S3Store, type S3StoreOptions } from "../src/s3-store.js";

/** Repository root, from packages/store/dist/test/<file>.js. */
export const REPO = fileURLToPath(new URL("../../../../", import.meta.url));
export const MOTO_SERVER = join(REPO, ".venv", "bin", "moto_server");
/** Versity's S3 gateway, built by scripts/setup-test-env.sh into a git-ignored folder. */
export const VERSITYGW = join(REPO, ".tools", "gopath", "bin", "versitygw");
/** moto accepts any credentials; these keep the SDK from searching the machine for real ones. */
export const TEST_CREDENTIALS = { accessKeyId: "zs-test", secretAccessKey: "zs-test" };

/**
 * Why the S3 tests cannot run, or undefined when they can. Only a missing python3 is a reason to skip,
 * and never under CI; a python3 without the venv's moto_server is a setup error reported as a failure.
 */
export function s3SkipReason(): string | undefined {
  if (existsSync(MOTO_SERVER)) return undefined;
  const probe = spawnSync("python3", ["--version"], { encoding: "utf8" });
  if (probe.error === undefined && probe.status === 0) return undefined;
  if (process.env.CI === "true") return undefined;
  return "python3 is not installed (moto_server runs on it)";
}

export interface S3Server {
  endpoint: string;
  /** A fresh bucket on the server. */
  makeBucket(name?: string): Promise<string>;
  /** An S3Store on `bucket` (default: the first bucket made) under a new prefix, or at `prefix`. */
  store(options?: Partial<S3StoreOptions>): S3Store;
  /** Environment for a child process so that openStore("s3://...") reaches this server. */
  env: Record<string, string>;
  stop(): Promise<void>;
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

async function answers(endpoint: string): Promise<boolean> {
  try {
    const res = await fetch(`${endpoint}/moto-api/`, { signal: AbortSignal.timeout(1000) });
    await res.arrayBuffer();
    return true;
  } catch {
    return false;
  }
}

/** The S3 servers the suites run against: an emulator (moto) and a real gateway (versitygw). */
export type S3ServerKind = "moto" | "versitygw";
export const S3_SERVER_KINDS: readonly S3ServerKind[] = ["moto", "versitygw"];

/**
 * Why the suites cannot run on `kind`, or undefined when they can. versitygw is built by the setup
 * script; under CI a missing binary is a setup error reported as a failure, never a skip.
 */
export function s3ServerSkipReason(kind: S3ServerKind): string | undefined {
  if (kind === "moto") return s3SkipReason();
  if (existsSync(VERSITYGW) || process.env.CI === "true") return undefined;
  return `${VERSITYGW} is missing: run scripts/setup-test-env.sh (it builds versitygw with go)`;
}

/** Starts a server of `kind` on a free loopback port. */
export function startS3ServerOf(kind: S3ServerKind): Promise<S3Server> {
  return kind === "moto" ? startS3Server() : startVersityServer();
}

/** Starts a server process on free loopback ports until one answers `probe` (3 attempts, 20 s each). */
async function spawnOnFreePort(
  name: string,
  command: (port: number) => [string, string[], Record<string, string>],
  probe: (endpoint: string) => Promise<boolean>,
): Promise<{ proc: ChildProcess; endpoint: string }> {
  let log = "";
  for (let attempt = 0; attempt < 3; attempt++) {
    const port = await freePort();
    const endpoint = `http://127.0.0.1:${port}`;
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

/** Any HTTP answer at all (versitygw answers an unsigned request with 403): the port is served. */
async function httpAnswers(endpoint: string): Promise<boolean> {
  try {
    const res = await fetch(`${endpoint}/`, { signal: AbortSignal.timeout(1000) });
    await res.arrayBuffer();
    return true;
  } catch {
    return false;
  }
}

/**
 * Starts versitygw serving a fresh temporary directory (each bucket a subdirectory) with root
 * credentials, and waits until it answers.
 */
export async function startVersityServer(): Promise<S3Server> {
  if (!existsSync(VERSITYGW)) {
    throw new Error(`${VERSITYGW} is missing: run \`bash scripts/setup-test-env.sh\` (it builds versitygw)`);
  }
  const root = mkdtempSync(join(tmpdir(), "zs-versitygw-"));
  const { accessKeyId: access, secretAccessKey: secret } = TEST_CREDENTIALS;
  const { proc, endpoint } = await spawnOnFreePort(
    "versitygw",
    (port) => [
      VERSITYGW,
      ["--port", `127.0.0.1:${port}`, "--access", access, "--secret", secret, "posix", root],
      { ROOT_ACCESS_KEY: access, ROOT_SECRET_KEY: secret },
    ],
    httpAnswers,
  );
  return serverOn(endpoint, proc, () => rmSync(root, { recursive: true, force: true }));
}

/** Starts moto_server on a free loopback port and waits until it answers (up to 20 s). */
export async function startS3Server(): Promise<S3Server> {
  if (!existsSync(MOTO_SERVER)) {
    throw new Error(`${MOTO_SERVER} is missing: run \`flock /tmp/pip.lock bash scripts/setup-python.sh\``);
  }
  const { proc, endpoint } = await spawnOnFreePort(
    "moto_server",
    (port) => [MOTO_SERVER, ["-H", "127.0.0.1", "-p", String(port)], {}],
    answers,
  );
  return serverOn(endpoint, proc, () => {});
}

/** The S3Server around a started server process; `cleanup` runs once it has exited. */
function serverOn(endpoint: string, server: ChildProcess, cleanup: () => void): S3Server {
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
      return new S3Store({
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
