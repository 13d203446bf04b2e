/* Node-API glue over our Blosc (blosc1.c) and zstd. Every (de)compression runs as async work on the
 * libuv pool so that several chunks in flight use every core; the JS side has already validated the
 * arguments, but each decoder re-checks the frame here because a corrupt frame must never yield bytes. */
#define _GNU_SOURCE /* O_DIRECT */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <node_api.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <uv.h>
#include <zstd.h>

#include "blosc1.h"
#include "crc32c.h"
#include "shuffle.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "crc32c slicing tables assume a little-endian host"
#endif

typedef enum { OP_BLOSC_ENC, OP_BLOSC_DEC, OP_ZSTD_ENC, OP_ZSTD_DEC, OP_CRC, OP_PACK, OP_COPY, OP_UNPACK, OP_WRITE, OP_READ } op_t;

#define MAX_RANK 32

typedef struct job {
  napi_async_work work;
  napi_deferred deferred;
  napi_ref input_ref;
  napi_ref output_ref; /* decoders write straight into a JS-owned (uninitialised) Buffer */
  op_t op;
  const uint8_t *src;
  size_t srclen;
  int clevel, shuffle, typesize, level, checksum;
  size_t blocksize, expected;
  uint8_t *dst;   /* decode: points into output_ref; encode: scratch space */
  size_t dstcap;  /* encode: capacity of the scratch buffer */
  size_t dstlen;
  uint32_t crc;
  int corrupt; /* 1: the input does not decode (CorruptShard); 0: internal failure */
  int unsupported; /* 1: a Blosc frame whose inner codec we do not implement (the caller decodes it) */
  char msg[256];
  /* OP_PACK: n chunks (srcs[i] NULL = absent) compressed back to back into dst (JS memory) from dstlen
   * on; pack_zstd picks plain zstd over Blosc; sizes[i] receives each frame's length, 0 when absent. */
  size_t n;
  const uint8_t **srcs;
  size_t *srclens;
  uint32_t *sizes;
  int pack_zstd;
  napi_ref sizes_ref;
  /* OP_COPY: boxes of the row-major src (shape src_shape) into dsts (srcs above, each of shape
   * dst_shape), itemsize bytes per element; box k is boxes[k*(1+3*rank) ...]: dst index, src start[rank],
   * dst start[rank], count[rank]. Bounds were checked in JS (copyBoxes) before the job was queued. */
  int rank, itemsize;
  size_t src_shape[MAX_RANK], dst_shape[MAX_RANK];
  int32_t *boxes;
  size_t nboxes;
  /* OP_UNPACK: frames (srcs, n of them) each decode to one chunk of shape src_shape, then box k of
   * boxes (src start, dst start, count) goes into target (shape dst_shape). failed: the frame that did not
   * decode. */
  uint8_t *target;
  size_t failed;
  /* OP_WRITE: src (srclen bytes) into a new file at path; on failure err is the errno and syscall the
   * call that set it. */
  char *path;
  int err;
  const char *syscall;
  /* OP_READ: see read_range; dst/dstcap is the caller's buffer, dstlen the bytes read, filesize the size
   * of the file (-1: not a regular file); failed = 1: dst is too small for what the request covers. */
  double position, length;
  int from_end;
  double filesize;
  /* File jobs run on the I/O threads (see io_queue) and complete through their env's io_env. */
  struct io_env *io;
  struct job *next;
} job_t;

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

