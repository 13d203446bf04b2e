import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { CommitToken, Profile, Region, StreamSchema } from "@zarr-stream/spec";
import { FsStore } from "@zarr-stream/store";
import { ZarrStreamWriter } from "@zarr-stream/writer";

export const NLAT = 12;
export const NLON = 16;
export const LAT = Array.from({ length: NLAT }, (_, i) => -55 + 10 * i);
export const LON = Array.from({ length: NLON }, (_, i) => 22.5 * i);
export const T0 = 3600;

/** A smooth field whose pattern (not only its level) moves with the record, so heatmaps differ per record. */
export function temperatureAt(r: number, lat: number, lon: number): number {
  const rad = Math.PI / 180;
  return 250 + 40 * Math.cos(lat * rad) + 8 * Math.sin(2 * lon * rad + 0.9 * r) + 0.25 * r;
}

export type DemoKind = "v1" | "v2" | "indexed";

export function demoSchema(profile: Profile, kind: DemoKind, nIndexed = 4): StreamSchema {
  return {
    dims: [
      ["time", 0],
      ["lat", NLAT],
      ["lon", NLON],
    ],
    time_dim: "time",
    time_mode:
      kind === "indexed"
        ? { indexed: { times: Array.from({ length: nIndexed }, (_, i) => T0 * i) } }
        : "append",
    vars: [
      {
        name: "temperature",
        dims: ["time", "lat", "lon"],
        dtype: "float64",
        attrs: { units: "K", long_name: "air temperature" },
      },
      { name: "wind", dims: ["time", "lon"], dtype: "float32", attrs: { units: "m s-1" } },
    ],
    statics:
      kind === "v1"
        ? []
        : [{ name: "orography", dims: ["lat", "lon"], dtype: "float32", attrs: { units: "m" } }],
    chunk_shape: { time: 1, lat: 6, lon: 8 },
    shard_shape: { time: 2, lat: 6, lon: 16 },
    profile,
    coords: {
      lat: { values: LAT, attrs: { units: "degrees_north" } },
      lon: { values: LON, attrs: { units: "degrees_east" } },
      time: { attrs: { units: "seconds since 2026-01-01 00:00:00" } },
    },
    attrs: { title: "viewer demo" },
  };
}

function temperature(r: number, lat: [number, number]): Float64Array {
  const out = new Float64Array((lat[1] - lat[0]) * NLON);
  for (let i = lat[0]; i < lat[1]; i++)
    for (let j = 0; j < NLON; j++) out[(i - lat[0]) * NLON + j] = temperatureAt(r, LAT[i]!, LON[j]!);
  return out;
}

function wind(r: number): Float32Array {
  return Float32Array.from(LON, (lon) => Math.cos((lon * Math.PI) / 180 + r));
}

export interface Demo {
  dir: string;
  store: FsStore;
  schema: StreamSchema;
  /** Writes and commits the next record (all writers); returns its index. */
  commitNext(): Promise<number>;
}

/**
 * A store on disk written the way the contract allows: "v1" by a Single writer; "v2" by an owner and a
 * contributor splitting lat, with a static and blobs; "indexed" by an owner writing records out of order.
 */
export async function writeDemo(kind: DemoKind, profile: Profile, records: number): Promise<Demo> {
  const dir = await mkdtemp(join(tmpdir(), `zs-viewer-${kind}-${profile}-`));
  const store = new FsStore(dir);
  const schema = demoSchema(profile, kind);
  let next = 0;
  let commitNext: () => Promise<number>;
  if (kind === "v1") {
    const w = await ZarrStreamWriter.create(store, schema, { kind: "single" });
    commitNext = async () => {
      const r = next++;
      await w.writeRecord(T0 * r, { temperature: temperature(r, [0, NLAT]), wind: wind(r) });
      await w.flush();
      return r;
    };
  } else if (kind === "v2") {
    const regions: Region[] = [{ lat: [0, 6] }, { lat: [6, 12] }];
    const owner = await ZarrStreamWriter.create(store, schema, { kind: "owner", nWriters: 2 }, regions[0]);
    const other = await ZarrStreamWriter.join(store, { kind: "contributor", id: 1 }, regions[1]);
    await owner.writeStatic(
      "orography",
      Float32Array.from({ length: 6 * NLON }, (_, i) => i * 10),
    );
    await other.writeStatic(
      "orography",
      Float32Array.from({ length: 6 * NLON }, (_, i) => 1000 + i * 10),
    );
    await owner.writeBlob("static", "config.json", new TextEncoder().encode('{"dt": 3600}'));
    commitNext = async () => {
      const r = next++;
      await owner.writeRecord(T0 * r, { temperature: temperature(r, [0, 6]), wind: wind(r) });
      await other.writeRecord(T0 * r, { temperature: temperature(r, [6, 12]) });
      await other.writeBlob({ record: r }, "rng-state", new Uint8Array([r, 1, 2]));
      const tokens: CommitToken[] = [await owner.flush(), await other.flush()];
      await owner.commit(tokens);
      return r;
    };
  } else {
    const owner = await ZarrStreamWriter.create(store, schema, { kind: "owner", nWriters: 1 });
    // Out of order: record 2 first, so the committed set has a hole at 1 until later.
    const order = [0, 2, 1, 3];
    commitNext = async () => {
      const r = order[next++]!;
      await owner.writeRecordAt(r, T0 * r, { temperature: temperature(r, [0, NLAT]), wind: wind(r) });
      await owner.commit([await owner.flush()]);
      return r;
    };
  }
  for (let i = 0; i < records; i++) await commitNext();
  return { dir, store, schema, commitNext };
}
