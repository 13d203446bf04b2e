import { OUTPUT_MANIFEST_V1, SchemaError } from "@zarr-stream/spec";

/**
 * EarthSciIO's Python binding writes v1 manifests in its own spelling: `total_records` for `n_records`,
 * `written_at` for `created_at`, `dims` as `[name, length]` pairs whose time length is the schema's
 * placeholder (0), and `time_shards[].n_records` for `n`. Such stores exist, so readers accept them by
 * rewriting the parsed document into the Julia/Rust spelling (the one the contract adopts) before it is
 * validated. Writers never read through this: they would rewrite someone else's manifest in another
 * spelling, so resume keeps refusing it.
 */
const PYTHON_TO_CONTRACT = { total_records: "n_records", written_at: "created_at" } as const;

type Json = Record<string, unknown>;

function isObject(x: unknown): x is Json {
  return x !== null && typeof x === "object" && !Array.isArray(x);
}

function isPair(x: unknown): x is [string, number] {
  return Array.isArray(x) && x.length === 2 && typeof x[0] === "string" && typeof x[1] === "number";
}

/** True when a parsed v1 manifest uses any of the Python binding's spellings. */
export function usesPythonV1Spelling(doc: unknown): boolean {
  if (!isObject(doc) || doc.schema !== OUTPUT_MANIFEST_V1) return false;
  return (
    "total_records" in doc ||
    "written_at" in doc ||
    (Array.isArray(doc.dims) && doc.dims.some(Array.isArray)) ||
    (Array.isArray(doc.time_shards) && doc.time_shards.some((s) => isObject(s) && "n_records" in s))
  );
}

function refuse(pointer: string, reason: string): never {
  const doc = "output manifest v1 (Python spelling)";
  throw new SchemaError(`${doc}: ${pointer}: ${reason}`, pointer, doc);
}

/**
 * The document in the Julia/Rust spelling, or the document itself when it is not a Python-spelled v1
 * manifest. A document mixing both spellings of one field is refused: which one holds is unknowable.
 * Malformed values are passed through unchanged for the v1 validator to name.
 */
export function normalizePythonV1Spelling(doc: unknown): unknown {
  if (!usesPythonV1Spelling(doc)) return doc;
  const m = doc as Json;
  const out: Json = {};
  for (const [key, value] of Object.entries(m)) {
    const renamed = PYTHON_TO_CONTRACT[key as keyof typeof PYTHON_TO_CONTRACT];
    if (renamed !== undefined && renamed in m)
      refuse(`/${renamed}`, `both ${key} and ${renamed} are present`);
    out[renamed ?? key] = value;
  }
  if (Array.isArray(m.dims)) {
    const records = out.n_records;
    out.dims = m.dims.map((d, i) => {
      if (!Array.isArray(d)) return d;
      if (!isPair(d)) refuse(`/dims/${i}`, "a Python-spelled dim must be [name, length]");
      // The Python binding records the schema's placeholder for the growing time axis.
      const length = d[0] === m.time_dim && typeof records === "number" ? records : d[1];
      return { name: d[0], length };
    });
  }
  if (Array.isArray(m.time_shards)) {
    out.time_shards = m.time_shards.map((s, i) => {
      if (!isObject(s) || !("n_records" in s)) return s;
      if ("n" in s) refuse(`/time_shards/${i}/n`, "both n_records and n are present");
      const { n_records, ...rest } = s;
      return { ...rest, n: n_records };
    });
  }
  return out;
}