static void scratch_put(job_t *j) {
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
  uint8_t *dst = j->expected ? j->dst : &empty;
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
 * an assembly copy, most of the writer's overhead over the codec (issue #10). */
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


/* One box per inner chunk a record touches: the writer's record-to-chunk gather, run on the pool so the
 * variables of a record copy in parallel at memcpy speed instead of on the JS thread (issue #10). Whole
 * trailing dims merge into one memcpy run. */
static void byte_strides(const size_t *shape, int rank, size_t itemsize, size_t *str) {
  str[rank] = itemsize;
  for (int d = rank - 1; d >= 0; d--) str[d] = str[d + 1] * (d + 1 < rank ? shape[d + 1] : 1);
}

/* Box `cnt` from s0 of src into d0 of dst (row-major, byte strides sstr/dstr); whole trailing dims merge
 * into one memcpy run. */
static void copy_box(const uint8_t *src, const size_t *src_shape, const size_t *sstr, uint8_t *dst,
                     const size_t *dst_shape, const size_t *dstr, int R, size_t itemsize, const int32_t *s0,
                     const int32_t *d0, const int32_t *cnt) {
  size_t soff = 0, doff = 0;
  for (int d = 0; d < R; d++) {
    if (cnt[d] == 0) return;
    soff += (size_t)s0[d] * sstr[d];
    doff += (size_t)d0[d] * dstr[d];
  }
  int inner = R > 0 ? R - 1 : 0;
  size_t run = itemsize * (R > 0 ? (size_t)cnt[R - 1] : 1);
  while (inner > 0 && (size_t)cnt[inner] == src_shape[inner] && (size_t)cnt[inner] == dst_shape[inner]) {
    inner--;
    run *= (size_t)cnt[inner];
  }
  int32_t idx[MAX_RANK] = {0};
  for (;;) {
    memcpy(dst + doff, src + soff, run);
    int d = inner - 1;
    while (d >= 0) {
      idx[d]++;
      soff += sstr[d];
      doff += dstr[d];
      if (idx[d] < cnt[d]) break;
      soff -= (size_t)idx[d] * sstr[d];
      doff -= (size_t)idx[d] * dstr[d];
      idx[d] = 0;
      d--;
    }
    if (d < 0) return;
  }
}

static void copy_boxes(job_t *j) {
  const int R = j->rank;
  size_t sstr[MAX_RANK + 1], dstr[MAX_RANK + 1];
  byte_strides(j->src_shape, R, (size_t)j->itemsize, sstr);
  byte_strides(j->dst_shape, R, (size_t)j->itemsize, dstr);
  for (size_t b = 0; b < j->nboxes; b++) {
    const int32_t *bx = j->boxes + b * (size_t)(1 + 3 * R);
    copy_box(j->src, j->src_shape, sstr, (uint8_t *)j->srcs[bx[0]], j->dst_shape, dstr, R, (size_t)j->itemsize,
             bx + 1, bx + 1 + R, bx + 1 + 2 * R);
  }
}

/* Decoded chunks land here, one chunk at a time per pool thread, on their way into the target box. */
static __thread uint8_t *tl_chunk;
static __thread size_t tl_chunk_cap;

/* The read side's counterpart of pack_encode: a shard's frames decode one after another on one pool
 * thread and each chunk's part is copied straight into the caller's array, so a read allocates no
 * per-chunk buffer and makes one JS call per shard (issue #10). */
static void unpack_decode(job_t *j) {
  const int R = j->rank;
  size_t chunk = (size_t)j->itemsize;
  for (int d = 0; d < R; d++) chunk *= j->src_shape[d];
  if (chunk > tl_chunk_cap) {
    free(tl_chunk);
    tl_chunk_cap = 0;
    if (!(tl_chunk = malloc(chunk ? chunk : 1))) FAIL(j, 0, "out of memory allocating %zu bytes", chunk);
    tl_chunk_cap = chunk;
  }
  size_t sstr[MAX_RANK + 1], dstr[MAX_RANK + 1];
  byte_strides(j->src_shape, R, (size_t)j->itemsize, sstr);
  byte_strides(j->dst_shape, R, (size_t)j->itemsize, dstr);
  for (size_t i = 0; i < j->n; i++) {
    j->src = j->srcs[i];
    j->srclen = j->srclens[i];
    j->dst = tl_chunk;
    j->expected = chunk;
    if (j->pack_zstd) zstd_decode(j);
    else blosc_decode(j);
    if (j->msg[0]) {
      j->failed = i;
      return;
    }
    const int32_t *bx = j->boxes + i * (size_t)(3 * R);
    copy_box(tl_chunk, j->src_shape, sstr, j->target, j->dst_shape, dstr, R, (size_t)j->itemsize, bx, bx + R,
             bx + 2 * R);
  }
  j->dst = NULL;
}

/* Direct writes. On the machine we measure, copying written bytes into the page cache was a fifth of the
 * writer's CPU (issue #10: dd of 1 GB with fsync, 2.6 s of system time buffered against 0.3 s with
 * O_DIRECT). A shard is written once, fsynced at once and not read
 * back by the writer, so the cache copy buys nothing. The caller's bytes have no alignment guarantee (V8
 * owns them), so whole blocks go through an aligned per-thread bounce buffer (a user-space memcpy of hot
 * memory, far cheaper than the kernel's copy into fresh cache pages) and the last partial block is written
 * buffered after O_DIRECT is cleared from the descriptor. */
#define DIO_ALIGN ((size_t)4096)
#define DIO_BOUNCE ((size_t)2 << 20)
static __thread uint8_t *tl_bounce;

static int write_all(int fd, const uint8_t *p, size_t n, size_t at) {
  while (n) {
    ssize_t w = pwrite(fd, p, n, (off_t)at);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      if (w == 0) errno = EIO;
      return -1;
    }
    p += w;
    at += (size_t)w;
    n -= (size_t)w;
  }
  return 0;
}

/* Writes the first `whole` bytes (a multiple of DIO_ALIGN) with O_DIRECT; returns the offset reached (a
 * short write stops early and leaves the rest to the buffered tail) or -1. */
static ssize_t write_direct_blocks(int fd, const uint8_t *src, size_t whole) {
  size_t done = 0;
  if (whole && !tl_bounce && posix_memalign((void **)&tl_bounce, DIO_ALIGN, DIO_BOUNCE) != 0) {
    tl_bounce = NULL;
    errno = ENOMEM;
    return -1;
  }
  while (done < whole) {
    size_t n = whole - done < DIO_BOUNCE ? whole - done : DIO_BOUNCE;
    memcpy(tl_bounce, src + done, n);
    ssize_t w = pwrite(fd, tl_bounce, n, (off_t)done);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) return -1;
    done += (size_t)w;
    if ((size_t)w != n) break;
  }
  return (ssize_t)done;
}

