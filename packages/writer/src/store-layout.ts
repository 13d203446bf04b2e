import {
  type ArrayLayout,
  arrayZarrJson,
  encodeShard,
  encodeZarrJson,
  groupZarrJson,
  shardKey,
} from "@zarr-stream/shard";
import type { StreamSchema } from "@zarr-stream/spec";
import type { ArrayPlan } from "./array-plan.js";
import { sameBytes } from "./fenced-objects.js";
import { runLimited } from "./limit.js";

/** How the layout is written: a fenced put of the writer handle (`rebuild`: FencedObjects.put). */
export type PutObject = (
  key: string,
  bytes: Uint8Array,
  rebuild?: (current: Uint8Array) => Uint8Array,
) => Promise<void>;

export const GROUP_KEY = "zarr.json";

export function zarrJsonKey(arrayPath: string): string {
  return `${arrayPath}/zarr.json`;
}

/** The layout with the time axis set to `timeLength` (arrays without a time axis are unchanged). */
export function withTimeLength(plan: ArrayPlan, timeLength: number): ArrayLayout {
  if (plan.timeAxis < 0) return plan.layout;
  const shape = [...plan.layout.shape];
  shape[plan.timeAxis] = timeLength;
  return { ...plan.layout, shape };
}

/**
 * The root group's zarr.json carrying Zarr v3 consolidated metadata (the inline form zarr-python 3
 * writes and reads): `root` is the group document as stored (its attributes and any other field are
 * kept), `arrays` each array's zarr.json as stored. zarr-python and xarray take every array's metadata
 * from here instead of the array's own zarr.json, so the owner rewrites it with every shape change.
 */
export function consolidatedRoot(root: Record<string, unknown>, arrays: Map<string, Uint8Array>): Uint8Array {
  const metadata: Record<string, unknown> = {};
  for (const name of [...arrays.keys()].sort())
    metadata[name] = JSON.parse(new TextDecoder().decode(arrays.get(name)!));
  return encodeZarrJson({
    ...root,
    consolidated_metadata: { kind: "inline", must_understand: false, metadata },
  });
}

/** The group document of a new store: the schema's attributes (consolidated metadata is added by consolidatedRoot). */
export function groupDocument(schema: StreamSchema): Record<string, unknown> {
  return { ...groupZarrJson({ ...(schema.attrs ?? {}) }) };
}

/**
 * `bytes`, changed when they equal `stored` by toggling a trailing newline (invisible to every JSON
 * reader). A resuming owner's rewrite must change the object's version to refuse a zombie's write
 * conditional on the old one, and S3 gives identical bytes the same ETag (fencing.md).
 */
export function changedFrom(bytes: Uint8Array, stored: Uint8Array | undefined): Uint8Array {
  if (stored === undefined || !sameBytes(bytes, stored)) return bytes;
  const text = new TextDecoder().decode(bytes);
  return new TextEncoder().encode(text.endsWith("\n") ? text.slice(0, -1) : `${text}\n`);
}

const SHAPE_LINE = /\n {2}"shape": \[[^\]]*\]/;

/**
 * `zarrJson` (an array's zarr.json as stored) with only its shape changed: every other byte, attributes
 * included, stays as the store has it. A document in another layout is re-encoded from its parsed form.
 */
export function withShape(zarrJson: Uint8Array, shape: number[]): Uint8Array {
  const text = new TextDecoder().decode(zarrJson);
  const printed = shape.length === 0 ? "[]" : `[\n${shape.map((n) => `    ${n}`).join(",\n")}\n  ]`;
  if (SHAPE_LINE.test(text))
    return new TextEncoder().encode(text.replace(SHAPE_LINE, `\n  "shape": ${printed}`));
  return encodeZarrJson({ ...(JSON.parse(text) as Record<string, unknown>), shape });
}

/**
 * Writes the zarr.json of every array with a time axis at the new committed time length, and the root's
 * consolidated metadata from them, all at once (none of them is the commit point; the manifest after
 * them is). `stored` holds each array's zarr.json as last written or read, so attributes survive byte for
 * byte; it is updated, as is `root.bytes`. `changed` makes every object's bytes differ from what is
 * stored (a resuming owner's rewrite, changedFrom); the difference lasts until the next shape rewrite.
 */
