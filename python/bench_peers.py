"""The Python contenders of the zarr-stream writer benchmark (packages/writer/bench).

Usage: bench_peers.py <contender> <workload.json> <store-dir>
  contender: zarr-python | zarr-python-zarrs | tensorstore | limit, which write the store afresh, or
  tensorstore-record-reads, which reads one record of the store there (bench/record-reads.mjs), or
  tensorstore-read-all | zarr-python-zarrs-read-all [passes], which read all of it (bench/read-all-turns.mjs)
Prints one JSON object on stdout. Every contender runs in its own process so ru_maxrss is its own.

The record values come from the same formulas as packages/writer/bench/workload.mjs (smooth fields from
sin/cos, the noisy field from an integer hash computed exactly in uint32), so every contender compresses
the same bytes up to the last ulp of sin/cos.
"""

import json
import os
import resource
import shutil
import statistics
import sys
import time

import numpy as np

MB = 1e6


def cpu_s():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def peak_rss_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux reports KiB


def current_rss_mb():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


DTYPES = {"float64": np.float64, "float32": np.float32, "int32": np.int32, "uint8": np.uint8}


def field(wl, var_index, r):
    """workload.mjs's field(): integer dtypes take the floor of the same double."""
    lat, lon = wl["lat"], wl["lon"]
    v = wl["vars"][var_index]
    dtype = dtype_of(v)
    integer = np.issubdtype(dtype, np.integer)
    k = var_index
    if v["kind"] == "noise":
        i = np.arange(lat * lon, dtype=np.uint64)
        h = (i * np.uint64(2654435761) + np.uint64((r * 40503 + k * 97) & 0xFFFFFFFF)) & np.uint64(0xFFFFFFFF)
        h ^= h >> np.uint64(15)
        h = (h * np.uint64(2246822519)) & np.uint64(0xFFFFFFFF)
        h ^= h >> np.uint64(13)
        x = h.astype(np.float64) / 4294967296.0 * float(v.get("scale", 10))
        return (np.floor(x) if integer else x).astype(dtype).reshape(lat, lon)
    ii = np.arange(lat, dtype=np.float64)[:, None]
    jj = np.arange(lon, dtype=np.float64)[None, :]
    base, amp = v["base"], v["amp"]
    x = base + amp * np.sin(ii * (3.0 / lat) + r * 0.1 + k) * np.cos(jj * (4.0 / lon) - k) + 0.01 * amp * np.sin(
        ii * jj * (1.0 / 9000.0)
    )
    return (np.floor(x) if integer else x).astype(dtype)


def make_pool(wl):
    return [[field(wl, k, r) for r in range(wl["pool"])] for k in range(len(wl["vars"]))]


def dtype_of(v):
    if v["dtype"] not in DTYPES:
        raise SystemExit(f"the bench generates no {v['dtype']} data (float64, float32, int32, uint8)")
    return DTYPES[v["dtype"]]


def drop_caches():
    try:
        os.sync()
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
        return True
    except OSError:
        return False


def total_bytes(wl):
    return sum(wl["records"] * wl["lat"] * wl["lon"] * np.dtype(dtype_of(v)).itemsize for v in wl["vars"])


def region_slices(wl):
    (a, b), (c, d) = wl["read_region"]
    return slice(a, b), slice(c, d)


# ---------------------------------------------------------------------------------------------- zarr-python


def zarr_codecs(wl, v):
    from zarr.codecs import BloscCodec, ZstdCodec

    itemsize = np.dtype(dtype_of(v)).itemsize
    p = wl["profile"]
    if p == "wasm":
        return ZstdCodec(level=5, checksum=False)
    return BloscCodec(cname="zstd", clevel=7 if p == "checkpoint" else 5, shuffle="shuffle", typesize=itemsize)


def zarr_append_commits(wl, arrays, pool):
    """Writes every record through zarr-python `arrays` (one per variable), one append per commit: append
    grows the shape (zarr.json) and writes the shard objects. Shared by the local and the S3 contenders."""
    for _, m, blocks in commit_blocks(wl, pool):
        for k, arr in enumerate(arrays):
            arr.append(blocks[k][:m], axis=0)


