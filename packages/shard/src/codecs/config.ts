import { SchemaError } from "@zarr-stream/spec";
import type { CodecContext } from "../codec-model.js";

/** Throws SchemaError at `<codec>/configuration/<field>` of the document. */
export function badConfig(ctx: CodecContext, field: string, reason: string): never {
  const pointer = field === "" ? `${ctx.pointer}/configuration` : `${ctx.pointer}/configuration/${field}`;
  throw new SchemaError(`${ctx.document}: ${pointer}: ${reason}`, pointer, ctx.document);
}

/** Refuses configuration keys the codec does not define: a misspelt option would be silently ignored. */
export function onlyKeys(cfg: Record<string, unknown>, allowed: readonly string[], ctx: CodecContext): void {
  for (const k of Object.keys(cfg)) {
    if (!allowed.includes(k)) badConfig(ctx, k, `unknown option (${allowed.join(", ") || "none"})`);
  }
}

export function intIn(
  cfg: Record<string, unknown>,
  field: string,
  lo: number,
  hi: number,
  ctx: CodecContext,
  fallback?: number,
): number {
  const v = cfg[field] ?? fallback;
  if (typeof v !== "number" || !Number.isInteger(v) || v < lo || v > hi) {
    badConfig(ctx, field, `must be an integer ${lo}..${hi}, got ${JSON.stringify(cfg[field])}`);
  }
  return v;
}

export function oneOf<T extends string>(
  cfg: Record<string, unknown>,
  field: string,
  values: readonly T[],
  ctx: CodecContext,
  fallback?: T,
): T {
  const v = cfg[field] ?? fallback;
  if (!values.includes(v as T)) {
    badConfig(ctx, field, `must be one of ${JSON.stringify(values)}, got ${JSON.stringify(cfg[field])}`);
  }
  return v as T;
}

export function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}
