import { spawnSync } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { findPython } from "@zarr-stream/test-support/python";

const python = findPython({ modules: ["numpy", "zarr"] });

/** Why the zarr-python store cannot be written here (the shared probe's rule), or undefined. */
export function pythonSkipReason(): string | undefined {
  return python.skip;
}

/** zarr-python's own sharded layout: what an xarray/zarr user hands the viewer, with no manifest. */
const SCRIPT = `
import sys
import numpy as np
import zarr
from zarr.codecs import BloscCodec, ZstdCodec

root = zarr.open_group(sys.argv[1], mode="w", attributes={"title": "written by zarr-python"})
def put(name, data, dims, chunks, shards, comp, attrs):
    a = root.create_array(name, shape=data.shape, dtype=data.dtype, chunks=chunks, shards=shards,
                          compressors=comp, fill_value=0, dimension_names=dims, attributes=attrs)
    a[...] = data

blosc = BloscCodec(cname="zstd", clevel=5, shuffle="shuffle")
put("time", np.array([0.0, 6.0, 12.0]), ["time"], (3,), (3,), ZstdCodec(level=5), {"units": "hours since 2000-01-01"})
put("lat", np.array([-30.0, -10.0, 10.0, 30.0]), ["lat"], (4,), (4,), ZstdCodec(level=5), {"units": "degrees_north"})
put("lon", np.array([0.0, 90.0, 180.0, 270.0, 360.0]), ["lon"], (5,), (5,), ZstdCodec(level=5), {"units": "degrees_east"})
put("precip", (np.arange(60, dtype="f8").reshape(3, 4, 5) * 0.5 + 1), ["time", "lat", "lon"], (1, 2, 5), (1, 4, 5), blosc, {"units": "mm"})
put("mask", (np.arange(20, dtype="i4").reshape(4, 5) % 3), ["lat", "lon"], (2, 5), (4, 5), ZstdCodec(level=3), {})
`;

/** precip[t, i, j] as the script writes it. */
export function precipAt(t: number, i: number, j: number): number {
  return (t * 20 + i * 5 + j) * 0.5 + 1;
}

export function writeZarrPythonStore(): string {
  const dir = mkdtempSync(join(tmpdir(), "zs-viewer-zarrpy-"));
  const res = spawnSync(python.require(), ["-c", SCRIPT, dir], { encoding: "utf8" });
  if (res.status !== 0) throw new Error(`zarr-python failed (${res.status}): ${res.stderr}`);
  return dir;
}
