/* Node-API glue over the system c-blosc and libzstd. Every (de)compression runs as async work on the
 * libuv pool so that several chunks in flight use every core; the JS side has already validated the
 * arguments, but each decoder re-checks the frame here because a corrupt frame must never yield bytes. */
#include <blosc.h>
#include <node_api.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "crc32c.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "crc32c slicing tables assume a little-endian host"
#endif

typedef enum { OP_BLOSC_ENC, OP_BLOSC_DEC, OP_ZSTD_ENC, OP_ZSTD_DEC, OP_CRC } op_t;

typedef struct {
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
  char msg[256];
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

static void blosc_encode(job_t *j) {
  size_t cap = j->srclen + BLOSC_MAX_OVERHEAD;
  if (!scratch_get(j, cap)) FAIL(j, 0, "out of memory allocating %zu bytes", cap);
  int r = blosc_compress_ctx(j->clevel, j->shuffle, (size_t)j->typesize, j->srclen, j->src, j->dst, cap, "zstd",
                             j->blocksize, 1);
  if (r <= 0) FAIL(j, 0, "blosc_compress_ctx failed (%d)", r);
  j->dstlen = (size_t)r;
}

static void blosc_decode(job_t *j) {
  static uint8_t empty;
  uint8_t *dst = j->expected ? j->dst : &empty;
  if (j->srclen < BLOSC_MIN_HEADER_LENGTH)
    FAIL(j, 1, "truncated Blosc frame: %zu bytes, the header alone is %d", j->srclen, BLOSC_MIN_HEADER_LENGTH);
  size_t nbytes = 0, cbytes = 0, blocksize = 0, typesize = 0;
  int version = 0, compversion = 0, flags = 0;
  blosc_cbuffer_versions(j->src, &version, &compversion);
  if (version < 1 || version > BLOSC_VERSION_FORMAT) FAIL(j, 1, "unsupported Blosc format version %d", version);
  if (blosc_cbuffer_validate(j->src, j->srclen, &nbytes) != 0) FAIL(j, 1, "blosc_cbuffer_validate rejected the header");
  blosc_cbuffer_sizes(j->src, &nbytes, &cbytes, &blocksize);
  blosc_cbuffer_metainfo(j->src, &typesize, &flags);
  if (cbytes != j->srclen) FAIL(j, 1, "Blosc header says cbytes=%zu but the frame has %zu bytes", cbytes, j->srclen);
  if (nbytes != j->expected) FAIL(j, 1, "Blosc header says nbytes=%zu, expected %zu", nbytes, j->expected);
  if (typesize < 1) FAIL(j, 1, "Blosc header has typesize 0");
  if ((flags & BLOSC_DOSHUFFLE) && (flags & BLOSC_DOBITSHUFFLE)) FAIL(j, 1, "Blosc flags 0x%02x set both shuffles", flags);
  int r = blosc_decompress_ctx(j->src, dst, j->expected, 1);
  if (r < 0 || (size_t)r != j->expected)
    FAIL(j, 1, "Blosc decompression failed (%d) for a frame of %zu bytes", r, j->srclen);
  j->dstlen = (size_t)r;
}

static void zstd_encode(job_t *j) {
  if (!tl_cctx && !(tl_cctx = ZSTD_createCCtx())) FAIL(j, 0, "ZSTD_createCCtx failed");
  ZSTD_CCtx_reset(tl_cctx, ZSTD_reset_session_and_parameters);
  size_t e = ZSTD_CCtx_setParameter(tl_cctx, ZSTD_c_compressionLevel, j->level);
  if (!ZSTD_isError(e)) e = ZSTD_CCtx_setParameter(tl_cctx, ZSTD_c_checksumFlag, j->checksum);
  if (!ZSTD_isError(e)) e = ZSTD_CCtx_setParameter(tl_cctx, ZSTD_c_contentSizeFlag, 1);
  if (ZSTD_isError(e)) FAIL(j, 0, "zstd parameter rejected: %s", ZSTD_getErrorName(e));
  size_t cap = ZSTD_compressBound(j->srclen);
  if (!scratch_get(j, cap ? cap : 1)) FAIL(j, 0, "out of memory allocating %zu bytes", cap);
  size_t r = ZSTD_compress2(tl_cctx, j->dst, cap, j->src, j->srclen);
  if (ZSTD_isError(r)) FAIL(j, 0, "ZSTD_compress2 failed: %s", ZSTD_getErrorName(r));
  j->dstlen = r;
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
  }
}

