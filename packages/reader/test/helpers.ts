import { profileCodec } from "@zarr-stream/codecs";
import { type ArrayLayout, arrayZarrJson, encodeShard, encodeZarrJson, shardKey } from "@zarr-stream/shard";
import type { Store } from "@zarr-stream/store";

const SHARD = [2, 3, 4];

/**
 * Writes a float64 array `name` [time, y, x] of `shape` by hand (the reader sits below the writer): shards
 * {2, 3, 4}, chunks {1, 3, 2}, every cell of every shard (a partial edge shard included) holding
 * value(t, y, x) at its array coordinates. Returns its layout.
 */
export async function putGridArray(
  store: Store,
  name: string,
  shape: [number, number, number],
  value: (t: number, y: number, x: number) => number,
): Promise<ArrayLayout> {
  const layout: ArrayLayout = {
    shape,
    shardShape: SHARD,
    chunkShape: [1, 3, 2],
    dtype: "float64",
    codec: profileCodec("diagnostic", "float64"),
    dimensionNames: ["time", "y", "x"],
    attributes: {},
  };
  await store.put(`${name}/zarr.json`, encodeZarrJson(arrayZarrJson(layout)));
  const [gt, gy, gx] = shape.map((n, d) => Math.ceil(n / SHARD[d]!)) as [number, number, number];
  for (let st = 0; st < gt; st++)
    for (let sy = 0; sy < gy; sy++)
      for (let sx = 0; sx < gx; sx++) {
        const data = new Float64Array(24);
        for (let t = 0; t < 2; t++)
          for (let y = 0; y < 3; y++)
            for (let x = 0; x < 4; x++) data[t * 12 + y * 4 + x] = value(st * 2 + t, sy * 3 + y, sx * 4 + x);
        await store.put(shardKey(name, [st, sy, sx]), await encodeShard(layout, [st, sy, sx], data));
      }
  return layout;
}
