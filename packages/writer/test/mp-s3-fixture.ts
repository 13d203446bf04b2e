import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before } from "node:test";
import { fileURLToPath } from "node:url";
import { MANIFEST_KEY } from "@zarr-stream/reader";
import { FsStore, S3Store, type Store, snapshotStore } from "@zarr-stream/store";
import {
  type S3Server,
  type S3ServerKind,
  s3ServerSkipReason,
  startS3Server,
} from "@zarr-stream/test-support/s3-server";
import { LEASE_PREFIX, ZarrStreamWriter } from "../src/index.js";
import { type Child, startChild } from "./child-process.js";
import { committedDump, recordArrays } from "./helpers.js";
import { MP_COMMIT_EVERY, MP_RECORDS, MP_SCHEMA, MP_WRITERS, mpT } from "./mp-workload.js";

export const CHILD = fileURLToPath(new URL("./mp-child.js", import.meta.url));

export interface MpS3 {
  skip: string | undefined;
  server: S3Server<S3Store>;
  bucket: string;
  /** The single-writer store (local disk) every multi-process run must reproduce. */
  reference: FsStore;
  tmp: string;
}

/** Per describe block: an S3 server of `kind` with one bucket, and the single-writer reference store. */
export function mpS3Fixture(label: string, kind: S3ServerKind): MpS3 {
  const fx = { skip: s3ServerSkipReason(kind), tmp: mkdtempSync(join(tmpdir(), `zs-${label}-`)) } as MpS3;
  before(async () => {
    if (fx.skip !== undefined) return;
    fx.server = await startS3Server(kind, (o) => new S3Store(o));
    fx.bucket = await fx.server.makeBucket();
    fx.reference = new FsStore(join(fx.tmp, "single"));
    const w = await ZarrStreamWriter.create(fx.reference, MP_SCHEMA, { kind: "single" });
    for (let r = 0; r < MP_RECORDS; r++) {
      await w.writeRecord(mpT(r), recordArrays(MP_SCHEMA, r, {}));
      if ((r + 1) % MP_COMMIT_EVERY === 0) await w.flush();
    }
    await w.close();
  });
  after(async () => {
    await fx.server?.stop();
    rmSync(fx.tmp, { recursive: true, force: true });
  });
  return fx;
}

/** Every committed value as read back (the manifest format name aside: a Single writer's store is v1). */
export async function committedValues(store: Store): Promise<string> {
  return JSON.stringify((JSON.parse(await committedDump(store)) as unknown[]).slice(1));
}

/** Key-by-key differences, short enough to read in a failure message. */
export function differences(a: Map<string, string>, b: Map<string, string>): string[] {
  const keys = [...new Set([...a.keys(), ...b.keys()])].sort();
  return keys
    .filter((k) => a.get(k) !== b.get(k))
    .map((k) => `${k}: ${a.has(k) ? "" : "missing "}${b.has(k) ? "" : "extra"}`);
}

/**
 * Array data and array metadata: everything but the manifest, whose writer count and layout differ by
 * design, and the writers' leases, which differ with every run.
 */
export async function dataObjects(store: Store): Promise<Map<string, string>> {
  const snap = await snapshotStore(store);
  return new Map(
    [...snap]
      .filter(([k]) => k !== MANIFEST_KEY && !k.startsWith(LEASE_PREFIX))
      .map(([k, v]) => [k, Buffer.from(v).toString("hex")]),
  );
}

/** Starts writer `id` of the 8-writer run as its own OS process (mp-child.js). */
export function launch(fx: MpS3, url: string, id: number, env: Record<string, string> = {}): Child {
  return startChild(CHILD, [url, String(id), String(MP_WRITERS)], { ...fx.server.env, ...env });
}

export async function allExit(children: Child[]): Promise<void> {
  for (const [i, c] of children.entries()) {
    const { code, signal, stderr } = await c.exited;
    assert.equal(code, 0, `writer ${i} ended with ${code ?? signal}: ${stderr}`);
  }
}
