import {
  ProtocolError,
  type RecordArrays,
  SchemaError,
  type StreamDType,
  type TypedArray,
} from "@zarr-stream/spec";
import type { ArrayPlan } from "./array-plan.js";

const CONSTRUCTORS: Record<StreamDType, { name: string; is: (a: unknown) => boolean }> = {
  float64: { name: "Float64Array", is: (a) => a instanceof Float64Array },
  float32: { name: "Float32Array", is: (a) => a instanceof Float32Array },
  int32: { name: "Int32Array", is: (a) => a instanceof Int32Array },
  int64: { name: "BigInt64Array", is: (a) => a instanceof BigInt64Array },
  uint8: { name: "Uint8Array", is: (a) => a instanceof Uint8Array },
};

/** A supplied array must have the plan's dtype and exactly the element count of its region shape. */
export function checkSuppliedArray(plan: ArrayPlan, a: TypedArray): void {
  const want = CONSTRUCTORS[plan.dtype];
  if (!want.is(a)) {
    const got = (a as object | null)?.constructor?.name ?? typeof a;
    throw new SchemaError(
      `${plan.name}: expected a ${want.name} (${plan.dtype}), got ${got}`,
      `/arrays/${plan.name}`,
    );
  }
  const length = plan.suppliedShape.reduce((p, n) => p * n, 1);
  if (a.length !== length) {
    throw new SchemaError(
      `${plan.name}: expected ${length} elements (shape [${plan.suppliedShape.join(", ")}]), got ${a.length}`,
      `/arrays/${plan.name}`,
    );
  }
}

/**
 * Checks a record's arrays fully before anything is buffered: every variable this writer supplies, with
 * its dtype and region size, and nothing else. Returns them by variable name.
 */
export function checkRecordArrays(
  plans: ArrayPlan[],
  arrays: RecordArrays,
  writerId: number,
): Map<string, TypedArray> {
  if (arrays === null || typeof arrays !== "object")
    throw new SchemaError("record arrays must be an object {variable: typed array}", "/arrays");
  const vars = new Map(plans.filter((p) => p.kind === "var").map((p) => [p.name, p]));
  for (const name of Object.keys(arrays)) {
    const plan = vars.get(name);
    if (!plan)
      throw new SchemaError(`unknown variable ${JSON.stringify(name)} in record arrays`, `/arrays/${name}`);
    if (!plan.supplies) {
      throw new ProtocolError(
        `variable ${name} is replicated: only the owner supplies it, not contributor ${writerId}`,
      );
    }
  }
  const out = new Map<string, TypedArray>();
  for (const plan of vars.values()) {
    if (!plan.supplies) continue;
    const a = (arrays as Record<string, TypedArray | undefined>)[plan.name];
    if (a === undefined)
      throw new SchemaError(`record arrays lack variable ${plan.name}`, `/arrays/${plan.name}`);
    checkSuppliedArray(plan, a);
    out.set(plan.name, a);
  }
  return out;
}
