// The bench's one-record read (a lat x lon box of `read_record`, every variable at once), as a user keeps
// it: one store handle and caller-owned `out` buffers, so no read allocates a result. Shared by the local
// and the S3 contenders.
import { readRecord } from "@zarr-stream/reader";
import { allocTypedUnfilled } from "@zarr-stream/shard";

function sameBytes(a, b) {
  const x = new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
  const y = new Uint8Array(b.buffer, b.byteOffset, b.byteLength);
  return x.length === y.length && x.every((v, i) => v === y[i]);
}

/**
 * A function reading the workload's record box from `store`; its `checked()` reads it once and throws
 * unless every variable equals the generator's values (`pool`).
 */
export function recordBoxReader(store, wl, pool) {
  const [[a, b], [c, d]] = wl.read_region;
  const outs = wl.vars.map((v) => allocTypedUnfilled(v.dtype, (b - a) * (d - c)));
  const read = () =>
    Promise.all(
      wl.vars.map((v, k) =>
        readRecord(store, v.name, wl.read_record, { lat: [a, b], lon: [c, d] }, { out: outs[k] }),
      ),
    );
  read.checked = async () => {
    const got = await read();
    wl.vars.forEach((v, k) => {
      const f = pool[k][wl.read_record % wl.pool];
      const want = new f.constructor((b - a) * (d - c));
      for (let i = a; i < b; i++) want.set(f.subarray(i * wl.lon + c, i * wl.lon + d), (i - a) * (d - c));
      if (!sameBytes(got[k].data, want))
        throw new Error(`read-back of ${v.name} differs from what was written`);
    });
  };
  return read;
}