static napi_value make_error(napi_env env, const job_t *j, const char *fallback) {
  napi_value code, msg, err;
  napi_create_string_utf8(env, j->corrupt ? "ZS_CORRUPT" : "ZS_INTERNAL", NAPI_AUTO_LENGTH, &code);
  napi_create_string_utf8(env, j->msg[0] ? j->msg : fallback, NAPI_AUTO_LENGTH, &msg);
  napi_create_error(env, code, msg, &err);
  return err;
}

static void complete(napi_env env, napi_status status, void *data) {
  job_t *j = data;
  napi_value result = NULL;
  int ok = status == napi_ok && j->msg[0] == 0;
  if (ok && j->op == OP_CRC) {
    napi_create_uint32(env, j->crc, &result);
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
  napi_delete_async_work(env, j->work);
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

static napi_value start(napi_env env, napi_callback_info info, op_t op) {
  size_t argc = 5;
  napi_value argv[5], promise, name;
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
  }
  if (!ok) {
    if (j->output_ref) napi_delete_reference(env, j->output_ref);
    free(j);
    napi_throw_type_error(env, "ZS_ARGS", "bad arguments to the codecs addon");
    return NULL;
  }
  napi_create_reference(env, argv[0], 1, &j->input_ref);
  napi_create_promise(env, &j->deferred, &promise);
  napi_create_string_utf8(env, "zstream-codecs", NAPI_AUTO_LENGTH, &name);
  napi_create_async_work(env, NULL, name, execute, complete, j, &j->work);
  napi_queue_async_work(env, j->work);
  return promise;
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
  napi_create_string_utf8(env, blosc_get_version_string(), NAPI_AUTO_LENGTH, &v);
  napi_set_named_property(env, o, "blosc", v);
  napi_create_string_utf8(env, ZSTD_versionString(), NAPI_AUTO_LENGTH, &v);
  napi_set_named_property(env, o, "zstd", v);
  napi_get_boolean(env, zs_crc32c_hardware(), &v);
  napi_set_named_property(env, o, "crc32cHardware", v);
  return o;
}

static napi_value init(napi_env env, napi_value exports) {
  zs_crc32c_init();
  napi_property_descriptor props[] = {
      {"bloscEncode", NULL, blosc_encode_js, NULL, NULL, NULL, napi_default, NULL},
      {"bloscDecode", NULL, blosc_decode_js, NULL, NULL, NULL, napi_default, NULL},
      {"zstdEncode", NULL, zstd_encode_js, NULL, NULL, NULL, napi_default, NULL},
      {"zstdDecode", NULL, zstd_decode_js, NULL, NULL, NULL, napi_default, NULL},
      {"crc32c", NULL, crc32c_js, NULL, NULL, NULL, napi_default, NULL},
      {"crc32cSync", NULL, crc32c_sync_js, NULL, NULL, NULL, napi_default, NULL},
      {"crc32cPortable", NULL, crc32c_portable_js, NULL, NULL, NULL, napi_default, NULL},
      {"info", NULL, info_js, NULL, NULL, NULL, napi_default, NULL},
  };
  napi_define_properties(env, exports, sizeof(props) / sizeof(props[0]), props);
  return exports;
}

NAPI_MODULE(NODE_GYP_MODULE_NAME, init)
