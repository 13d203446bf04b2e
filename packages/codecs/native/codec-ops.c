/* The work of each job, on a libuv pool thread: Blosc (blosc1.c) and zstd encoders and decoders, a
 * shard's worth of chunks packed or unpacked in one job, and the box gather (box-copy.c). Each decoder
 * re-checks its frame here although the JS side has checked it, because a corrupt frame must never yield
 * bytes. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "blosc1.h"
#include "box-copy.h"
#include "codec-job.h"
#include "crc32c.h"

/* One zstd context per pool thread: creating a level-5 CCtx allocates megabytes, too costly per chunk. */
static __thread ZSTD_CCtx *tl_cctx;
static __thread ZSTD_DCtx *tl_dctx;

/* Encoders compress into scratch buffers taken from a small shared pool: a fresh malloc of a chunk-sized
 * buffer is a fresh mmap whose pages fault in on every call, which costs measurable throughput. A buffer
 * belongs to its job until complete() has copied the result out on the JS thread. Buffers above
 * SCRATCH_MAX are never pooled, so a one-off huge chunk does not stay resident. */
#define SCRATCH_MAX ((size_t)16 << 20)
#define POOL_SLOTS 8
static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
  uint8_t *p;
  size_t cap;
} pool[POOL_SLOTS];
static int pool_n;

static uint8_t *scratch_get(job_t *j, size_t cap) {
  uint8_t *p = NULL;
  if (cap <= SCRATCH_MAX) {
    pthread_mutex_lock(&pool_lock);
    for (int i = 0; i < pool_n; i++) {
      if (pool[i].cap >= cap) {
        p = pool[i].p;
        j->dstcap = pool[i].cap;
        pool[i] = pool[--pool_n];
        break;
      }
    }
    pthread_mutex_unlock(&pool_lock);
  }
  if (!p && (p = malloc(cap))) j->dstcap = cap;
  return j->dst = p;
}

void zs_scratch_put(job_t *j) {
  if (!j->dst) return;
  if (j->dstcap <= SCRATCH_MAX) {
    pthread_mutex_lock(&pool_lock);
    if (pool_n < POOL_SLOTS) {
      pool[pool_n].p = j->dst;
      pool[pool_n++].cap = j->dstcap;
      j->dst = NULL;
    }
    pthread_mutex_unlock(&pool_lock);
  }
  free(j->dst);
  j->dst = NULL;
}

#define FAIL(j, is_corrupt, ...)                           \
  do {                                                     \
    (j)->corrupt = (is_corrupt);                           \
    snprintf((j)->msg, sizeof((j)->msg), __VA_ARGS__);     \
    return;                                                \
  } while (0)

/* Decoders write their final output with streaming stores from this many bytes per job on: such an
 * output fills a core's L2 (1 MiB on the machines measured) next to the decoder's own working set, so its
 * lines would be evicted before anyone reads them, and reading them in before overwriting them costs as
 * much memory traffic as the writes. Per-thread chunk buffers that are copied on at once are not
 * streamed. */
#define STREAM_MIN ((size_t)1 << 20)

/* Blosc state (zstd contexts, block scratch) of this pool thread. */
static __thread zb_ctx tl_zb;

/* Compresses src into dst (capacity cap); returns the frame length, 0 after FAIL. */
static size_t blosc_encode_into(job_t *j, const uint8_t *src, size_t n, uint8_t *dst, size_t cap) {
  if (cap < n + ZB_MAX_OVERHEAD) {
    snprintf(j->msg, sizeof(j->msg), "output has %zu bytes left, a Blosc frame of %zu may need %zu", cap, n,
             n + (size_t)ZB_MAX_OVERHEAD);
    return 0;
  }
  size_t r = zb_encode(&tl_zb, src, n, dst, j->clevel, j->shuffle, (size_t)j->typesize);
  if (r == 0) snprintf(j->msg, sizeof(j->msg), "out of memory compressing a Blosc frame of %zu bytes", n);
  return r;
}

static void blosc_encode(job_t *j) {
  size_t cap = j->srclen + ZB_MAX_OVERHEAD;
  if (!scratch_get(j, cap)) FAIL(j, 0, "out of memory allocating %zu bytes", cap);
  j->dstlen = blosc_encode_into(j, j->src, j->srclen, j->dst, cap);
}

static void blosc_decode(job_t *j) {
  static uint8_t empty;
  if (j->op == OP_BLOSC_DEC) j->stream_out = j->expected >= STREAM_MIN;
  uint8_t *dst = j->expected ? j->dst : &empty;
  tl_zb.stream_out = j->stream_out;
  zb_status st = zb_decode(&tl_zb, j->src, j->srclen, dst, j->expected, j->msg, sizeof(j->msg));
  if (st == ZB_NOMEM) FAIL(j, 0, "out of memory decoding a Blosc frame of %zu bytes", j->srclen);
  if (st == ZB_UNSUPPORTED) {
    j->unsupported = 1;
    return;
  }
  if (st != ZB_OK) {
    j->corrupt = 1;
    return;
  }
  j->dstlen = j->expected;
}