/* Records errno as the job's failure, naming j->syscall, after closing fd when it is open. */
static void io_failed(job_t *j, int fd) {
  j->err = errno;
  if (fd >= 0) close(fd);
  snprintf(j->msg, sizeof(j->msg), "%s failed: %s", j->syscall, strerror(j->err));
}

static void direct_write(job_t *j) {
  j->syscall = "open";
#ifdef O_DIRECT
  int fd = open(j->path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_DIRECT, 0666);
  if (fd < 0) { io_failed(j, -1); return; }
  j->syscall = "write";
  ssize_t done = write_direct_blocks(fd, j->src, j->srclen / DIO_ALIGN * DIO_ALIGN);
  if (done < 0) { io_failed(j, fd); return; }
  if ((size_t)done < j->srclen) {
    int flags = fcntl(fd, F_GETFL);
    if (flags < 0 || fcntl(fd, F_SETFL, flags & ~O_DIRECT) < 0 ||
        write_all(fd, j->src + done, j->srclen - (size_t)done, (size_t)done) < 0) {
      io_failed(j, fd);
      return;
    }
  }
  j->syscall = "fsync";
  if (fsync(fd) < 0) { io_failed(j, fd); return; }
  j->syscall = "close";
  if (close(fd) < 0) { io_failed(j, -1); return; }
#else
  errno = ENOTSUP;
  io_failed(j, -1);
#endif
}

/* Ranged reads of local files as one job: open, fstat, pread and close cost FsStore four trips through
 * the libuv pool (and a queue behind codec jobs each time) where this costs one; a record read makes
 * dozens of them (issue #10). Reads `length` bytes from `position`, or with from_end the last `length`
 * bytes, clamped to the file, into dst. */
static void read_range(job_t *j) {
  j->syscall = "open";
  int fd = open(j->path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) { io_failed(j, -1); return; }
  struct stat st;
  j->syscall = "fstat";
  if (fstat(fd, &st) < 0) { io_failed(j, fd); return; }
  j->filesize = S_ISREG(st.st_mode) ? (double)st.st_size : -1;
  double size = (double)st.st_size;
  double start = j->from_end ? (size > j->length ? size - j->length : 0) : (j->position < size ? j->position : size);
  double want = j->from_end ? size - start : (j->length < size - start ? j->length : size - start);
  j->failed = j->filesize >= 0 && want > (double)j->dstcap;
  size_t n = j->filesize < 0 || j->failed ? 0 : (size_t)want, done = 0;
  j->syscall = "read";
  while (done < n) {
    ssize_t r = pread(fd, j->dst + done, n - done, (off_t)start + (off_t)done);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) { io_failed(j, fd); return; }
    if (r == 0) break;
    done += (size_t)r;
  }
  j->dstlen = done;
  close(fd);
}

static void execute(napi_env env, void *data) {
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
    case OP_WRITE: direct_write(j); break;
    case OP_READ: read_range(j); break;
  }
}

static napi_value make_error(napi_env env, const job_t *j, const char *fallback) {
  napi_value code, msg, err, failed;
  /* Direct-write errors carry the errno's name as their code, as node:fs errors do. */
  const char *name = j->err            ? uv_err_name(-j->err)
                     : j->corrupt      ? "ZS_CORRUPT"
                     : j->unsupported ? "ZS_UNSUPPORTED"
                                       : "ZS_INTERNAL";
  napi_create_string_utf8(env, name, NAPI_AUTO_LENGTH, &code);
  napi_create_string_utf8(env, j->msg[0] ? j->msg : fallback, NAPI_AUTO_LENGTH, &msg);
  napi_create_error(env, code, msg, &err);
  if (j->op == OP_UNPACK) {
    napi_create_double(env, (double)j->failed, &failed);
    napi_set_named_property(env, err, "frame", failed);
  }
  if (j->err) {
    napi_value sys;
    napi_create_string_utf8(env, j->syscall, NAPI_AUTO_LENGTH, &sys);
    napi_set_named_property(env, err, "syscall", sys);
  }
  return err;
}

