"""The Python contenders of the writer benchmark's S3 part (packages/writer/bench/s3.mjs).

Usage: bench_peers_s3.py <contender> <workload.json> <endpoint> <bucket>
  contender: tensorstore-s3 | zarr-python-s3 | zarr-python-zarrs-s3
Credentials and region come from AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and AWS_REGION.

Each contender writes the workload of bench_peers.py (same values, same codecs, one time shard per write)
into `bucket` on the loopback S3 server, then reads one record's box and everything back. Between phases
it prints `mark <phase>` and waits for a line on stdin, so the harness can count the server's requests of
each phase from its access log while no clock runs. The last line printed is the JSON result.
"""

import json
import os
import resource
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_peers as bp  # noqa: E402

MB = 1e6


def mark(phase):
    print(f"mark {phase}", flush=True)
    sys.stdin.readline()


def region(wl):
    return bp.region_slices(wl)


def measure_reads(wl, pool, read_record, read_all):
    """The one-record read (checked, then timed best of warm_reps) and the read-all pass, with marks."""
    mark("written")
    got = read_record()
    sl = region(wl)
    for k, a in enumerate(got):
        want = pool[k][wl["read_record"] % wl["pool"]][sl[0], sl[1]]
        if not np.array_equal(a, want):
            raise SystemExit(f"read-back of {wl['vars'][k]['name']} differs from what was written")
    mark("record")
    warm = min(bp.timed(read_record) for _ in range(wl.get("warm_reps", 5))) * 1000
    mark("warm")
    t = time.perf_counter()
    got_all = read_all()
    all_s = time.perf_counter() - t
    nbytes = bp.total_bytes(wl)
    if got_all != nbytes:
        raise SystemExit(f"read_all returned {got_all} bytes, expected {nbytes}")
    mark("read-all")
    return {"read_record_ms": warm, "read_all_MBps": nbytes / MB / all_s}


def run_tensorstore(wl, endpoint, bucket):
    import tensorstore as ts

    def spec(v, create):
        # bench_peers' spec (codecs, shard and chunk shapes), on TensorStore's S3 kvstore driver.
        s = bp.ts_spec(wl, v, "", create)
        s["kvstore"] = {
            "driver": "s3",
            "bucket": bucket,
            "path": f"{v['name']}/",
            "endpoint": endpoint,
            "aws_region": os.environ.get("AWS_REGION", "us-east-1"),
        }
        s.pop("delete_existing", None)
        return s

    pool = bp.make_pool(wl)
    n, st = wl["records"], wl["shard"][0]
    cpu0 = bp.cpu_s()
    t0 = time.perf_counter()
    bp.ts_write_shards(wl, [ts.open(spec(v, True)).result() for v in wl["vars"]], pool)
    write_s = time.perf_counter() - t0
    write_cpu = bp.cpu_s() - cpu0

    def open_all():
        return [ts.open(spec(v, False), open=True).result() for v in wl["vars"]]

    def read_record():
        sl = region(wl)
        rec = wl["read_record"]
        return [a[rec, sl[0], sl[1]].read().result() for a in open_all()]

    def read_all():
        total = 0
        for a in open_all():
            for r0 in range(0, n, st):
                total += a[r0 : min(n, r0 + st)].read().result().nbytes
        return total

    out = {"write_s": write_s, "write_MBps": bp.total_bytes(wl) / MB / write_s, "write_cpu_s": write_cpu}
    out.update(measure_reads(wl, pool, read_record, read_all))
    return out


def obstore_store(endpoint, bucket):
    from obstore.store import S3Store

    return S3Store(
        bucket,
        endpoint=endpoint,
        region=os.environ.get("AWS_REGION", "us-east-1"),
        access_key_id=os.environ["AWS_ACCESS_KEY_ID"],
        secret_access_key=os.environ["AWS_SECRET_ACCESS_KEY"],
        virtual_hosted_style_request=False,
        client_options={"allow_http": True},
    )


