import { chunkKey, fillChunkPart, readChunkInto, settleLanes, type ZarrArray } from "@zarr-stream/shard";
import type { TypedArray } from "@zarr-stream/spec";
import type { ReadableStore } from "@zarr-stream/store";

/** How many chunk reads run at once: enough to overlap I/O with decoding on a few cores. */
const READ_CONCURRENCY = 8;

/**
 * Reads the box `sel` of any array through its codec pipeline (readChunkInto of @zarr-stream/shard), one
 * chunk object at a time, eight in flight, into `out` (the box's size); an absent chunk reads as the array's
 * fill value. `sel` and `out` are already checked.
 */
export async function readChunkedRegion(
  store: ReadableStore,
  arrayPath: string,
  array: ZarrArray,
  sel: [number, number][],
  out: TypedArray,
): Promise<TypedArray> {
  const outShape = sel.map(([a, b]) => b - a);
  // `out` is not zero-filled: every element is either decoded or set to the fill value.
  if (outShape.some((n) => n === 0)) return out;
  const ranges = sel.map(([a, b], d) => [
    Math.floor(a / array.chunkShape[d]!),
    Math.ceil(b / array.chunkShape[d]!),
  ]);
  const chunks: number[][] = [];
  const walk = (d: number, prefix: number[]) => {
    if (d === ranges.length) return void chunks.push(prefix);
    for (let i = ranges[d]![0]!; i < ranges[d]![1]!; i++) walk(d + 1, [...prefix, i]);
  };
  walk(0, []);
  let next = 0;
  const worker = async (stopped: () => boolean) => {
    while (!stopped() && next < chunks.length) {
      const idx = chunks[next++]!;
      const inter = idx.map((i, d) => {
        const c = array.chunkShape[d]!;
        return [Math.max(sel[d]![0], i * c), Math.min(sel[d]![1], (i + 1) * c)] as [number, number];
      });
      const target = {
        data: out,
        shape: outShape,
        start: inter.map(([a], d) => a - sel[d]![0]),
        zeroed: false,
      };
      const found = await readChunkInto(store, chunkKey(arrayPath, array, idx), array, idx, inter, target);
      if (!found) fillChunkPart(array, idx, inter, target);
    }
  };
  await settleLanes(Math.min(READ_CONCURRENCY, chunks.length), worker);
  return out;
}