static void complete(napi_env env, napi_status status, void *data) {
  job_t *j = data;
  napi_value result = NULL;
  int ok = status == napi_ok && j->msg[0] == 0;
  if (ok && j->op == OP_CRC) {
    napi_create_uint32(env, j->crc, &result);
  } else if (ok && j->op == OP_PACK) {
    napi_create_double(env, (double)j->dstlen, &result);
  } else if (ok && j->op == OP_READ) {
    napi_value v;
    napi_create_array_with_length(env, 2, &result);
    napi_create_double(env, j->failed ? -1 : (double)j->dstlen, &v);
    napi_set_element(env, result, 0, v);
    napi_create_double(env, j->filesize, &v);
    napi_set_element(env, result, 1, v);
  } else if (ok && (j->op == OP_COPY || j->op == OP_UNPACK || j->op == OP_WRITE)) {
    napi_get_undefined(env, &result);
  } else if (ok && (j->op == OP_BLOSC_DEC || j->op == OP_ZSTD_DEC)) {
    /* A plain Uint8Array over the Buffer's memory: callers compare results with Uint8Arrays. */
    napi_value buf, ab;
    napi_typedarray_type t;
    size_t len, off;
    void *p;
    napi_get_reference_value(env, j->output_ref, &buf);
    napi_get_typedarray_info(env, buf, &t, &len, &p, &ab, &off);
    napi_create_typedarray(env, napi_uint8_array, j->dstlen, ab, off, &result);
  } else if (ok) {
    /* Copy the (smaller) compressed bytes into a V8-owned buffer so the GC sees their size. */
    void *p = NULL;
    napi_value ab;
    if (napi_create_arraybuffer(env, j->dstlen, &p, &ab) == napi_ok) {
      if (j->dstlen) memcpy(p, j->dst, j->dstlen);
      napi_create_typedarray(env, napi_uint8_array, j->dstlen, ab, 0, &result);
    } else {
      ok = 0;
      snprintf(j->msg, sizeof(j->msg), "could not allocate a %zu-byte result", j->dstlen);
    }
  }
  if (ok && result) napi_resolve_deferred(env, j->deferred, result);
  else napi_reject_deferred(env, j->deferred, make_error(env, j, "async work was cancelled"));
  if (j->op == OP_BLOSC_ENC || j->op == OP_ZSTD_ENC) scratch_put(j);
  napi_delete_reference(env, j->input_ref);
  if (j->output_ref) napi_delete_reference(env, j->output_ref);
  if (j->sizes_ref) napi_delete_reference(env, j->sizes_ref);
  if (j->work) napi_delete_async_work(env, j->work);
  free(j->srcs);
  free(j->srclens);
  free(j->boxes);
  free(j->path);
  free(j);
}

static int get_bytes(napi_env env, napi_value v, const uint8_t **p, size_t *n) {
  napi_typedarray_type type;
  napi_value ab;
  size_t off;
  void *data;
  bool is_ta = false;
  if (napi_is_typedarray(env, v, &is_ta) != napi_ok || !is_ta) return 0;
  if (napi_get_typedarray_info(env, v, &type, n, &data, &ab, &off) != napi_ok || type != napi_uint8_array) return 0;
  *p = data;
  return 1;
}

static int get_int(napi_env env, napi_value v, int *out) { return napi_get_value_int32(env, v, out) == napi_ok; }

static void queue(napi_env env, job_t *j, napi_value *promise) {
  napi_value name;
  napi_create_promise(env, &j->deferred, promise);
  napi_create_string_utf8(env, "zstream-codecs", NAPI_AUTO_LENGTH, &name);
  napi_create_async_work(env, NULL, name, execute, complete, j, &j->work);
  napi_queue_async_work(env, j->work);
}

static napi_value start(napi_env env, napi_callback_info info, op_t op) {
  size_t argc = 5;
  napi_value argv[5], promise;
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  job_t *j = calloc(1, sizeof(job_t));
  if (!j) {
    napi_throw_error(env, "ZS_INTERNAL", "out of memory");
    return NULL;
  }
  j->op = op;
  int ok = argc >= 1 && get_bytes(env, argv[0], &j->src, &j->srclen);
  int bs = 0, exp = 0;
  switch (op) {
    case OP_BLOSC_ENC:
      ok = ok && argc >= 5 && get_int(env, argv[1], &j->clevel) && get_int(env, argv[2], &j->shuffle) &&
           get_int(env, argv[3], &j->typesize) && get_int(env, argv[4], &bs) && bs >= 0;
      j->blocksize = (size_t)bs;
      break;
    case OP_ZSTD_ENC:
      ok = ok && argc >= 3 && get_int(env, argv[1], &j->level) && get_int(env, argv[2], &j->checksum);
      break;
    case OP_BLOSC_DEC:
    case OP_ZSTD_DEC:
      ok = ok && argc >= 2 && get_int(env, argv[1], &exp) && exp >= 0;
      j->expected = (size_t)exp;
      if (ok) {
        /* napi_create_buffer does not zero-fill (napi_create_arraybuffer does); the decoder fills every
         * byte or the promise rejects and the buffer is never exposed. */
        napi_value buf, ab;
        napi_typedarray_type t;
        size_t len, off = 1;
        void *p = NULL;
        ok = napi_create_buffer(env, j->expected, &p, &buf) == napi_ok &&
             napi_get_typedarray_info(env, buf, &t, &len, &p, &ab, &off) == napi_ok &&
             napi_create_reference(env, buf, 1, &j->output_ref) == napi_ok;
        j->dst = p;
      }
      break;
    case OP_CRC:
      break;
    case OP_PACK: /* pack_js */
    case OP_COPY: /* copy_js */
    case OP_UNPACK: /* unpack_js */
    case OP_WRITE:  /* write_js */
    case OP_READ:   /* read_js */
      ok = 0;
      break;
  }
  if (!ok) {
    if (j->output_ref) napi_delete_reference(env, j->output_ref);
    free(j);
    napi_throw_type_error(env, "ZS_ARGS", "bad arguments to the codecs addon");
    return NULL;
  }
  napi_create_reference(env, argv[0], 1, &j->input_ref);
  queue(env, j, &promise);
  return promise;
}


