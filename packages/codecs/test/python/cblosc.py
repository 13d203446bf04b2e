"""c-blosc (numcodecs' build) as a peer for the codecs interop tests.

Usage: cblosc.py <jobs.json>. Each job compresses or decompresses one file:
  {"op": "compress", "in": path, "out": path, "cname": str, "clevel": int, "shuffle": int,
   "typesize": int, "blocksize": int}
  {"op": "decompress", "in": path, "out": path}
Prints one JSON result per job: {"ok": true} or {"error": message}. BLOSC_SPLITMODE in the environment
reaches c-blosc because compression goes through its global (env-reading) entry point.
"""

import json
import sys

import numcodecs.blosc as blosc


def run(job):
    with open(job["in"], "rb") as f:
        data = f.read()
    if job["op"] == "compress":
        out = blosc.compress(
            data,
            job["cname"].encode(),
            job["clevel"],
            job["shuffle"],
            job.get("blocksize", 0),
            typesize=job["typesize"],
        )
    else:
        out = blosc.decompress(data)
    with open(job["out"], "wb") as f:
        f.write(out)


def main():
    blosc.use_threads = True  # the global blosc_compress path, which honours BLOSC_SPLITMODE
    blosc.set_nthreads(1)
    with open(sys.argv[1]) as f:
        jobs = json.load(f)
    results = []
    for job in jobs:
        try:
            run(job)
            results.append({"ok": True})
        except Exception as e:  # reported per job, so one bad frame does not hide the rest
            results.append({"error": f"{type(e).__name__}: {e}"})
    print(json.dumps(results))


if __name__ == "__main__":
    main()