def run_zarr(wl, path, zarrs):
    import zarr

    if zarrs:
        zarr.config.set({"codec_pipeline.path": "zarrs.ZarrsCodecPipeline"})
    pool = make_pool(wl)
    base_rss = current_rss_mb()
    lat, lon = wl["lat"], wl["lon"]
    cpu0 = cpu_s()
    t0 = time.perf_counter()
    root = zarr.open_group(zarr.storage.LocalStore(path), mode="w")
    arrays = []
    for v in wl["vars"]:
        arrays.append(
            root.create_array(
                v["name"],
                shape=(0, lat, lon),
                dtype=dtype_of(v),
                chunks=tuple(wl["chunk"]),
                shards=tuple(wl["shard"]),
                compressors=zarr_codecs(wl, v),
                fill_value=0,
                dimension_names=("time", "lat", "lon"),
            )
        )
    zarr_append_commits(wl, arrays, pool)
    write_s = time.perf_counter() - t0
    write_cpu = cpu_s() - cpu0
    write_peak = peak_rss_mb()

    def read_record():
        g = zarr.open_group(zarr.storage.LocalStore(path), mode="r")
        sl = region_slices(wl)
        rec = wl["read_record"]
        return [g[v["name"]][rec, sl[0], sl[1]] for v in wl["vars"]]

    return finish(wl, write_s, write_cpu, base_rss, write_peak, read_record, lambda: zarr_read_all(wl, path), pool)


def zarr_read_all(wl, path):
    """Every variable a time shard at a time (the read-all pass); the codec pipeline is set by the caller."""
    import zarr

    n, st = wl["records"], wl["shard"][0]
    g = zarr.open_group(zarr.storage.LocalStore(path), mode="r")
    total = 0
    for v in wl["vars"]:
        a = g[v["name"]]
        for r0 in range(0, n, st):
            total += a[r0 : min(n, r0 + st)].nbytes
    return total


# ---------------------------------------------------------------------------------------------- tensorstore


def ts_spec(wl, v, path, create):
    itemsize = np.dtype(dtype_of(v)).itemsize
    p = wl["profile"]
    inner = [{"name": "bytes", "configuration": {"endian": "little"}}]
    if p == "wasm":
        inner.append({"name": "zstd", "configuration": {"level": 5, "checksum": False}})
    else:
        inner.append(
            {
                "name": "blosc",
                "configuration": {
                    "cname": "zstd",
                    "clevel": 7 if p == "checkpoint" else 5,
                    "shuffle": "shuffle",
                    "typesize": itemsize,
                    "blocksize": 0,
                },
            }
        )
    spec = {
        "driver": "zarr3",
        "kvstore": {"driver": "file", "path": os.path.join(path, v["name"])},
    }
    if create:
        spec["metadata"] = {
            "shape": [0, wl["lat"], wl["lon"]],
            "data_type": v["dtype"],
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": wl["shard"]}},
            "codecs": [
                {
                    "name": "sharding_indexed",
                    "configuration": {
                        "chunk_shape": wl["chunk"],
                        "codecs": inner,
                        "index_codecs": [
                            {"name": "bytes", "configuration": {"endian": "little"}},
                            {"name": "crc32c"},
                        ],
                        "index_location": "end",
                    },
                }
            ],
            "fill_value": 0,
            "dimension_names": ["time", "lat", "lon"],
        }
        spec["create"] = True
        spec["delete_existing"] = True
    return spec