/* Reads a JS array of Uint8Arrays into j->srcs/srclens (j->n of them). With allow_absent, undefined and
 * null entries become NULL (an absent chunk). */
static int get_byte_list(napi_env env, napi_value arr, int allow_absent, job_t *j) {
  bool is_array = false;
  uint32_t n = 0;
  if (napi_is_array(env, arr, &is_array) != napi_ok || !is_array || napi_get_array_length(env, arr, &n) != napi_ok)
    return 0;
  j->n = n;
  j->srcs = calloc(n ? n : 1, sizeof(*j->srcs));
  j->srclens = calloc(n ? n : 1, sizeof(*j->srclens));
  if (!j->srcs || !j->srclens) return 0;
  for (uint32_t i = 0; i < n; i++) {
    napi_value el;
    napi_valuetype vt;
    if (napi_get_element(env, arr, i, &el) != napi_ok || napi_typeof(env, el, &vt) != napi_ok) return 0;
    if (allow_absent && (vt == napi_undefined || vt == napi_null)) continue;
    if (!get_bytes(env, el, &j->srcs[i], &j->srclens[i])) return 0;
    /* An empty typed array may have no backing store; NULL means "absent", so point it anywhere. */
    if (!j->srcs[i]) j->srcs[i] = (const uint8_t *)"";
  }
  return 1;
}

/* Copies an Int32Array of a multiple of `stride` numbers into j->boxes (the JS array may move or change). */
static int get_boxes(napi_env env, napi_value v, size_t stride, job_t *j) {
  napi_typedarray_type t;
  size_t n = 0, off;
  void *p = NULL;
  napi_value ab;
  if (napi_get_typedarray_info(env, v, &t, &n, &p, &ab, &off) != napi_ok || t != napi_int32_array) return 0;
  if (stride ? n % stride != 0 : n != 0) return 0;
  if (!(j->boxes = malloc(n ? n * sizeof(int32_t) : 1))) return 0;
  memcpy(j->boxes, p, n * sizeof(int32_t));
  j->nboxes = stride ? n / stride : 0;
  return 1;
}

static int get_shape(napi_env env, napi_value v, size_t *shape, int *rank) {
  napi_typedarray_type t;
  size_t n, off;
  void *p;
  napi_value ab;
  if (napi_get_typedarray_info(env, v, &t, &n, &p, &ab, &off) != napi_ok || t != napi_int32_array || n > MAX_RANK)
    return 0;
  for (size_t d = 0; d < n; d++) {
    if (((int32_t *)p)[d] < 0) return 0;
    shape[d] = (size_t)((int32_t *)p)[d];
  }
  *rank = (int)n;
  return 1;
}

static job_t *new_job(napi_env env, op_t op) {
  job_t *j = calloc(1, sizeof(job_t));
  if (!j) napi_throw_error(env, "ZS_INTERNAL", "out of memory");
  else j->op = op;
  return j;
}

static napi_value bad_args(napi_env env, job_t *j, const char *what) {
  free(j->srcs);
  free(j->srclens);
  free(j->boxes);
  free(j->path);
  free(j);
  napi_throw_type_error(env, "ZS_ARGS", what);
  return NULL;
}

/* Queues j, keeping argv[in] (inputs) and argv[out] (written by the job) alive until it completes. */
static napi_value queue_with(napi_env env, job_t *j, napi_value in, napi_value out) {
  napi_value promise;
  napi_create_reference(env, in, 1, &j->input_ref);
  napi_create_reference(env, out, 1, &j->output_ref);
  queue(env, j, &promise);
  return promise;
}

/* encodePacked(chunks: (Uint8Array|undefined)[], zstd: 0|1, p1, p2, p3, p4, out: Uint8Array, offset,
 * sizes: Uint32Array): p1..p4 are clevel, shuffle, typesize, blocksize for Blosc and level, checksum for
 * zstd. Resolves with the end offset of the last frame. The JS caller sizes `out` and keeps every chunk
 * and `out` untouched until the promise settles; the references only keep them alive. */
static napi_value pack_js(napi_env env, napi_callback_info info) {
  size_t argc = 9;
  napi_value argv[9];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  job_t *j = new_job(env, OP_PACK);
  if (!j) return NULL;
  int offset = 0, p[4] = {0, 0, 0, 0};
  const uint8_t *out = NULL;
  size_t outlen = 0, nsizes = 0, off = 0;
  napi_typedarray_type t;
  void *sizes = NULL;
  napi_value ab;
  int ok = argc == 9 && get_byte_list(env, argv[0], 1, j) && get_int(env, argv[1], &j->pack_zstd) &&
           get_int(env, argv[2], &p[0]) && get_int(env, argv[3], &p[1]) && get_int(env, argv[4], &p[2]) &&
           get_int(env, argv[5], &p[3]) && get_bytes(env, argv[6], &out, &outlen) && get_int(env, argv[7], &offset) &&
           offset >= 0 && (size_t)offset <= outlen &&
           napi_get_typedarray_info(env, argv[8], &t, &nsizes, &sizes, &ab, &off) == napi_ok &&
           t == napi_uint32_array && nsizes == j->n;
  if (!ok) return bad_args(env, j, "bad arguments to encodePacked");
  if (j->pack_zstd) {
    j->level = p[0];
    j->checksum = p[1];
  } else {
    j->clevel = p[0];
    j->shuffle = p[1];
    j->typesize = p[2];
    j->blocksize = (size_t)(p[3] < 0 ? 0 : p[3]);
  }
  j->dst = (uint8_t *)out;
  j->dstcap = outlen;
  j->dstlen = (size_t)offset;
  j->sizes = sizes;
  napi_create_reference(env, argv[8], 1, &j->sizes_ref);
  return queue_with(env, j, argv[0], argv[6]);
}

