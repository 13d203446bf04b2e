import {
  type ConformanceDump,
  type DumpArray,
  type ExpectedBlob,
  itemSize,
  MANIFEST_FIELDS_NOT_COMPARED,
} from "@zarr-stream/spec";
import { elementText, fromBase64 } from "./bytes.js";
import { compareDumpBlobs } from "./oracle.js";

function floatBits(x: number): string {
  const view = new DataView(new ArrayBuffer(8));
  view.setFloat64(0, x, true);
  return view.getBigUint64(0, true).toString(16).padStart(16, "0");
}

function multiIndex(flat: number, shape: number[]): number[] {
  const out = new Array<number>(shape.length).fill(0);
  for (let d = shape.length - 1; d >= 0; d--) {
    const n = shape[d]!;
    out[d] = n === 0 ? 0 : flat % n;
    flat = n === 0 ? 0 : Math.floor(flat / n);
  }
  return out;
}

/** Why `actual` is not bitwise `expected`, or undefined when it is; names the first differing element. */
export function compareArray(expected: DumpArray, actual: DumpArray): string | undefined {
  if ("error" in actual) return `reader error: ${actual.error}`;
  if ("error" in expected) return `oracle has no value (${expected.error})`;
  if (actual.dtype !== expected.dtype) return `dtype ${actual.dtype}, expected ${expected.dtype}`;
  if (JSON.stringify(actual.shape) !== JSON.stringify(expected.shape)) {
    return `shape ${JSON.stringify(actual.shape)}, expected ${JSON.stringify(expected.shape)}`;
  }
  if (actual.data_b64 === expected.data_b64) return undefined;
  const a = fromBase64(actual.data_b64);
  const e = fromBase64(expected.data_b64);
  if (a.length !== e.length) return `${a.length} data bytes, expected ${e.length}`;
  const size = itemSize(expected.dtype);
  let first = 0;
  while (first < a.length && a[first] === e[first]) first++;
  const element = Math.floor(first / size);
  const where = JSON.stringify(multiIndex(element, expected.shape));
  return `element ${where} is ${elementText(a, actual.dtype, element)}, expected ${elementText(e, expected.dtype, element)} (bitwise)`;
}

function blobText(b: ExpectedBlob): string {
  const scope = b.scope === "static" ? "static" : `record ${b.scope.record}`;
  return `${scope}/writer ${b.writer}/${b.key}`;
}

/** JSON equality as a JSON parser sees it: numbers by value, objects regardless of key order. */
function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (a === null || b === null || typeof a !== "object" || typeof b !== "object") return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) {
    const bs = b as unknown[];
    return a.length === bs.length && a.every((x, i) => jsonEqual(x, bs[i]));
  }
  const ak = Object.keys(a);
  const bo = b as Record<string, unknown>;
  return (
    ak.length === Object.keys(bo).length &&
    ak.every((k) => Object.hasOwn(bo, k) && jsonEqual((a as Record<string, unknown>)[k], bo[k]))
  );
}

/** The manifest field by field against the expected one (whose created_at and base_url are left out). */
function compareManifest(
  expected: Record<string, unknown>,
  actual: Record<string, unknown> | undefined,
): string[] {
  if (actual === undefined) return ["manifest: not in the dump"];
  const out: string[] = [];
  for (const [k, e] of Object.entries(expected)) {
    if (!Object.hasOwn(actual, k)) out.push(`manifest ${k}: missing, expected ${JSON.stringify(e)}`);
    else if (!jsonEqual(actual[k], e)) {
      out.push(`manifest ${k}: ${JSON.stringify(actual[k])}, expected ${JSON.stringify(e)}`);
    }
  }
  const skipped = new Set<string>(MANIFEST_FIELDS_NOT_COMPARED);
  for (const k of Object.keys(actual)) {
    if (!Object.hasOwn(expected, k) && !skipped.has(k)) out.push(`manifest ${k}: unexpected field`);
  }
  return out;
}

/**
 * Every way `dump` differs from the oracle `expected`, one line each, each naming what differs: the
 * record and variable, the static, the blob or the manifest field. Empty when they match bitwise.
 */
export function compareDump(expected: ConformanceDump, dump: ConformanceDump): string[] {
  const out: string[] = [];
  if (dump.case !== expected.case) out.push(`case is ${dump.case}, expected ${expected.case}`);
  if (dump.manifest_schema !== expected.manifest_schema) {
    out.push(`manifest_schema ${dump.manifest_schema}, expected ${expected.manifest_schema}`);
  }
  if (dump.commit_seq !== expected.commit_seq)
    out.push(`commit_seq ${dump.commit_seq}, expected ${expected.commit_seq}`);
  const got = new Map(dump.records.map((r) => [r.index, r]));
  const want = new Map(expected.records.map((r) => [r.index, r]));
  for (const index of got.keys())
    if (!want.has(index)) out.push(`record ${index}: committed, expected not committed`);
  for (const [index, e] of want) {
    const a = got.get(index);
    if (!a) {
      out.push(`record ${index}: not committed`);
      continue;
    }
    if (floatBits(a.t) !== floatBits(e.t)) out.push(`record ${index}: t ${a.t}, expected ${e.t} (bitwise)`);
    if (e.generation !== undefined && a.generation !== e.generation) {
      out.push(`record ${index}: generation ${a.generation}, expected ${e.generation}`);
    }
    for (const name of Object.keys(a.vars))
      if (!(name in e.vars)) out.push(`record ${index} var ${name}: unexpected variable`);
    for (const [name, ev] of Object.entries(e.vars)) {
      const av = a.vars[name];
      const why = av ? compareArray(ev, av) : "missing";
      if (why) out.push(`record ${index} var ${name}: ${why}`);
    }
  }
  for (const name of Object.keys(dump.statics))
    if (!(name in expected.statics)) out.push(`static ${name}: committed, expected not`);
  for (const [name, ev] of Object.entries(expected.statics)) {
    const av = dump.statics[name];
    const why = av ? compareArray(ev, av) : "not committed";
    if (why) out.push(`static ${name}: ${why}`);
  }
  const blobs = (list: ExpectedBlob[]) => [...list].sort(compareDumpBlobs);
  const gotBlobs = new Map(blobs(dump.blobs).map((b) => [blobText(b), b.hex]));
  const wantBlobs = new Map(blobs(expected.blobs).map((b) => [blobText(b), b.hex]));
  for (const k of gotBlobs.keys()) if (!wantBlobs.has(k)) out.push(`blob ${k}: committed, expected not`);
  for (const [k, hex] of wantBlobs) {
    const a = gotBlobs.get(k);
    if (a === undefined) out.push(`blob ${k}: not committed`);
    else if (a !== hex) out.push(`blob ${k}: bytes ${a}, expected ${hex}`);
  }
  if (expected.manifest !== undefined) out.push(...compareManifest(expected.manifest, dump.manifest));
  return out;
}