def commit_blocks(wl, pool):
    """Yields each commit's records as (r0, m, blocks): blocks[k][:m] holds variable k's records r0 .. r0 + m
    from the pool, in buffers reused from one commit to the next. A commit ends every commit_every records
    and at the end of each time shard, as our contender's flushes do (contender.mjs), so a workload that
    commits inside a time shard has every contender rewrite that shard at each commit."""
    lat, lon, st, n = wl["lat"], wl["lon"], wl["shard"][0], wl["records"]
    every = wl.get("commit_every", st)
    blocks = [np.empty((st, lat, lon), dtype=dtype_of(v)) for v in wl["vars"]]
    r0 = 0
    while r0 < n:
        end = min(n, (r0 // st + 1) * st, (r0 // every + 1) * every)
        m = end - r0
        for k, blk in enumerate(blocks):
            for p in range(m):
                blk[p] = pool[k][(r0 + p) % wl["pool"]]
        yield r0, m, blocks
        r0 = end


def ts_write_shards(wl, arrays, pool):
    """Writes every record through TensorStore `arrays` (one per variable), a commit at a time: the arrays
    grown, then one transaction per commit, committed before the next one starts. Shared by the local and
    the S3 contenders."""
    import tensorstore as ts

    for r0, m, blocks in commit_blocks(wl, pool):
        arrays = [a.resize(exclusive_max=[r0 + m, None, None], expand_only=True).result() for a in arrays]
        txn = ts.Transaction()
        futures = [a.with_transaction(txn)[r0 : r0 + m].write(blocks[k][:m]) for k, a in enumerate(arrays)]
        for f in futures:
            f.result()
        txn.commit_sync()


def run_tensorstore(wl, path):
    import tensorstore as ts

    pool = make_pool(wl)
    base_rss = current_rss_mb()
    cpu0 = cpu_s()
    t0 = time.perf_counter()
    os.makedirs(path, exist_ok=True)
    ts_write_shards(wl, [ts.open(ts_spec(wl, v, path, True)).result() for v in wl["vars"]], pool)
    write_s = time.perf_counter() - t0
    write_cpu = cpu_s() - cpu0
    write_peak = peak_rss_mb()

    def open_all():
        return [ts.open(ts_spec(wl, v, path, False), open=True).result() for v in wl["vars"]]

    def read_record():
        sl = region_slices(wl)
        rec = wl["read_record"]
        return [a[rec, sl[0], sl[1]].read().result() for a in open_all()]

    return finish(wl, write_s, write_cpu, base_rss, write_peak, read_record, lambda: ts_read_all(wl, path), pool)


def ts_read_all(wl, path):
    """Every variable a time shard at a time (the read-all pass), the arrays opened from zarr.json."""
    import tensorstore as ts

    n, st = wl["records"], wl["shard"][0]
    total = 0
    for v in wl["vars"]:
        a = ts.open(ts_spec(wl, v, path, False), open=True).result()
        for r0 in range(0, n, st):
            total += a[r0 : min(n, r0 + st)].read().result().nbytes
    return total


# ---------------------------------------------------------------------------------------------- common


def finish(wl, write_s, write_cpu, base_rss, write_peak, read_record, read_all, pool):
    nbytes = total_bytes(wl)
    # Validate the record we read against the generator, so a contender cannot win by writing nothing.
    got = read_record()
    sl = region_slices(wl)
    for k, a in enumerate(got):
        want = pool[k][wl["read_record"] % wl["pool"]][sl[0], sl[1]]
        if not np.array_equal(a, want):
            raise SystemExit(f"read-back of {wl['vars'][k]['name']} differs from what was written")
    # The median of cold_reps reads, each after dropping the page cache, as contender.mjs takes for ours.
    colds = []
    for _ in range(wl.get("cold_reps", 1) if wl.get("cold", True) else 0):
        if not drop_caches():
            break
        t = time.perf_counter()
        read_record()
        colds.append((time.perf_counter() - t) * 1000)
    cold = statistics.median(colds) if colds else None
    warm = min(timed(read_record) for _ in range(wl.get("warm_reps", 5))) * 1000
    # read_all_passes passes (contender.mjs's readAllPasses): the first, and the best.
    all_s = [s for s, _ in timed_passes(read_all, nbytes, wl.get("read_all_passes", 1))]
    return {
        "write_s": write_s,
        "write_MBps": nbytes / MB / write_s,
        "write_cpu_s": write_cpu,
        "read_record_ms": warm,
        "read_record_cold_ms": cold,
        "read_all_MBps": nbytes / MB / all_s[0],
        "read_all_best_MBps": nbytes / MB / min(all_s),
        "peak_rss_MB": write_peak,
        "baseline_rss_MB": base_rss,
        "peak_rss_with_reads_MB": peak_rss_mb(),
    }


def timed_passes(read_all, nbytes, passes):
    """`passes` read-all passes, each checked to return `nbytes`: (seconds, CPU seconds of every thread) each."""
    out = []
    for _ in range(passes):
        c0, t0 = cpu_s(), time.perf_counter()
        got = read_all()
        out.append((time.perf_counter() - t0, cpu_s() - c0))
        if got != nbytes:
            raise SystemExit(f"read_all returned {got} bytes, expected {nbytes}")
    return out


def timed(fn):
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


# ---------------------------------------------------------------------------------------------- the limit


def run_limit(wl):
    """Blosc (numcodecs' c-blosc) of exactly the inner chunks the writers compress, nothing else."""
    from numcodecs import Blosc, Zstd

    numcodecs_blosc = __import__("numcodecs.blosc", fromlist=["blosc"])
    numcodecs_blosc.use_threads = False  # one chunk per call and thread: parallelism comes from the pool
    pool = make_pool(wl)
    ch, cw = wl["chunk"][1], wl["chunk"][2]
    p = wl["profile"]
    chunks = []  # (codec, bytes, repeats): chunks of one pooled record, repeated for every record using it
    for k, v in enumerate(wl["vars"]):
        itemsize = np.dtype(dtype_of(v)).itemsize
        codec = (
            Zstd(level=5)
            if p == "wasm"
            else Blosc(cname="zstd", clevel=7 if p == "checkpoint" else 5, shuffle=Blosc.SHUFFLE, typesize=itemsize)
        )
        for r in range(wl["pool"]):
            reps = len(range(r, wl["records"], wl["pool"]))
            if reps == 0:
                continue
            f = pool[k][r]
            for i in range(0, wl["lat"], ch):
                for j in range(0, wl["lon"], cw):
                    part = f[i : i + ch, j : j + cw]
                    # An edge chunk is compressed whole, its part past the array's edge holding the fill
                    # value (0), as every writer here stores it.
                    b = np.zeros((ch, cw), dtype=part.dtype)
                    b[: part.shape[0], : part.shape[1]] = part
                    chunks.append((codec, b, reps))
    jobs = [(c, b) for c, b, reps in chunks for _ in range(reps)]
    nbytes = sum(b.nbytes for _, b in jobs)
    assert nbytes >= total_bytes(wl)
    # Throughput in the array's bytes, as the writers' write_MBps (edge padding is work, not output).
    nbytes = total_bytes(wl)
    out = {}
    workers = os.cpu_count() or 1
    t = time.perf_counter()
    cpu0 = cpu_s()
    for c, b in jobs:
        c.encode(b)
    out["compress_MBps_1core"] = nbytes / MB / (time.perf_counter() - t)
    out["compress_cpu_s"] = cpu_s() - cpu0
    # All cores: one forked process per core, each compressing its stripe of the same chunk list, so no
    # GIL or shared state limits the figure.
    t = time.perf_counter()
    pids = []
    for w in range(workers):
        pid = os.fork()
        if pid == 0:
            for c, b in jobs[w::workers]:
                c.encode(b)
            os._exit(0)
        pids.append(pid)
    for pid in pids:
        _, status = os.waitpid(pid, 0)
        if status != 0:
            raise SystemExit(f"limit worker failed with status {status}")
    out["compress_MBps_allcores"] = nbytes / MB / (time.perf_counter() - t)
    out["compressed_bytes"] = sum(len(c.encode(b)) * reps for c, b, reps in chunks)
    out["peak_rss_MB"] = peak_rss_mb()
    return out


def tensorstore_record_reads(wl, path):
    """TensorStore's one-record read of a store that exists (any writer's), as the tensorstore contender
    reads its own: the median of cold_reps reads after dropping the page cache, the best of warm_reps."""
    import tensorstore as ts

    sl = region_slices(wl)
    rec = wl["read_record"]

    def spec(v):
        return {"driver": "zarr3", "kvstore": {"driver": "file", "path": os.path.join(path, v["name"])}}

    def read_record():
        arrays = [ts.open(spec(v), open=True).result() for v in wl["vars"]]
        return [a[rec, sl[0], sl[1]].read().result() for a in arrays]

    read_record()
    colds = []
    for _ in range(wl.get("cold_reps", 5)):
        if not drop_caches():
            break
        colds.append(timed(read_record) * 1000)
    warm = min(timed(read_record) for _ in range(wl.get("warm_reps", 5))) * 1000
    return {"cold_ms": statistics.median(colds) if colds else None, "warm_ms": warm}


def read_all_passes(contender, wl, path, passes):
    """The read-all pass over a store that exists (any writer's), `passes` times: the best MB/s, and the CPU
    seconds (user + system, every thread) of each pass (bench/read-all-turns.mjs)."""
    read_all = ts_read_all
    if contender == "zarr-python-zarrs-read-all":
        import zarr

        zarr.config.set({"codec_pipeline.path": "zarrs.ZarrsCodecPipeline"})
        read_all = zarr_read_all
    nbytes = total_bytes(wl)
    times = timed_passes(lambda: read_all(wl, path), nbytes, passes)
    return {"read_all_MBps": nbytes / MB / min(s for s, _ in times), "cpu_s": [c for _, c in times]}


def main():
    contender, wl_file, path = sys.argv[1], sys.argv[2], sys.argv[3]
    with open(wl_file) as f:
        wl = json.load(f)
    if contender == "tensorstore-record-reads":
        print(json.dumps(tensorstore_record_reads(wl, path)))
        return
    if contender in ("tensorstore-read-all", "zarr-python-zarrs-read-all"):
        print(json.dumps(read_all_passes(contender, wl, path, int(sys.argv[4]) if len(sys.argv) > 4 else 3)))
        return
    shutil.rmtree(path, ignore_errors=True)
    if contender == "limit":
        res = run_limit(wl)
    elif contender == "zarr-python":
        res = run_zarr(wl, path, zarrs=False)
    elif contender == "zarr-python-zarrs":
        res = run_zarr(wl, path, zarrs=True)
    elif contender == "tensorstore":
        res = run_tensorstore(wl, path)
    else:
        raise SystemExit(f"unknown contender {contender}")
    if contender != "limit":
        res["store_bytes"] = sum(
            os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(path) for f in fs
        )
    shutil.rmtree(path, ignore_errors=True)
    print(json.dumps(res))


if __name__ == "__main__":
    main()
