"""The limit line of the codecs bench: numcodecs' c-blosc (and its zstd) on the same bytes and chunking.

Usage: cblosc_bench.py <file> <chunk> <typesize> <profile: diagnostic|checkpoint|wasm> <threads> <reps>
Prints: <compress MB/s> <decompress MB/s> <compressed bytes> <decompress into a held buffer MB/s>
(best of reps). Blosc uses c-blosc's own
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
    best_c = best_d = best_i = float("inf")
    size = 0
    for _ in range(reps):
        t0 = time.perf_counter()
        frames = [enc(c) for c in chunks]
        t1 = time.perf_counter()
        for fr in frames:
            dec(fr)
        t2 = time.perf_counter()
        for fr in frames:
            dec_into(fr, out)
        t3 = time.perf_counter()
        best_c, best_d, best_i = min(best_c, t1 - t0), min(best_d, t2 - t1), min(best_i, t3 - t2)
        size = sum(len(fr) for fr in frames)
    mbps = [len(data) / b / 1e6 for b in (best_c, best_d, best_i)]
    print(f"{mbps[0]} {mbps[1]} {size} {mbps[2]}")


if __name__ == "__main__":
    main()