export async function writeTimeShapes(
  put: PutObject,
  plans: ArrayPlan[],
  timeLength: number,
  stored: Map<string, Uint8Array>,
  root: StoredRoot,
  changed = false,
): Promise<void> {
  const writes: [string, Uint8Array][] = [];
  for (const p of plans.filter((p) => p.timeAxis >= 0)) {
    p.layout = withTimeLength(p, timeLength);
    const previous = stored.get(p.name);
    const bytes =
      previous === undefined ? encodeZarrJson(arrayZarrJson(p.layout)) : withShape(previous, p.layout.shape);
    // The template keeps the bytes before any newline toggle, so the next shape rewrite drops it again
    // and every byte but the shape stays as created.
    stored.set(p.name, bytes);
    writes.push([zarrJsonKey(p.name), changed ? changedFrom(bytes, previous) : bytes]);
  }
  const rootBytes = consolidatedRoot(root.doc, stored);
  root.bytes = changed ? changedFrom(rootBytes, root.bytes) : rootBytes;
  writes.push([GROUP_KEY, root.bytes]);
  const rebuild = rebuildRoot(root, stored);
  await runLimited(
    writes.map(
      ([key, bytes]) =>
        () =>
          put(key, bytes, key === GROUP_KEY ? rebuild : undefined),
    ),
  );
}

/**
 * Rebuilds the root from the one another hand wrote since the owner last saw it (the control plane
 * mirroring its resolved index into the attributes at create, a user adding a title): their fields stay,
 * the consolidated metadata is the owner's. Bytes that are no JSON object are replaced whole.
 */
export function rebuildRoot(
  root: StoredRoot,
  arrays: Map<string, Uint8Array>,
): (current: Uint8Array) => Uint8Array {
  return (current) => {
    try {
      root.doc = storedRoot(current).doc;
    } catch {
      return root.bytes!;
    }
    root.bytes = consolidatedRoot(root.doc, arrays);
    return root.bytes;
  };
}

/** The root group's zarr.json: its document without consolidated metadata, and its bytes as stored. */
export interface StoredRoot {
  doc: Record<string, unknown>;
  bytes: Uint8Array | undefined;
}

/** The root document as stored, with its consolidated metadata left out (consolidatedRoot writes it anew). */
export function storedRoot(bytes: Uint8Array): StoredRoot {
  const { consolidated_metadata: _, ...doc } = JSON.parse(new TextDecoder().decode(bytes)) as Record<
    string,
    unknown
  >;
  return { doc, bytes };
}

/** Writes a whole 1-D float64 coordinate (non-time coords, and the indexed time axis) shard by shard. */
async function writeCoordinate(put: PutObject, plan: ArrayPlan, values: number[]): Promise<void> {
  const { layout } = plan;
  const s = layout.shardShape[0]!;
  const nShards = Math.ceil(values.length / s);
  await runLimited(
    Array.from({ length: nShards }, (_, i) => async () => {
      const data = new Float64Array(s);
      data.set(values.slice(i * s, Math.min((i + 1) * s, values.length)));
      await put(shardKey(plan.name, [i]), await encodeShard(layout, [i], data));
    }),
  );
}

/** Every array's zarr.json of a new store (statics at full shape, streaming arrays at the initial time length). */
export function arrayDocuments(plans: ArrayPlan[]): Map<string, Uint8Array> {
  return new Map(plans.map((p) => [p.name, encodeZarrJson(arrayZarrJson(p.layout))]));
}

/**
 * Seed §5.1 create, after the group: every array's zarr.json (`documents`, from arrayDocuments) and the
 * coordinate data. The manifest, when one is due, is the caller's last write.
 */
export async function writeArrays(
  put: PutObject,
  schema: StreamSchema,
  plans: ArrayPlan[],
  documents: Map<string, Uint8Array>,
): Promise<void> {
  await runLimited(plans.map((p) => () => put(zarrJsonKey(p.name), documents.get(p.name)!)));
  for (const plan of plans) {
    if (plan.kind === "coord") await writeCoordinate(put, plan, schema.coords![plan.name]!.values!);
    if (plan.kind === "time" && schema.time_mode !== "append")
      await writeCoordinate(put, plan, schema.time_mode.indexed.times);
  }
}