/* copyBoxes(src: Uint8Array, srcShape: Int32Array, dsts: Uint8Array[], dstShape: Int32Array, itemsize,
 * boxes: Int32Array): see copy_boxes. Resolves with undefined. */
static napi_value copy_js(napi_env env, napi_callback_info info) {
  size_t argc = 6;
  napi_value argv[6];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  job_t *j = new_job(env, OP_COPY);
  if (!j) return NULL;
  int dst_rank = -1;
  int ok = argc == 6 && get_bytes(env, argv[0], &j->src, &j->srclen) &&
           get_shape(env, argv[1], j->src_shape, &j->rank) && get_byte_list(env, argv[2], 0, j) &&
           get_shape(env, argv[3], j->dst_shape, &dst_rank) && dst_rank == j->rank &&
           get_int(env, argv[4], &j->itemsize) && j->itemsize > 0 &&
           get_boxes(env, argv[5], (size_t)(1 + 3 * j->rank), j);
  for (size_t b = 0; ok && b < j->nboxes; b++) {
    int32_t dst = j->boxes[b * (size_t)(1 + 3 * j->rank)];
    ok = dst >= 0 && (size_t)dst < j->n;
  }
  if (!ok) return bad_args(env, j, "bad arguments to copyBoxes");
  return queue_with(env, j, argv[0], argv[2]);
}

/* decodeBoxes(frames: Uint8Array[], zstd: 0|1, chunkShape: Int32Array, itemsize, target: Uint8Array,
 * targetShape: Int32Array, boxes: Int32Array): 3*rank numbers per frame (see unpack_decode). Geometry was
 * checked in JS (decodeBoxes) before the job was queued. */
static napi_value unpack_js(napi_env env, napi_callback_info info) {
  size_t argc = 7;
  napi_value argv[7];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  job_t *j = new_job(env, OP_UNPACK);
  if (!j) return NULL;
  int dst_rank = -1;
  const uint8_t *target = NULL;
  size_t tlen = 0;
  int ok = argc == 7 && get_byte_list(env, argv[0], 0, j) && get_int(env, argv[1], &j->pack_zstd) &&
           get_shape(env, argv[2], j->src_shape, &j->rank) && get_int(env, argv[3], &j->itemsize) &&
           j->itemsize > 0 && get_bytes(env, argv[4], &target, &tlen) &&
           get_shape(env, argv[5], j->dst_shape, &dst_rank) && dst_rank == j->rank &&
           get_boxes(env, argv[6], (size_t)(3 * j->rank), j) && (j->rank == 0 || j->nboxes == j->n);
  if (!ok) return bad_args(env, j, "bad arguments to decodeBoxes");
  j->target = (uint8_t *)target;
  return queue_with(env, j, argv[0], argv[4]);
}

/* File jobs get threads of their own. On the libuv pool a read or write that waits for the disk holds a
 * thread the codecs need: with 4 pool threads on 2 cores, a cold whole-store read spent a tenth of its
 * time with cores idle behind blocked reads (issue #10). IO_THREADS threads, started on first use, take
 * file jobs from one queue; each env completes its jobs on its JS thread through a threadsafe function,
 * referenced only while it has jobs in flight so an idle addon never keeps the process alive. (8 or 16
 * threads measured no better than 4 for cold record reads and whole-store reads here.) */
#define IO_THREADS 4

typedef struct io_env {
  napi_threadsafe_function done;
  size_t pending; /* jobs queued or running; touched on the JS thread only */
  pthread_mutex_t lock;
  pthread_cond_t idle;
  size_t running; /* jobs not yet handed back to the JS thread; under lock */
} io_env_t;

static pthread_mutex_t io_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t io_ready = PTHREAD_COND_INITIALIZER;
static job_t *io_head, *io_tail;
static int io_started;

static void *io_thread(void *arg) {
  (void)arg;
  for (;;) {
    pthread_mutex_lock(&io_lock);
    while (!io_head) pthread_cond_wait(&io_ready, &io_lock);
    job_t *j = io_head;
    io_head = j->next;
    if (!io_head) io_tail = NULL;
    pthread_mutex_unlock(&io_lock);
    execute(NULL, j);
    io_env_t *io = j->io;
    if (napi_call_threadsafe_function(io->done, j, napi_tsfn_nonblocking) != napi_ok) {
      /* The env is going away: its cleanup hook waits for `running` to reach 0, then drops the job. */
    }
    pthread_mutex_lock(&io->lock);
    if (--io->running == 0) pthread_cond_broadcast(&io->idle);
    pthread_mutex_unlock(&io->lock);
  }
  return NULL;
}

