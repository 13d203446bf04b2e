import {
  isRecordCommitted,
  isV2,
  readArrayLayout,
  readArrayRegion,
  readOutputManifest,
  readOutputManifestIfPresent,
  readRecord,
  readStatic,
} from "@zarr-stream/reader";
import type { ArrayLayout } from "@zarr-stream/shard";
import {
  type DType,
  type ManifestBlob,
  type OutputManifest,
  type Region,
  SchemaError,
  type TypedArray,
} from "@zarr-stream/spec";
import type { ListableStore, ReadableStore } from "@zarr-stream/store/browser";
import { unitsOf } from "./format.js";
import { type Plane, sliceGrid, sliceSelection, toNumbers } from "./slice.js";

/** Something the page can draw. */
export interface Variable {
  name: string;
  /** "record": a streaming variable, "static": a v2 static, "array": any array of a plain Zarr store. */
  kind: "record" | "static" | "array";
  dims: string[];
  shape: number[];
  dtype: DType;
  /** Position of the record (time) dim in dims, -1 when there is none. */
  timeAxis: number;
  units: string | undefined;
  longName: string | undefined;
  /** A static that is declared but not committed yet: listed, not readable. */
  committed: boolean;
}

export interface RecordRef {
  index: number;
  t: number | undefined;
}

export interface CommitSummary {
  mode: "v1" | "v2" | "plain";
  commitSeq: number | undefined;
  /** Committed records (plain mode: the length of the record axis). */
  nRecords: number;
  nWriters: number | undefined;
  timeMode: "append" | "indexed" | undefined;
  profile: string | undefined;
  statics: { name: string; committed: boolean }[];
  blobs: ManifestBlob[];
  lastT: number | null | undefined;
}

export interface Slice {
  values: Float64Array;
  ny: number;
  nx: number;
  plane: Plane;
  yCoord: Float64Array | undefined;
  xCoord: Float64Array | undefined;
  yUnits: string | undefined;
  xUnits: string | undefined;
}

/** What the viewer reads: the readable core, plus listing for plain stores without a metadata index. */
export type ViewedStore = ReadableStore & ListableStore;

/** How plain stores are browsed: a listing of zarr.json keys (HttpStore.listMetadata), else store.list(""). */
export type MetadataLister = () => Promise<string[]>;

const TIME_NAMES = new Set(["time", "t"]);

function arrayPathOf(zarrJsonKey: string): string {
  return zarrJsonKey === "zarr.json" ? "" : zarrJsonKey.slice(0, -"/zarr.json".length);
}

function strAttr(attrs: Record<string, unknown>, name: string): string | undefined {
  const v = attrs[name];
  return typeof v === "string" && v !== "" ? v : undefined;
}

/**
 * What the viewer knows about a store: its variables, committed records and commit state. With an
 * output_manifest.json it shows committed data only (reader's readRecord/readStatic); without one it is a
 * plain Zarr v3 store (e.g. written by zarr-python) and every array is shown as it is.
 */
export class StoreView {
  readonly store: ViewedStore;
  #lister: MetadataLister;
  #manifest: OutputManifest | undefined;
  #layouts = new Map<string, ArrayLayout>();
  #coords = new Map<string, Promise<Float64Array | undefined>>();
  #variables: Variable[] = [];
  #records: RecordRef[] = [];
  #timeUnits: string | undefined;
  #version = "";

  private constructor(store: ViewedStore, lister: MetadataLister) {
    this.store = store;
    this.#lister = lister;
  }

  static async open(store: ViewedStore, lister?: MetadataLister): Promise<StoreView> {
    const view = new StoreView(
      store,
      lister ??
        (async () => (await store.list("")).filter((k) => k === "zarr.json" || k.endsWith("/zarr.json"))),
    );
    await view.#load();
    return view;
  }