static size_t zstd_encode_into(job_t *j, const uint8_t *src, size_t n, uint8_t *dst, size_t cap) {
  if (!tl_cctx && !(tl_cctx = ZSTD_createCCtx())) {
    snprintf(j->msg, sizeof(j->msg), "ZSTD_createCCtx failed");
    return 0;
  }
  ZSTD_CCtx_reset(tl_cctx, ZSTD_reset_session_and_parameters);
  size_t e = ZSTD_CCtx_setParameter(tl_cctx, ZSTD_c_compressionLevel, j->level);
  if (!ZSTD_isError(e)) e = ZSTD_CCtx_setParameter(tl_cctx, ZSTD_c_checksumFlag, j->checksum);
  if (!ZSTD_isError(e)) e = ZSTD_CCtx_setParameter(tl_cctx, ZSTD_c_contentSizeFlag, 1);
  if (ZSTD_isError(e)) {
    snprintf(j->msg, sizeof(j->msg), "zstd parameter rejected: %s", ZSTD_getErrorName(e));
    return 0;
  }
  size_t r = ZSTD_compress2(tl_cctx, dst, cap, src, n);
  if (ZSTD_isError(r)) {
    snprintf(j->msg, sizeof(j->msg), "ZSTD_compress2 failed: %s", ZSTD_getErrorName(r));
    return 0;
  }
  return r;
}

static void zstd_encode(job_t *j) {
  size_t cap = ZSTD_compressBound(j->srclen);
  if (!scratch_get(j, cap ? cap : 1)) FAIL(j, 0, "out of memory allocating %zu bytes", cap);
  j->dstlen = zstd_encode_into(j, j->src, j->srclen, j->dst, cap);
}

/* One job per shard: its chunks compress one after another on one pool thread, straight into the
 * caller's output buffer. Several shards in flight keep the cores busy, and a shard costs one JS call and
 * no intermediate allocation, where one call per chunk cost an ArrayBuffer and a promise per chunk plus
 * an assembly copy, most of the writer's overhead over the codec. */
static void pack_encode(job_t *j) {
  size_t pos = j->dstlen;
  for (size_t i = 0; i < j->n; i++) {
    j->sizes[i] = 0;
    if (!j->srcs[i]) continue;
    size_t r = j->pack_zstd ? zstd_encode_into(j, j->srcs[i], j->srclens[i], j->dst + pos, j->dstcap - pos)
                            : blosc_encode_into(j, j->srcs[i], j->srclens[i], j->dst + pos, j->dstcap - pos);
    if (r == 0) return;
    j->sizes[i] = (uint32_t)r;
    pos += r;
  }
  j->dstlen = pos;
}

static void zstd_decode(job_t *j) {
  static uint8_t empty;
  uint8_t *dst = j->expected ? j->dst : &empty;
  if (!tl_dctx && !(tl_dctx = ZSTD_createDCtx())) FAIL(j, 0, "ZSTD_createDCtx failed");
  unsigned long long fcs = ZSTD_getFrameContentSize(j->src, j->srclen);
  if (fcs == ZSTD_CONTENTSIZE_ERROR) FAIL(j, 1, "not a zstd frame (bad magic or header)");
  if (fcs != ZSTD_CONTENTSIZE_UNKNOWN && fcs != j->expected)
    FAIL(j, 1, "zstd frame content size %llu, expected %zu", fcs, j->expected);
  size_t fsz = ZSTD_findFrameCompressedSize(j->src, j->srclen);
  if (ZSTD_isError(fsz)) FAIL(j, 1, "incomplete zstd frame: %s", ZSTD_getErrorName(fsz));
  if (fsz != j->srclen) FAIL(j, 1, "zstd frame is %zu bytes followed by %zu stray bytes", fsz, j->srclen - fsz);
  size_t r = ZSTD_decompressDCtx(tl_dctx, dst, j->expected, j->src, j->srclen);
  if (ZSTD_isError(r)) FAIL(j, 1, "zstd decompression failed: %s", ZSTD_getErrorName(r));
  if (r != j->expected) FAIL(j, 1, "zstd frame decoded to %zu bytes, expected %zu", r, j->expected);
  j->dstlen = r;
}

/* Boxes of one source array into several destinations: the writer's record-to-chunk gather. */
static void copy_boxes(job_t *j) {
  const int R = j->rank;
  size_t sstr[MAX_RANK + 1], dstr[MAX_RANK + 1];
  zs_byte_strides(j->src_shape, R, (size_t)j->itemsize, sstr);
  zs_byte_strides(j->dst_shape, R, (size_t)j->itemsize, dstr);
  for (size_t b = 0; b < j->nboxes; b++) {
    const int32_t *bx = j->boxes + b * (size_t)(1 + 3 * R);
    zs_copy_box(j->src, j->src_shape, sstr, (uint8_t *)j->srcs[bx[0]], j->dst_shape, dstr, R, (size_t)j->itemsize,
             bx + 1, bx + 1 + R, bx + 1 + 2 * R);
  }
}