def run_zarr(wl, endpoint, bucket, zarrs):
    import zarr
    from zarr.storage import ObjectStore

    if zarrs:
        zarr.config.set({"codec_pipeline.path": "zarrs.ZarrsCodecPipeline"})
    pool = bp.make_pool(wl)
    lat, lon, st = wl["lat"], wl["lon"], wl["shard"][0]
    n = wl["records"]
    cpu0 = bp.cpu_s()
    t0 = time.perf_counter()
    store = ObjectStore(obstore_store(endpoint, bucket))
    root = zarr.open_group(store, mode="w")
    arrays = []
    for v in wl["vars"]:
        arrays.append(
            root.create_array(
                v["name"],
                shape=(0, lat, lon),
                dtype=bp.dtype_of(v),
                chunks=tuple(wl["chunk"]),
                shards=tuple(wl["shard"]),
                compressors=bp.zarr_codecs(wl, v),
                fill_value=0,
                dimension_names=("time", "lat", "lon"),
            )
        )
    bp.zarr_append_commits(wl, arrays, pool)
    write_s = time.perf_counter() - t0
    write_cpu = bp.cpu_s() - cpu0

    def read_record():
        g = zarr.open_group(ObjectStore(obstore_store(endpoint, bucket), read_only=True), mode="r")
        sl = region(wl)
        rec = wl["read_record"]
        return [g[v["name"]][rec, sl[0], sl[1]] for v in wl["vars"]]

    def read_all():
        g = zarr.open_group(ObjectStore(obstore_store(endpoint, bucket), read_only=True), mode="r")
        total = 0
        for v in wl["vars"]:
            a = g[v["name"]]
            for r0 in range(0, n, st):
                total += a[r0 : min(n, r0 + st)].nbytes
        return total

    out = {"write_s": write_s, "write_MBps": bp.total_bytes(wl) / MB / write_s, "write_cpu_s": write_cpu}
    out.update(measure_reads(wl, pool, read_record, read_all))
    return out


def tensorstore_read_all(wl, endpoint, bucket):
    """TensorStore's read-all pass over a store that exists in `bucket` (any writer's), as its contender
    reads its own: the arrays opened once, then every variable a time shard at a time."""
    import tensorstore as ts

    def spec(v):
        return {
            "driver": "zarr3",
            "kvstore": {
                "driver": "s3",
                "bucket": bucket,
                "path": f"{v['name']}/",
                "endpoint": endpoint,
                "aws_region": os.environ.get("AWS_REGION", "us-east-1"),
            },
        }

    n, st = wl["records"], wl["shard"][0]
    r0_usage = resource.getrusage(resource.RUSAGE_SELF)
    t = time.perf_counter()
    total = 0
    for a in [ts.open(spec(v), open=True).result() for v in wl["vars"]]:
        for r0 in range(0, n, st):
            total += a[r0 : min(n, r0 + st)].read().result().nbytes
    s = time.perf_counter() - t
    r1_usage = resource.getrusage(resource.RUSAGE_SELF)
    user = r1_usage.ru_utime - r0_usage.ru_utime
    system = r1_usage.ru_stime - r0_usage.ru_stime
    return {
        "read_all_MBps": total / MB / s,
        "bytes": total,
        "cpu_s": user + system,
        "user_s": user,
        "sys_s": system,
    }


def main():
    contender, wl_file, endpoint, bucket = sys.argv[1:5]
    with open(wl_file) as f:
        wl = json.load(f)
    if contender == "tensorstore-read-all":
        print(json.dumps(tensorstore_read_all(wl, endpoint, bucket)), flush=True)
        return
    if contender == "tensorstore-s3":
        res = run_tensorstore(wl, endpoint, bucket)
    elif contender == "zarr-python-s3":
        res = run_zarr(wl, endpoint, bucket, zarrs=False)
    elif contender == "zarr-python-zarrs-s3":
        res = run_zarr(wl, endpoint, bucket, zarrs=True)
    else:
        raise SystemExit(f"unknown contender {contender}")
    res["peak_rss_MB"] = bp.peak_rss_mb()
    print(json.dumps(res), flush=True)


if __name__ == "__main__":
    main()
