import { SchemaError, type StreamDType, type TypedArray } from "@zarr-stream/spec";
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