/* Decoded chunks land here, one chunk at a time per pool thread, on their way into the target box. */
static __thread uint8_t *tl_chunk;
static __thread size_t tl_chunk_cap;

/* Where chunk i of an unpack job can decode straight into the target: its box is the whole chunk and
 * lies in one contiguous run of the target (every dim after the first spans the target). NULL: it decodes
 * into the per-thread chunk buffer and its box is copied over. Skipping that copy saves a chunk-sized
 * write per frame, most of the cost beyond zstd when the target is not in cache. */
static uint8_t *contiguous_box(const job_t *j, const int32_t *bx, const size_t *dstr) {
  const int R = j->rank;
  if (R == 0) return NULL;
  for (int d = 0; d < R; d++) {
    if (bx[d] != 0 || (size_t)bx[2 * R + d] != j->src_shape[d]) return NULL;
    if (d > 0 && j->dst_shape[d] != j->src_shape[d]) return NULL;
  }
  return j->target + (size_t)bx[R] * dstr[0];
}

/* A Blosc frame whose box is not one contiguous run of the target: its blocks go row by row straight
 * into the target (zb_decode_box), not through the chunk buffer and a box copy after it. */
static void blosc_decode_box(job_t *j, const int32_t *bx, const size_t *dstr) {
  const zb_box box = {j->rank, (size_t)j->itemsize, j->src_shape, bx, bx + j->rank, bx + 2 * j->rank, j->target, dstr};
  zb_status st = zb_decode_box(&tl_zb, j->src, j->srclen, j->expected, &box, j->msg, sizeof(j->msg));
  if (st == ZB_NOMEM) FAIL(j, 0, "out of memory decoding a Blosc frame of %zu bytes", j->srclen);
  if (st == ZB_UNSUPPORTED) j->unsupported = 1;
  else if (st != ZB_OK) j->corrupt = 1;
}

/* The read side's counterpart of pack_encode: a shard's frames decode one after another on one pool
 * thread and each chunk's part lands in the caller's array, so a read allocates no per-chunk buffer and
 * makes one JS call per shard. A job covers frames [begin, end): decodeBoxes splits a shard's frames
 * over the pool's threads (async-jobs.c). */
static void unpack_decode(job_t *j) {
  const int R = j->rank;
  size_t chunk = (size_t)j->itemsize;
  for (int d = 0; d < R; d++) chunk *= j->src_shape[d];
  size_t sstr[MAX_RANK + 1], dstr[MAX_RANK + 1];
  zs_byte_strides(j->src_shape, R, (size_t)j->itemsize, sstr);
  zs_byte_strides(j->dst_shape, R, (size_t)j->itemsize, dstr);
  const int stream = chunk * (j->end - j->begin) >= STREAM_MIN;
  for (size_t i = j->begin; i < j->end; i++) {
    const int32_t *bx = j->boxes + i * (size_t)(3 * R);
    uint8_t *direct = contiguous_box(j, bx, dstr);
    j->src = j->srcs[i];
    j->srclen = j->srclens[i];
    j->expected = chunk;
    if (!direct && !j->pack_zstd && R > 0) {
      blosc_decode_box(j, bx, dstr);
      if (zs_job_failed(j)) {
        j->failed = i;
        return;
      }
      continue;
    }
    if (!direct && chunk > tl_chunk_cap) {
      free(tl_chunk);
      tl_chunk_cap = 0;
      if (!(tl_chunk = malloc(chunk ? chunk : 1))) {
        j->failed = i;
        FAIL(j, 0, "out of memory allocating %zu bytes", chunk);
      }
      tl_chunk_cap = chunk;
    }
    j->dst = direct ? direct : tl_chunk;
    j->stream_out = direct && stream;
    if (j->pack_zstd) zstd_decode(j);
    else blosc_decode(j);
    if (zs_job_failed(j)) {
      j->failed = i;
      return;
    }
    if (!direct)
      zs_copy_box(tl_chunk, j->src_shape, sstr, j->target, j->dst_shape, dstr, R, (size_t)j->itemsize, bx, bx + R,
                  bx + 2 * R);
  }
  j->dst = NULL;
}

void zs_run_job(napi_env env, void *data) {
  (void)env;
  job_t *j = data;
  j->msg[0] = 0;
  switch (j->op) {
    case OP_BLOSC_ENC: blosc_encode(j); break;
    case OP_BLOSC_DEC: blosc_decode(j); break;
    case OP_ZSTD_ENC: zstd_encode(j); break;
    case OP_ZSTD_DEC: zstd_decode(j); break;
    case OP_CRC: j->crc = zs_crc32c(j->src, j->srclen); break;
    case OP_PACK: pack_encode(j); break;
    case OP_COPY: copy_boxes(j); break;
    case OP_UNPACK: unpack_decode(j); break;
  }
}
