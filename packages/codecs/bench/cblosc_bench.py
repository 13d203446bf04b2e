"""The limit line of the codecs bench: numcodecs' c-blosc (and its zstd) on the same bytes and chunking.

Usage: cblosc_bench.py <file> <chunk> <typesize> <profile: diagnostic|checkpoint|wasm> <threads> <reps>
Prints: <compress MB/s> <decompress MB/s> <compressed bytes> <decompress into a held buffer MB/s>
<batch MB/s> <CPU ms per MiB: compress, decompress, into, batch> (best of reps; CPU time of the whole
process, c-blosc's threads included). Batch decodes every frame, one call each, into its own slice of one buffer
of the whole dataset: c-blosc's counterpart of one decodeBoxes call over a shard's frames. Blosc uses c-blosc's own
threads (`threads` of them, over the blocks of each chunk); plain zstd (profile wasm) is one thread.
"""

import sys
import time

import numcodecs.blosc as blosc
from numcodecs.zstd import Zstd


def main():
    path, chunk, typesize, profile, threads, reps = sys.argv[1:7]
    chunk, typesize, threads, reps = int(chunk), int(typesize), int(threads), int(reps)
    with open(path, "rb") as f:
        data = f.read()
    chunks = [data[i : i + chunk] for i in range(0, len(data), chunk)]
    blosc.use_threads = True
    blosc.set_nthreads(threads)
    if profile == "wasm":
        codec = Zstd(level=5)
        enc, dec = codec.encode, codec.decode

        def dec_into(fr, out):
            codec.decode(fr, out)
    else:
        clevel = 7 if profile == "checkpoint" else 5

        def enc(c):
            return blosc.compress(c, b"zstd", clevel, blosc.SHUFFLE, 0, typesize=typesize)

        dec = blosc.decompress

        def dec_into(fr, out):
            blosc.decompress(fr, out)

    out = bytearray(chunk)
    whole = memoryview(bytearray(len(data)))
    slices = [whole[i : i + chunk] for i in range(0, len(data), chunk)]
    best_c = best_d = best_i = best_b = float("inf")
    cpu = [float("inf")] * 4
    size = 0
    for _ in range(reps):
        t0, u0 = time.perf_counter(), time.process_time()
        frames = [enc(c) for c in chunks]
        t1, u1 = time.perf_counter(), time.process_time()
        for fr in frames:
            dec(fr)
        t2, u2 = time.perf_counter(), time.process_time()
        for fr in frames:
            dec_into(fr, out)
        t3, u3 = time.perf_counter(), time.process_time()
        for fr, sl in zip(frames, slices):
            dec_into(fr, sl)
        t4, u4 = time.perf_counter(), time.process_time()
        mib = len(data) / 2**20
        cpu = [min(c, (b - a) * 1e3 / mib) for c, a, b in zip(cpu, (u0, u1, u2, u3), (u1, u2, u3, u4))]
        best_c, best_d, best_i = min(best_c, t1 - t0), min(best_d, t2 - t1), min(best_i, t3 - t2)
        best_b = min(best_b, t4 - t3)
        size = sum(len(fr) for fr in frames)
    mbps = [len(data) / b / 1e6 for b in (best_c, best_d, best_i, best_b)]
    print(f"{mbps[0]} {mbps[1]} {size} {mbps[2]} {mbps[3]} {' '.join(str(c) for c in cpu)}")


if __name__ == "__main__":
    main()
