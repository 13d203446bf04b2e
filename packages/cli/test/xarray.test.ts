import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { rmSync } from "node:fs";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { SMALL_DEMO, tempDir, zstream } from "./helpers.js";

const python = findPython({ modules: ["numpy", "xarray", "zarr"] });

// Opens the demo store the way a user would, and compares every value with the dump of our read-back.
const SCRIPT = `
import base64, json, sys
import numpy as np
import xarray as xr
store, dump_path = sys.argv[1], sys.argv[2]
ds = xr.open_zarr(store, consolidated=False)
dump = json.load(open(dump_path))
t = ds["temperature"]
out = {
  "dims": dict(ds.sizes),
  "temperature_dims": list(t.dims),
  "temperature_dtype": str(t.dtype),
  "attrs": {k: t.attrs.get(k) for k in ("units", "long_name", "standard_name")},
  "lat_attrs": {k: ds["lat"].attrs.get(k) for k in ("units", "standard_name")},
  "lon_attrs": {k: ds["lon"].attrs.get(k) for k in ("units", "standard_name")},
  "time_dtype": str(ds["time"].dtype),
  "times": [str(x)[:19] for x in ds["time"].values],
  "lat_first_last": [float(ds["lat"].values[0]), float(ds["lat"].values[-1])],
  "mask_dtype": str(ds["land_mask"].dtype),
  "mask_attrs": {k: ds["land_mask"].attrs.get(k) for k in ("standard_name", "flag_meanings")},
  "conventions": ds.attrs.get("Conventions"),
}
equal = []
for rec in dump["records"]:
    v = rec["vars"]["temperature"]
    want = np.frombuffer(base64.b64decode(v["data_b64"]), dtype="<f4").reshape(v["shape"])
    got = t.isel(time=rec["index"]).values
    equal.append(bool(got.dtype == want.dtype and np.array_equal(got, want)))
out["records_equal"] = equal
m = dump["statics"]["land_mask"]
want = np.frombuffer(base64.b64decode(m["data_b64"]), dtype="u1").reshape(m["shape"])
out["mask_equal"] = bool(np.array_equal(ds["land_mask"].values, want))
out["mean_k"] = float(t.mean())
print(json.dumps(out))
`;

import { findPython } from "@zarr-stream/test-support/python";

const root = tempDir("xarray");
after(() => rmSync(root, { recursive: true, force: true }));

describe("the demo store in xarray", () => {
  it(
    "§1 xarray.open_zarr(consolidated=False) sees the dims, CF attributes and exactly the written values",
    { skip: python.skip },
    () => {
      const store = join(root, "demo.zarr");
      const demo = zstream("demo", "--out", store, ...SMALL_DEMO);
      assert.equal(demo.status, 0, demo.stderr);
      const dumpPath = join(root, "dump.json");
      assert.equal(zstream("dump", store, "--out", dumpPath).status, 0);
      const r = spawnSync(python.require(), ["-c", SCRIPT, store, dumpPath], { encoding: "utf8" });
      assert.equal(r.status, 0, r.stderr);
      const got = JSON.parse(r.stdout);
      assert.deepEqual(got.dims, { time: 12, lat: 36, lon: 72 });
      assert.deepEqual(got.temperature_dims, ["time", "lat", "lon"]);
      assert.equal(got.temperature_dtype, "float32");
      assert.deepEqual(got.attrs, {
        units: "K",
        long_name: "near-surface air temperature",
        standard_name: "air_temperature",
      });
      assert.deepEqual(got.lat_attrs, { units: "degrees_north", standard_name: "latitude" });
      assert.deepEqual(got.lon_attrs, { units: "degrees_east", standard_name: "longitude" });
      assert.match(got.time_dtype, /^datetime64/);
      assert.deepEqual(got.times.slice(0, 3), [
        "2000-01-01T00:00:00",
        "2000-01-01T01:00:00",
        "2000-01-01T02:00:00",
      ]);
      assert.equal(got.times[11], "2000-01-01T11:00:00");
      assert.deepEqual(got.lat_first_last, [-87.5, 87.5]);
      assert.equal(got.mask_dtype, "uint8");
      assert.deepEqual(got.mask_attrs, { standard_name: "land_binary_mask", flag_meanings: "sea land" });
      assert.equal(got.conventions, "CF-1.10");
      assert.deepEqual(got.records_equal, Array(12).fill(true));
      assert.equal(got.mask_equal, true);
      assert.ok(got.mean_k > 260 && got.mean_k < 300, `mean ${got.mean_k} K is not earth-like`);
    },
  );
});
