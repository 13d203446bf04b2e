import { MANIFEST_KEY, openArray, parseJsonObject } from "@zarr-stream/reader";
import type { ZarrArray } from "@zarr-stream/shard";
import { StoreError } from "@zarr-stream/spec";
import type { Store } from "@zarr-stream/store";
import { type CfCalendar, CfTimeError, decodeCfTime, formatCfDateTime, parseCfUnits } from "./cf-time.js";

/**
 * A Zarr v3 store read as its arrays, for stores without output_manifest.json (zarr-python, xarray,
 * TensorStore wrote them, or a zarr-stream store before its first commit): every array as it is stored,
 * with no committed state to check it against.
 */

/** What a store is: zarr-stream output (a manifest) or a plain Zarr v3 hierarchy. */
export async function storeKind(store: Store): Promise<"zarr-stream" | "zarr"> {
  if ((await store.size(MANIFEST_KEY)) !== undefined) return "zarr-stream";
  const root = await store.get("zarr.json");
  if (root === undefined) {
    const v2 = (await store.size(".zgroup")) !== undefined || (await store.size(".zarray")) !== undefined;
    throw new StoreError(
      v2
        ? `${store.url} is a Zarr v2 store: zstream reads Zarr v3 (zarr.json)`
        : `${store.url} is not a Zarr store: it has neither ${MANIFEST_KEY} nor zarr.json`,
      "zarr.json",
    );
  }
  const doc = parseJsonObject(root, "zarr.json") as Record<string, unknown>;
  if (doc.zarr_format !== 3)
    throw new StoreError(
      `${store.url}: zarr.json has zarr_format ${JSON.stringify(doc.zarr_format)}, zstream reads Zarr v3`,
      "zarr.json",
    );
  return "zarr";
}

/** One array of a plain store. */
export interface PlainArray {
  /** Its path in the store ("t2m", "group/t2m"). */
  name: string;
  array: ZarrArray;
  /** dimension_names, else xarray's _ARRAY_DIMENSIONS attribute, else dim_0, dim_1, ... */
  dims: string[];
  attributes: Record<string, unknown>;
}

function dimsOf(a: ZarrArray): string[] {
  const fromAttrs = a.metadata.attributes?._ARRAY_DIMENSIONS;
  const names = a.metadata.dimension_names ?? (Array.isArray(fromAttrs) ? fromAttrs : []);
  return a.shape.map((_, i) => (typeof names[i] === "string" && names[i] !== "" ? names[i] : `dim_${i}`));
}

/** Every array of the store (any depth), by path. */
export async function plainArrays(store: Store, keys?: readonly string[]): Promise<PlainArray[]> {
  const out: PlainArray[] = [];
  for (const key of (keys ?? (await store.list(""))).filter((k) => k.endsWith("/zarr.json")).sort()) {
    const name = key.slice(0, -"/zarr.json".length);
    const doc = parseJsonObject((await store.get(key))!, key) as Record<string, unknown>;
    if (doc.node_type !== "array") continue;
    const array = await openArray(store, name);
    out.push({ name, array, dims: dimsOf(array), attributes: array.metadata.attributes ?? {} });
  }
  return out;
}

/** A 1-D array whose units are CF time units: the time coordinate of its dim. */
export interface TimeAxis {
  name: string;
  units: string;
  calendar: CfCalendar;
}

/** The CF time coordinate among the arrays: 1-D, named by its own dim, with "<unit> since <date>" units. */
export function timeAxisOf(arrays: PlainArray[]): TimeAxis | undefined {
  for (const a of arrays) {
    const units = a.attributes.units;
    if (a.dims.length !== 1 || a.dims[0] !== a.name || typeof units !== "string") continue;
    try {
      const u = parseCfUnits(units, a.attributes.calendar);
      return { name: a.name, units, calendar: u.calendar };
    } catch (e) {
      if (!(e instanceof CfTimeError)) throw e;
    }
  }
  return undefined;
}

/** ISO form of a time value in a time axis's units and calendar (undefined for a missing value). */
export function isoTime(
  value: number | bigint,
  axis: Pick<TimeAxis, "units" | "calendar">,
): string | undefined {
  const d = decodeCfTime(value, parseCfUnits(axis.units, axis.calendar));
  return d === undefined ? undefined : formatCfDateTime(d);
}

/** A codec chain as one line: "bytes > zstd(level=0)". */
export function describeCodecs(a: ZarrArray): string {
  const describe = (c: { name: string; configuration?: Record<string, unknown> }): string => {
    const cfg = c.configuration ?? {};
    if (c.name === "sharding_indexed") {
      const inner =
        (cfg.codecs as { name: string; configuration?: Record<string, unknown> }[] | undefined) ?? [];
      return `sharding(${inner.map(describe).join(" > ")})`;
    }
    const shown = Object.entries(cfg)
      .filter(([, v]) => typeof v !== "object" || v === null)
      .map(([k, v]) => `${k}=${v}`);
    return shown.length ? `${c.name}(${shown.join(",")})` : c.name;
  };
  return (a.metadata.codecs as { name: string; configuration?: Record<string, unknown> }[])
    .map(describe)
    .join(" > ");
}
