import { SchemaError } from "@zarr-stream/spec";

/**
 * Boxes to copy out of one row-major source array, one after another in an Int32Array: for each box the
 * destination's index in `dsts`, then the source start, the destination start and the count along every
 * dim (1 + 3·rank numbers per box).
 */
export function boxStride(rank: number): number {
  return 1 + 3 * rank;
}

/** The arguments of copyBoxes (see index.ts). */
export type CopyBoxesArgs = [
  src: Uint8Array,
  srcShape: Int32Array,
  dsts: readonly Uint8Array[],
  dstShape: Int32Array,
  itemSize: number,
  boxes: Int32Array,
];

/** What decodeBoxes decodes and where to: frames of chunkShape, boxes into target (see index.ts). */
export type DecodeBoxesArgs = [
  frames: readonly Uint8Array[],
  chunkShape: Int32Array,
  itemSize: number,
  target: Uint8Array,
  targetShape: Int32Array,
  boxes: Int32Array,
];

function fail(message: string, pointer: string): never {
  throw new SchemaError(`copyBoxes: ${message}`, pointer, "copyBoxes");
}

const product = (xs: Int32Array) => xs.reduce((p, n) => p * n, 1);

function checkShapes(srcShape: Int32Array, dstShape: Int32Array, itemSize: number): void {
  if (
    !(srcShape instanceof Int32Array) ||
    !(dstShape instanceof Int32Array) ||
    dstShape.length !== srcShape.length
  )
    fail("srcShape and dstShape must be Int32Arrays of one rank", "/dstShape");
  if (srcShape.length > 32) fail(`rank ${srcShape.length} is above 32`, "/srcShape");
  if (!Number.isInteger(itemSize) || itemSize < 1)
    fail(`itemSize ${itemSize} is not a positive integer`, "/itemSize");
}

/** Each box (`lead` numbers first, then src start, dst start, count) inside both shapes. */
function checkBoxList(
  srcShape: Int32Array,
  dstShape: Int32Array,
  boxes: Int32Array,
  lead: 0 | 1,
  nDst: number,
): void {
  const rank = srcShape.length;
  const stride = lead + 3 * rank;
  if (!(boxes instanceof Int32Array) || boxes.length % Math.max(stride, 1) !== 0)
    fail(`boxes must be an Int32Array of ${stride} numbers per box`, "/boxes");
  for (let at = 0; at < boxes.length; at += stride) {
    const box = at / stride;
    if (lead && !(boxes[at]! >= 0 && boxes[at]! < nDst))
      fail(`box ${box} names dst ${boxes[at]}`, `/boxes/${at}`);
    for (let d = 0; d < rank; d++) {
      const s0 = boxes[at + lead + d]!;
      const d0 = boxes[at + lead + rank + d]!;
      const c = boxes[at + lead + 2 * rank + d]!;
      if (c < 0 || s0 < 0 || d0 < 0 || s0 + c > srcShape[d]! || d0 + c > dstShape[d]!)
        fail(
          `box ${box} leaves dim ${d} (src ${s0}+${c} of ${srcShape[d]}, dst ${d0}+${c} of ${dstShape[d]})`,
          `/boxes/${at}`,
        );
    }
  }
}

function checkBuffer(b: unknown, bytes: number, what: string, pointer: string): void {
  if (!(b instanceof Uint8Array) || b.length !== bytes)
    fail(`${what} must be a Uint8Array of ${bytes} bytes`, pointer);
}

/** Every box inside its source and destination, every buffer the size its shape says: the native copy trusts this. */
export function checkBoxes(...[src, srcShape, dsts, dstShape, itemSize, boxes]: CopyBoxesArgs): void {
  checkShapes(srcShape, dstShape, itemSize);
  checkBuffer(src, product(srcShape) * itemSize, "src", "/src");
  if (!Array.isArray(dsts)) fail("dsts must be an array", "/dsts");
  dsts.forEach((d, i) => {
    checkBuffer(d, product(dstShape) * itemSize, `dsts[${i}]`, `/dsts/${i}`);
  });
  checkBoxList(srcShape, dstShape, boxes, 1, dsts.length);
}

/** The geometry of decodeBoxes: one box (src start, dst start, count) per frame, a target of its shape. */
export function checkDecodeBoxes(
  ...[frames, chunkShape, itemSize, target, targetShape, boxes]: DecodeBoxesArgs
): void {
  checkShapes(chunkShape, targetShape, itemSize);
  checkBuffer(target, product(targetShape) * itemSize, "target", "/target");
  if (!Array.isArray(frames) || !frames.every((f) => f instanceof Uint8Array))
    fail("frames must be an array of Uint8Arrays", "/frames");
  if (boxes instanceof Int32Array && boxes.length !== frames.length * 3 * chunkShape.length)
    fail(
      `boxes must hold ${3 * chunkShape.length} numbers for each of the ${frames.length} frames`,
      "/boxes",
    );
  checkBoxList(chunkShape, targetShape, boxes, 0, 0);
}

/** The same copies on the calling thread, for backends without a native copy (wasm). */
export function copyBoxesHere(...[src, srcShape, dsts, dstShape, itemSize, boxes]: CopyBoxesArgs): void {
  const rank = srcShape.length;
  const stride = boxStride(rank);
  const strides = (shape: Int32Array) => {
    const out = new Array<number>(rank + 1);
    out[rank] = itemSize;
    for (let d = rank - 1; d >= 0; d--) out[d] = out[d + 1]! * (d + 1 < rank ? shape[d + 1]! : 1);
    return out;
  };
  const ss = strides(srcShape);
  const ds = strides(dstShape);
  for (let at = 0; at < boxes.length; at += stride) {
    const dst = dsts[boxes[at]!]!;
    const cnt = boxes.subarray(at + 1 + 2 * rank, at + stride);
    if (cnt.some((c) => c === 0)) continue;
    let soff = 0;
    let doff = 0;
    for (let d = 0; d < rank; d++) {
      soff += boxes[at + 1 + d]! * ss[d]!;
      doff += boxes[at + 1 + rank + d]! * ds[d]!;
    }
    let inner = Math.max(rank - 1, 0);
    let run = itemSize * (rank > 0 ? cnt[rank - 1]! : 1);
    while (inner > 0 && cnt[inner] === srcShape[inner] && cnt[inner] === dstShape[inner]) {
      inner--;
      run *= cnt[inner]!;
    }
    const idx = new Array<number>(inner).fill(0);
    for (;;) {
      dst.set(src.subarray(soff, soff + run), doff);
      let d = inner - 1;
      for (; d >= 0; d--) {
        idx[d]!++;
        soff += ss[d]!;
        doff += ds[d]!;
        if (idx[d]! < cnt[d]!) break;
        soff -= idx[d]! * ss[d]!;
        doff -= idx[d]! * ds[d]!;
        idx[d] = 0;
      }
      if (d < 0) break;
    }
  }
}
