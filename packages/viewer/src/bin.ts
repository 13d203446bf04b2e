#!/usr/bin/env node
import { parseArgs } from "node:util";
import { ZarrStreamError } from "@zarr-stream/spec";
import { serveViewer } from "./server.js";

const USAGE = "usage: zstream-viewer STORE [--port P] [--no-token]";

function usage(message?: string): never {
  process.stderr.write(`${message ? `${message}\n` : ""}${USAGE}\n`);
  process.exit(2);
}

function args(): { store: string; port: number; noToken: boolean } {
  let parsed: {
    values: { port?: string | undefined; help?: boolean | undefined; "no-token"?: boolean | undefined };
    positionals: string[];
  };
  try {
    parsed = parseArgs({
      options: { port: { type: "string" }, help: { type: "boolean" }, "no-token": { type: "boolean" } },
      allowPositionals: true,
    });
  } catch (err) {
    usage((err as Error).message);
  }
  if (parsed.values.help) {
    process.stdout.write(`${USAGE}\n`);
    process.exit(0);
  }
  const [store, ...extra] = parsed.positionals;
  if (store === undefined || extra.length > 0) usage();
  const p = parsed.values.port ?? "0";
  if (!/^\d{1,5}$/.test(p) || Number(p) > 65535) usage(`--port must be an integer 0..65535, got ${p}`);
  return { store, port: Number(p), noToken: parsed.values["no-token"] === true };
}

const { store, port, noToken } = args();
try {
  const server = await serveViewer(store, { port, ...(noToken ? { token: null } : {}) });
  if (noToken)
    process.stderr.write(`zstream-viewer: WARNING: --no-token: every local user can read ${store}\n`);
  process.stdout.write(`viewing ${store} at ${server.pageUrl} (Ctrl-C to stop)\n`);
  const stop = () => void server.close().then(() => process.exit(0));
  process.once("SIGINT", stop);
  process.once("SIGTERM", stop);
} catch (err) {
  const name = err instanceof ZarrStreamError ? `${err.name}: ` : "";
  process.stderr.write(`zstream-viewer: ${name}${(err as Error).message}\n`);
  process.exitCode = 1;
}
