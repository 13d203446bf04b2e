import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before } from "node:test";
import type { TypedArray } from "@zarr-stream/spec";
import { FsStore, S3Store, type Store } from "@zarr-stream/store";
import { type S3Server, s3ServerSkipReason, startS3Server } from "@zarr-stream/test-support/s3-server";

/** A fresh store location; each call of the result is a new store object on it (a new client). */
export type Location = () => Store;

export interface StoreLocations {
  /** Why the S3Store suites skip (no moto outside CI), else undefined. */
  s3Skip: string | undefined;
  /** Per backend, a maker of fresh locations: a directory under a temp root, or a prefix in one moto bucket. */
  backends: [string, () => Location][];
}

/**
 * The FsStore and S3Store (moto on loopback) locations a test file runs its cases on, with the hooks that
 * start moto before the file's tests and close every client, moto and the temp root after them.
 */
export function storeLocations(label: string): StoreLocations {
  const s3Skip = s3ServerSkipReason("moto");
  const tmp = mkdtempSync(join(tmpdir(), `zs-${label}-`));
  let server: S3Server<S3Store> | undefined;
  let n = 0;
  const opened: Store[] = [];
  before(async () => {
    if (s3Skip !== undefined) return;
    server = await startS3Server("moto", (o) => new S3Store(o));
    await server.makeBucket();
  });
  after(async () => {
    for (const s of opened) await (s as { close?: () => Promise<void> }).close?.();
    await server?.stop();
    rmSync(tmp, { recursive: true, force: true });
  });
  const backends: [string, () => Location][] = [
    [
      "FsStore",
      () => {
        const root = join(tmp, `${label}-${n++}`);
        return () => new FsStore(root);
      },
    ],
    [
      "S3Store",
      () => {
        const prefix = `${label}-${n++}`;
        return () => {
          const s = server!.store({ prefix });
          opened.push(s);
          return s;
        };
      },
    ],
  ];
  return { s3Skip, backends };
}

/** A typed array's bytes as hex, for bitwise comparisons with readable failure messages. */
export const bits = (a: TypedArray) => Buffer.from(a.buffer, a.byteOffset, a.byteLength).toString("hex");
