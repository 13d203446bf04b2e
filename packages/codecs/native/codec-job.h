/* One unit of work for the libuv pool: what the JS entry points (addon.c) fill in, what the codec
 * operations (codec-ops.c) run off the JS thread, and what async-jobs.c settles back on it. */
#ifndef ZS_CODEC_JOB_H
#define ZS_CODEC_JOB_H
#include <node_api.h>
#include <stddef.h>
#include <stdint.h>

#include "box-copy.h"

typedef enum { OP_BLOSC_ENC, OP_BLOSC_DEC, OP_ZSTD_ENC, OP_ZSTD_DEC, OP_CRC, OP_PACK, OP_COPY, OP_UNPACK } op_t;

typedef struct job {
  napi_async_work work;
  napi_deferred deferred;
  napi_ref input_ref;
  napi_ref output_ref; /* decoders write straight into a JS-owned (uninitialised) Buffer */
  napi_ref sizes_ref;
  op_t op;
  const uint8_t *src;
  size_t srclen;
  int clevel, shuffle, typesize, level, checksum;
  size_t blocksize, expected;
  uint8_t *dst;  /* decode: points into output_ref; encode: scratch space */
  size_t dstcap; /* encode: capacity of the scratch buffer */
  size_t dstlen;
  uint32_t crc;
  int stream_out;  /* decode: write the output around the cache (see STREAM_MIN in codec-ops.c) */
  int corrupt;     /* 1: the input does not decode (CorruptShard); 0: internal failure */
  int unsupported; /* 1: a Blosc frame whose inner codec we do not implement (the caller decodes it) */
  char msg[256];
  /* OP_PACK: n chunks (srcs[i] NULL = absent) compressed back to back into dst (JS memory) from dstlen
   * on; pack_zstd picks plain zstd over Blosc; sizes[i] receives each frame's length, 0 when absent. */
  size_t n;
  const uint8_t **srcs;
  size_t *srclens;
  uint32_t *sizes;
  int pack_zstd;
  /* OP_COPY: boxes of the row-major src (shape src_shape) into dsts (srcs above, each of shape
   * dst_shape), itemsize bytes per element; box k is boxes[k*(1+3*rank) ...]: dst index, src start[rank],
   * dst start[rank], count[rank]. Bounds were checked in JS (copyBoxes) before the job was queued. */
  int rank, itemsize;
  size_t src_shape[MAX_RANK], dst_shape[MAX_RANK];
  int32_t *boxes;
  size_t nboxes;
  /* OP_UNPACK: frames (srcs, n of them) each decode to one chunk of shape src_shape, then box k of
   * boxes (src start, dst start, count) goes into target (shape dst_shape); this job covers frames
   * [begin, end). failed: the frame that did not decode. A call's frames may be split over several jobs
   * (parts): the leader owns the promise, the references and the arrays, and the other parts point at
   * its arrays and at it (leader); the call settles when the last part completes. */
  uint8_t *target;
  size_t failed, begin, end;
  struct job *leader;        /* NULL in the leader itself */
  struct job **parts;        /* leader: every part, itself first, in frame order */
  size_t nparts, pending;    /* leader: how many parts, how many still running */
  napi_status status;        /* how the pool finished this part */
} job_t;

/* Whether the work of j failed: a message, or a frame found corrupt or of an unsupported codec. */
static inline int zs_job_failed(const job_t *j) { return j->msg[0] != 0 || j->corrupt || j->unsupported; }

/* codec-ops.c: runs j on a pool thread (napi_async_execute_callback); failures land in j->msg. */
void zs_run_job(napi_env env, void *data);
/* codec-ops.c: gives an encoder's scratch buffer back to the shared pool. */
void zs_scratch_put(job_t *j);

/* async-jobs.c: a zeroed job, or NULL after throwing. */
job_t *zs_new_job(napi_env env, op_t op);
/* async-jobs.c: frees j and everything it owns (references need env; pass NULL where none were made). */
void zs_free_job(napi_env env, job_t *j);
/* async-jobs.c: keeps the values alive (NULL: none), creates the promise and queues j on the libuv pool.
 * Throws (and frees j) when no promise could be made; after that every failure rejects the promise. */
napi_value zs_queue_job(napi_env env, job_t *j, napi_value in, napi_value out, napi_value sizes);
/* async-jobs.c: runs j on the calling thread and returns its result (out: the decoder's Buffer), or
 * throws its error; frees j either way. For a call the JS side judged too short for the pool's round trip. */
napi_value zs_run_now(napi_env env, job_t *j, napi_value out);
/* async-jobs.c: frees j and throws a TypeError (ZS_ARGS) saying what was wrong; returns NULL. */
napi_value zs_bad_args(napi_env env, job_t *j, const char *what);
#endif