/* Node unloads an addon when the last worker thread that loaded it ends; the I/O threads run (and sleep)
 * in this library's code, so it must stay mapped once they exist. */
static void pin_addon(void) {
  Dl_info self;
  if (dladdr(&io_started, &self) && self.dli_fname)
    (void)dlopen(self.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
}

/* On the JS thread: settle the job's promise. env is NULL when the env is being torn down. */
static void io_complete(napi_env env, napi_value cb, void *context, void *data) {
  (void)cb;
  io_env_t *io = context;
  job_t *j = data;
  if (env == NULL) return; /* freed with the env's references; nothing may touch JS now */
  complete(env, napi_ok, j);
  if (--io->pending == 0) napi_unref_threadsafe_function(env, io->done);
}

/* Teardown of an env (a worker thread ending): its buffers must outlive any job still reading or
 * writing them, so wait for the I/O threads to be done with its jobs. */
static void io_env_cleanup(void *arg) {
  io_env_t *io = arg;
  pthread_mutex_lock(&io->lock);
  while (io->running) pthread_cond_wait(&io->idle, &io->lock);
  pthread_mutex_unlock(&io->lock);
}

static void io_env_finalize(napi_env env, void *data, void *hint) {
  (void)hint;
  io_env_t *io = data;
  napi_remove_env_cleanup_hook(env, io_env_cleanup, io);
  pthread_mutex_destroy(&io->lock);
  pthread_cond_destroy(&io->idle);
  free(io);
}

static napi_status io_env_init(napi_env env) {
  io_env_t *io = calloc(1, sizeof(io_env_t));
  napi_value name;
  if (!io) return napi_generic_failure;
  pthread_mutex_init(&io->lock, NULL);
  pthread_cond_init(&io->idle, NULL);
  napi_create_string_utf8(env, "zstream-file-io", NAPI_AUTO_LENGTH, &name);
  napi_status st = napi_create_threadsafe_function(env, NULL, NULL, name, 0, 1, NULL, NULL, io, io_complete,
                                                   &io->done);
  if (st != napi_ok) return st;
  napi_unref_threadsafe_function(env, io->done);
  napi_add_env_cleanup_hook(env, io_env_cleanup, io);
  return napi_set_instance_data(env, io, io_env_finalize, NULL);
}

/* Like queue_with, for file jobs: on the I/O threads instead of the libuv pool. */
static napi_value io_queue(napi_env env, job_t *j, napi_value keep) {
  napi_value promise;
  io_env_t *io = NULL;
  if (napi_get_instance_data(env, (void **)&io) != napi_ok || !io) return bad_args(env, j, "file I/O is not set up");
  napi_create_reference(env, keep, 1, &j->input_ref);
  napi_create_promise(env, &j->deferred, &promise);
  j->io = io;
  if (io->pending++ == 0) napi_ref_threadsafe_function(env, io->done);
  pthread_mutex_lock(&io->lock);
  io->running++;
  pthread_mutex_unlock(&io->lock);
  pthread_mutex_lock(&io_lock);
  if (io_started == 0) pin_addon();
  for (; io_started < IO_THREADS; io_started++) {
    pthread_t t;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    int failed = pthread_create(&t, &attr, io_thread, NULL);
    pthread_attr_destroy(&attr);
    if (failed) break;
  }
  if (io_tail) io_tail->next = j;
  else io_head = j;
  io_tail = j;
  pthread_cond_signal(&io_ready);
  pthread_mutex_unlock(&io_lock);
  return promise;
}

/* Copies the JS string v into a fresh NUL-terminated buffer; 0 for a non-string, "" or an embedded NUL. */
static int get_path(napi_env env, napi_value v, char **out) {
  size_t len = 0;
  if (napi_get_value_string_utf8(env, v, NULL, 0, &len) != napi_ok || len == 0 || !(*out = malloc(len + 1)))
    return 0;
  return napi_get_value_string_utf8(env, v, *out, len + 1, &len) == napi_ok && strlen(*out) == len;
}

/* readFileInto(path, position, length, fromEnd: 0|1, into: Uint8Array): resolves with [bytesRead,
 * fileSize]; fileSize -1 when path is not a regular file; bytesRead -1 when into cannot hold what the
 * request covers (nothing is read then). Errors as writeFileDirect's (code: the errno's name). */
static napi_value read_js(napi_env env, napi_callback_info info) {
  size_t argc = 5;
  napi_value argv[5];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  job_t *j = new_job(env, OP_READ);
  if (!j) return NULL;
  const uint8_t *into = NULL;
  size_t cap = 0;
  int ok = argc == 5 && get_path(env, argv[0], &j->path) &&
           napi_get_value_double(env, argv[1], &j->position) == napi_ok && j->position >= 0 &&
           napi_get_value_double(env, argv[2], &j->length) == napi_ok && j->length >= 0 &&
           get_int(env, argv[3], &j->from_end) && get_bytes(env, argv[4], &into, &cap);
  if (!ok) return bad_args(env, j, "bad arguments to readFileInto");
  j->dst = (uint8_t *)into;
  j->dstcap = cap;
  return io_queue(env, j, argv[4]);
}

/* writeFileDirect(path: string, bytes: Uint8Array): creates path (it must not exist), writes bytes around
 * the page cache where the filesystem allows (see direct_write) and fsyncs. Rejects with the errno's name
 * as code and the failing call as syscall; EINVAL from open or write means no direct I/O here. */
static napi_value write_js(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  job_t *j = new_job(env, OP_WRITE);
  if (!j) return NULL;
  int ok = argc == 2 && get_path(env, argv[0], &j->path) && get_bytes(env, argv[1], &j->src, &j->srclen);
  if (!ok) return bad_args(env, j, "bad arguments to writeFileDirect");
  return io_queue(env, j, argv[1]);
}

static napi_value blosc_encode_js(napi_env env, napi_callback_info i) { return start(env, i, OP_BLOSC_ENC); }
static napi_value blosc_decode_js(napi_env env, napi_callback_info i) { return start(env, i, OP_BLOSC_DEC); }
static napi_value zstd_encode_js(napi_env env, napi_callback_info i) { return start(env, i, OP_ZSTD_ENC); }
static napi_value zstd_decode_js(napi_env env, napi_callback_info i) { return start(env, i, OP_ZSTD_DEC); }
static napi_value crc32c_js(napi_env env, napi_callback_info i) { return start(env, i, OP_CRC); }

static napi_value crc32c_sync(napi_env env, napi_callback_info info, int portable) {
  size_t argc = 1;
  napi_value argv[1], out;
  const uint8_t *p;
  size_t n;
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  if (argc < 1 || !get_bytes(env, argv[0], &p, &n)) {
    napi_throw_type_error(env, "ZS_ARGS", "crc32c expects a Uint8Array");
    return NULL;
  }
  napi_create_uint32(env, portable ? zs_crc32c_portable(p, n) : zs_crc32c(p, n), &out);
  return out;
}
static napi_value crc32c_sync_js(napi_env env, napi_callback_info i) { return crc32c_sync(env, i, 0); }
static napi_value crc32c_portable_js(napi_env env, napi_callback_info i) { return crc32c_sync(env, i, 1); }

static napi_value info_js(napi_env env, napi_callback_info i) {
  (void)i;
  napi_value o, v;
  napi_create_object(env, &o);
  napi_create_string_utf8(env, "zarr-stream blosc1 (format 2, zstd)", NAPI_AUTO_LENGTH, &v);
  napi_set_named_property(env, o, "blosc", v);
  napi_create_string_utf8(env, zs_shuffle_simd(), NAPI_AUTO_LENGTH, &v);
  napi_set_named_property(env, o, "shuffleSimd", v);
  napi_create_string_utf8(env, ZSTD_versionString(), NAPI_AUTO_LENGTH, &v);
  napi_set_named_property(env, o, "zstd", v);
#ifdef ZSTREAM_ZSTD_COMPILED_IN
  napi_get_boolean(env, true, &v);
#else
  napi_get_boolean(env, false, &v);
#endif
  napi_set_named_property(env, o, "zstdCompiledIn", v);
  napi_get_boolean(env, zs_crc32c_hardware(), &v);
  napi_set_named_property(env, o, "crc32cHardware", v);
  return o;
}

static napi_value init(napi_env env, napi_value exports) {
  zs_crc32c_init();
  if (io_env_init(env) != napi_ok) {
    napi_throw_error(env, "ZS_INTERNAL", "could not set up the file I/O threads");
    return NULL;
  }
  napi_property_descriptor props[] = {
      {"bloscEncode", NULL, blosc_encode_js, NULL, NULL, NULL, napi_default, NULL},
      {"bloscDecode", NULL, blosc_decode_js, NULL, NULL, NULL, napi_default, NULL},
      {"zstdEncode", NULL, zstd_encode_js, NULL, NULL, NULL, napi_default, NULL},
      {"zstdDecode", NULL, zstd_decode_js, NULL, NULL, NULL, napi_default, NULL},
      {"crc32c", NULL, crc32c_js, NULL, NULL, NULL, napi_default, NULL},
      {"encodePacked", NULL, pack_js, NULL, NULL, NULL, napi_default, NULL},
      {"copyBoxes", NULL, copy_js, NULL, NULL, NULL, napi_default, NULL},
      {"decodeBoxes", NULL, unpack_js, NULL, NULL, NULL, napi_default, NULL},
      {"writeFileDirect", NULL, write_js, NULL, NULL, NULL, napi_default, NULL},
      {"readFileInto", NULL, read_js, NULL, NULL, NULL, napi_default, NULL},
      {"crc32cSync", NULL, crc32c_sync_js, NULL, NULL, NULL, napi_default, NULL},
      {"crc32cPortable", NULL, crc32c_portable_js, NULL, NULL, NULL, napi_default, NULL},
      {"info", NULL, info_js, NULL, NULL, NULL, napi_default, NULL},
  };
  napi_define_properties(env, exports, sizeof(props) / sizeof(props[0]), props);
  return exports;
}

NAPI_MODULE(NODE_GYP_MODULE_NAME, init)