  get mode(): "v1" | "v2" | "plain" {
    if (this.#manifest === undefined) return "plain";
    return isV2(this.#manifest) ? "v2" : "v1";
  }

  get manifest(): OutputManifest | undefined {
    return this.#manifest;
  }

  get variables(): readonly Variable[] {
    return this.#variables;
  }

  /** Committed records in index order (indexed stores may have holes). */
  get records(): readonly RecordRef[] {
    return this.#records;
  }

  get timeUnits(): string | undefined {
    return this.#timeUnits;
  }

  /** Changes exactly when the committed state does: commit_seq (v2), n_records (v1), shapes (plain). */
  get version(): string {
    return this.#version;
  }

  summary(): CommitSummary {
    const m = this.#manifest;
    if (m === undefined) {
      return {
        mode: "plain",
        commitSeq: undefined,
        nRecords: this.#records.length,
        nWriters: undefined,
        timeMode: undefined,
        profile: undefined,
        statics: [],
        blobs: [],
        lastT: undefined,
      };
    }
    const v2 = isV2(m) ? m : undefined;
    return {
      mode: v2 ? "v2" : "v1",
      commitSeq: v2?.commit_seq,
      nRecords: this.#records.length,
      nWriters: v2 ? v2.n_writers : 1,
      timeMode: v2 ? v2.time_mode : "append",
      profile: m.profile,
      statics: (v2?.statics ?? []).map((s) => ({
        name: s.name,
        committed: v2!.statics_committed.includes(s.name),
      })),
      blobs: v2 ? [...v2.blobs] : [],
      lastT: m.last_t,
    };
  }

  /** Re-reads the committed state; true when it changed (the page then redraws). */
  async refresh(): Promise<boolean> {
    const before = this.#version;
    if (this.#manifest !== undefined) {
      const m = await readOutputManifest(this.store);
      if (versionOf(m) === before) return false;
    }
    await this.#load();
    return this.#version !== before;
  }

  variable(name: string): Variable {
    const v = this.#variables.find((x) => x.name === name);
    if (!v)
      throw new SchemaError(
        `no variable ${JSON.stringify(name)} (have: ${this.#variables.map((x) => x.name).join(", ")})`,
      );
    return v;
  }

  /** One 2-D slice of a variable at a committed record, with the coordinates of its two plane dims. */
  async readSlice(
    name: string,
    record: number | undefined,
    fixed: Record<string, number> = {},
  ): Promise<Slice> {
    const v = this.variable(name);
    const { ny, nx, plane } = sliceGrid(v.dims, v.shape, v.timeAxis);
    const sel = sliceSelection(v.dims, v.shape, v.timeAxis, record, fixed);
    let data: TypedArray;
    if (v.kind === "array") {
      data = await readArrayRegion(this.store, name, await this.#layout(name), sel);
    } else {
      const region: Region = {};
      for (const d of plane.fixedDims) region[d] = sel[v.dims.indexOf(d)]!;
      const opts = { manifest: this.#manifest! };
      data =
        v.kind === "record"
          ? (await readRecord(this.store, name, record!, region, opts)).data
          : (await readStatic(this.store, name, region, opts)).data;
    }
    const [yCoord, xCoord] = await Promise.all([this.coordinate(plane.yDim), this.coordinate(plane.xDim)]);
    return {
      values: toNumbers(data),
      ny,
      nx,
      plane,
      yCoord: yCoord?.length === ny ? yCoord : undefined,
      xCoord: xCoord?.length === nx ? xCoord : undefined,
      yUnits: plane.yDim === undefined ? undefined : this.#unitsOfArray(plane.yDim),
      xUnits: plane.xDim === undefined ? undefined : this.#unitsOfArray(plane.xDim),
    };
  }

  /** The values of the 1-D coordinate array named after `dim` (lat, lon, ...), when the store has one. */
  coordinate(dim: string | undefined): Promise<Float64Array | undefined> {
    if (dim === undefined) return Promise.resolve(undefined);
    let p = this.#coords.get(dim);
    if (p === undefined) {
      p = this.#readCoordinate(dim);
      this.#coords.set(dim, p);
    }
    return p;
  }

  async #readCoordinate(dim: string): Promise<Float64Array | undefined> {
    const layout = await this.#layoutIfPresent(dim);
    if (layout === undefined || layout.shape.length !== 1 || layout.dimensionNames[0] !== dim)
      return undefined;
    return toNumbers(await readArrayRegion(this.store, dim, layout, [[0, layout.shape[0]!]]));
  }

  #unitsOfArray(name: string): string | undefined {
    return unitsOf(this.#layouts.get(name)?.attributes);
  }

  async #layout(name: string): Promise<ArrayLayout> {
    const cached = this.#layouts.get(name);
    if (cached) return cached;
    const layout = await readArrayLayout(this.store, name);
    this.#layouts.set(name, layout);
    return layout;
  }

  async #layoutIfPresent(name: string): Promise<ArrayLayout | undefined> {
    if (this.#layouts.has(name)) return this.#layouts.get(name);
    if ((await this.store.size(name === "" ? "zarr.json" : `${name}/zarr.json`)) === undefined)
      return undefined;
    return this.#layout(name);
  }

  async #load(): Promise<void> {
    this.#layouts.clear();
    const m = await readOutputManifestIfPresent(this.store);
    if (this.#manifest === undefined || m === undefined) this.#coords.clear();
    this.#manifest = m;
    if (m === undefined) await this.#loadPlain();
    else await this.#loadManifest(m);
  }

  async #loadManifest(m: OutputManifest): Promise<void> {
    const lengths = new Map(m.dims.map((d) => [d.name, d.length]));
    const v2 = isV2(m) ? m : undefined;
    const declared = [
      ...m.vars.map((v) => ({ v, kind: "record" as const, committed: true })),
      ...(v2?.statics ?? []).map((v) => ({
        v,
        kind: "static" as const,
        committed: v2!.statics_committed.includes(v.name),
      })),
    ];
    const nSlots = v2?.time_mode === "indexed" ? (v2.records?.entries.length ?? 0) : m.n_records;
    // zarr.json attributes carry units when the manifest's vars do not (v1 writers other than Rust).
    const layouts = await Promise.all(
      declared.map(({ v }) => this.#layoutIfPresent(v.name).catch(() => undefined)),
    );
    this.#variables = declared.map(({ v, kind, committed }, i) => {
      const attrs = { ...(layouts[i]?.attributes ?? {}), ...(v.attrs ?? {}) };
      return {
        name: v.name,
        kind,
        dims: [...v.dims],
        shape: v.dims.map((d) => (d === m.time_dim ? nSlots : (lengths.get(d) ?? 0))),
        dtype: v.dtype,
        timeAxis: v.dims.indexOf(m.time_dim),
        units: unitsOf(attrs),
        longName: strAttr(attrs, "long_name"),
        committed,
      };
    });
    const timeLayout = await this.#layoutIfPresent(m.time_dim).catch(() => undefined);
    this.#timeUnits = unitsOf(timeLayout?.attributes);
    const committed = Array.from({ length: nSlots }, (_, i) => i).filter((i) => isRecordCommitted(m, i));
    let times: (number | undefined)[];
    if (v2?.time_mode === "indexed") {
      times = v2.records!.entries.map((e) => e.t);
    } else if (timeLayout && timeLayout.shape.length === 1 && timeLayout.shape[0]! >= m.n_records) {
      // Append mode: only the committed prefix of the time coordinate is read; its zarr.json may
      // already be longer while a commit is in flight.
      times = Array.from(
        toNumbers(await readArrayRegion(this.store, m.time_dim, timeLayout, [[0, m.n_records]])),
      );
    } else {
      times = [];
    }
    this.#records = committed.map((index) => ({ index, t: times[index] }));
    this.#version = versionOf(m);
  }

  async #loadPlain(): Promise<void> {
    const keys = await this.#lister();
    const arrays: { name: string; layout: ArrayLayout }[] = [];
    for (const key of keys) {
      const name = arrayPathOf(key);
      const layout = await this.#layout(name).catch(() => undefined); // groups and unsupported arrays
      if (layout) arrays.push({ name, layout });
    }
    const byName = new Map(arrays.map((a) => [a.name, a.layout]));
    const isCoord = (a: { name: string; layout: ArrayLayout }) =>
      a.layout.shape.length === 1 && a.layout.dimensionNames[0] === a.name;
    const timeDim = [...new Set(arrays.flatMap((a) => a.layout.dimensionNames))].find((d) => {
      const attrs = byName.get(d)?.attributes ?? {};
      const units = unitsOf(attrs) ?? "";
      return TIME_NAMES.has(d.toLowerCase()) || attrs.axis === "T" || /\bsince\b/.test(units);
    });
    const data = arrays.filter((a) => !isCoord(a));
    const shown = data.length > 0 ? data : arrays;
    this.#variables = shown.map(({ name, layout }) => ({
      name,
      kind: "array",
      dims: [...layout.dimensionNames],
      shape: [...layout.shape],
      dtype: layout.dtype,
      timeAxis: timeDim === undefined ? -1 : layout.dimensionNames.indexOf(timeDim),
      units: unitsOf(layout.attributes),
      longName: strAttr(layout.attributes, "long_name"),
      committed: true,
    }));
    const timeLayout = timeDim === undefined ? undefined : byName.get(timeDim);
    this.#timeUnits = unitsOf(timeLayout?.attributes);
    const nRecords = Math.max(
      0,
      ...this.#variables.filter((v) => v.timeAxis >= 0).map((v) => v.shape[v.timeAxis]!),
    );
    let times: number[] = [];
    if (timeLayout && timeLayout.shape.length === 1 && timeDim !== undefined) {
      const n = Math.min(nRecords, timeLayout.shape[0]!);
      times = Array.from(toNumbers(await readArrayRegion(this.store, timeDim, timeLayout, [[0, n]])));
    }
    this.#records = Array.from({ length: nRecords }, (_, index) => ({ index, t: times[index] }));
    this.#version = `plain:${arrays.map((a) => `${a.name}=${a.layout.shape.join("x")}`).join(",")}`;
  }
}

function versionOf(m: OutputManifest): string {
  return isV2(m) ? `v2:${m.commit_seq}` : `v1:${m.n_records}`;
}
