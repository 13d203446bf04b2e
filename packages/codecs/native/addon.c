/* Node-API entry points of the codecs addon: each checks its arguments on the JS thread, fills a job
 * (codec-job.h) and queues it on the libuv pool (async-jobs.c), so that several chunks in flight use
 * every core; the work itself is codec-ops.c. The JS side has validated the arguments already; these
 * checks only keep a wrong call from reaching C with bad pointers. */
#include <node_api.h>
#include <stdbool.h>
#include <stdlib.h>
#include <zstd.h>

#include "codec-job.h"
#include "crc32c.h"
#include "napi-args.h"
#include "result-pool.h"
#include "shuffle.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "crc32c slicing tables assume a little-endian host"
#endif

/* The call's first `want` arguments into argv (undefined where absent) and a fresh job; NULL after
 * throwing. */
static job_t *begin(napi_env env, napi_callback_info info, size_t want, napi_value *argv, op_t op) {
  size_t argc = want;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok) {
    napi_throw_error(env, "ZS_INTERNAL", "could not read the call's arguments");
    return NULL;
  }
  return zs_new_job(env, op);
}

/* A 0/1 argument that may be left out (undefined: 0). */
static int optional_flag(napi_env env, napi_value v, int *out) {
  napi_valuetype t;
  if (napi_typeof(env, v, &t) != napi_ok) return 0;
  return t == napi_undefined ? (*out = 0, 1) : zs_get_int(env, v, out) && (*out == 0 || *out == 1);
}

/* A Buffer of j->expected bytes for a decoder to fill (result-pool.c). */
static int output_buffer(napi_env env, job_t *j, napi_value *buf) {
  void *p = NULL;
  if (!zs_result_buffer(env, j->expected, &p, buf)) return 0;
  j->dst = p;
  return 1;
}

/* bloscEncode(data, clevel, shuffle, typesize, blocksize), bloscDecode(data, expectedLength, now),
 * zstdEncode(data, level, checksum), zstdDecode(data, expectedLength, now), crc32c(data): one chunk each.
 * A decoder called with now = 1 runs on the calling thread and returns its result (or throws) instead of
 * a promise. */
static napi_value start(napi_env env, napi_callback_info info, op_t op) {
  napi_value argv[5], out = NULL;
  job_t *j = begin(env, info, 5, argv, op);
  if (!j) return NULL;
  int ok = zs_get_bytes(env, argv[0], &j->src, &j->srclen);
  int bs = 0, exp = 0, now = 0;
  switch (op) {
    case OP_BLOSC_ENC:
      ok = ok && zs_get_int(env, argv[1], &j->clevel) && zs_get_int(env, argv[2], &j->shuffle) &&
           zs_get_int(env, argv[3], &j->typesize) && zs_get_int(env, argv[4], &bs) && bs >= 0;
      j->blocksize = (size_t)bs;
      break;
    case OP_ZSTD_ENC:
      ok = ok && zs_get_int(env, argv[1], &j->level) && zs_get_int(env, argv[2], &j->checksum);
      break;
    case OP_BLOSC_DEC:
    case OP_ZSTD_DEC:
      ok = ok && zs_get_int(env, argv[1], &exp) && exp >= 0 && optional_flag(env, argv[2], &now);
      j->expected = (size_t)exp;
      ok = ok && output_buffer(env, j, &out);
      break;
    case OP_CRC:
      break;
    default: /* the shard-wide jobs have entry points of their own */
      ok = 0;
  }
  if (!ok) return zs_bad_args(env, j, "bad arguments to the codecs addon");
  return now ? zs_run_now(env, j, out) : zs_queue_job(env, j, argv[0], out, NULL);
}

/* encodePacked(chunks: (Uint8Array|undefined)[], zstd: 0|1, p1, p2, p3, p4, out: Uint8Array, offset,
 * sizes: Uint32Array): p1..p4 are clevel, shuffle, typesize, blocksize for Blosc and level, checksum for
 * zstd. Resolves with the end offset of the last frame. The JS caller sizes `out` and keeps every chunk
 * and `out` untouched until the promise settles; the references only keep them alive. */
static napi_value pack_js(napi_env env, napi_callback_info info) {
  napi_value argv[9];
  job_t *j = begin(env, info, 9, argv, OP_PACK);
  if (!j) return NULL;
  int offset = 0, p[4] = {0, 0, 0, 0};
  const uint8_t *out = NULL;
  size_t outlen = 0, nsizes = 0, off = 0;
  napi_typedarray_type t;
  void *sizes = NULL;
  napi_value ab;
  int ok = zs_get_byte_list(env, argv[0], 1, j) && zs_get_int(env, argv[1], &j->pack_zstd) &&
           zs_get_int(env, argv[2], &p[0]) && zs_get_int(env, argv[3], &p[1]) && zs_get_int(env, argv[4], &p[2]) &&
           zs_get_int(env, argv[5], &p[3]) && zs_get_bytes(env, argv[6], &out, &outlen) &&
           zs_get_int(env, argv[7], &offset) && offset >= 0 && (size_t)offset <= outlen &&
           napi_get_typedarray_info(env, argv[8], &t, &nsizes, &sizes, &ab, &off) == napi_ok &&
           t == napi_uint32_array && nsizes == j->n;
  if (!ok) return zs_bad_args(env, j, "bad arguments to encodePacked");
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
  return zs_queue_job(env, j, argv[0], argv[6], argv[8]);
}

/* copyBoxes(src: Uint8Array, srcShape: Int32Array, dsts: Uint8Array[], dstShape: Int32Array, itemsize,
 * boxes: Int32Array): see copy_boxes in codec-ops.c. Resolves with undefined. */
static napi_value copy_js(napi_env env, napi_callback_info info) {
  napi_value argv[6];
  job_t *j = begin(env, info, 6, argv, OP_COPY);
  if (!j) return NULL;
  int dst_rank = -1;
  int ok = zs_get_bytes(env, argv[0], &j->src, &j->srclen) && zs_get_shape(env, argv[1], j->src_shape, &j->rank) &&
           zs_get_byte_list(env, argv[2], 0, j) && zs_get_shape(env, argv[3], j->dst_shape, &dst_rank) &&
           dst_rank == j->rank && zs_get_int(env, argv[4], &j->itemsize) && j->itemsize > 0 &&
           zs_get_boxes(env, argv[5], (size_t)(1 + 3 * j->rank), j);
  for (size_t b = 0; ok && b < j->nboxes; b++) {
    int32_t dst = j->boxes[b * (size_t)(1 + 3 * j->rank)];
    ok = dst >= 0 && (size_t)dst < j->n;
  }
  if (!ok) return zs_bad_args(env, j, "bad arguments to copyBoxes");
  return zs_queue_job(env, j, argv[0], argv[2], NULL);
}

/* decodeBoxes(frames: Uint8Array[], zstd: 0|1, chunkShape: Int32Array, itemsize, target: Uint8Array,
 * targetShape: Int32Array, boxes: Int32Array, now): 3*rank numbers per frame (see unpack_decode). Geometry
 * was checked in JS (decodeBoxes) before the job was queued. now = 1: on the calling thread, as start(). */
static napi_value unpack_js(napi_env env, napi_callback_info info) {
  napi_value argv[8];
  job_t *j = begin(env, info, 8, argv, OP_UNPACK);
  if (!j) return NULL;
  int dst_rank = -1, now = 0;
  const uint8_t *target = NULL;
  size_t tlen = 0;
  int ok = zs_get_byte_list(env, argv[0], 0, j) && zs_get_int(env, argv[1], &j->pack_zstd) &&
           zs_get_shape(env, argv[2], j->src_shape, &j->rank) && zs_get_int(env, argv[3], &j->itemsize) &&
           j->itemsize > 0 && zs_get_bytes(env, argv[4], &target, &tlen) &&
           zs_get_shape(env, argv[5], j->dst_shape, &dst_rank) && dst_rank == j->rank &&
           zs_get_boxes(env, argv[6], (size_t)(3 * j->rank), j) && (j->rank == 0 || j->nboxes == j->n) &&
           optional_flag(env, argv[7], &now);
  if (!ok) return zs_bad_args(env, j, "bad arguments to decodeBoxes");
  j->target = (uint8_t *)target;
  return now ? zs_run_now(env, j, NULL) : zs_queue_job(env, j, argv[0], argv[4], NULL);
}

static napi_value blosc_encode_js(napi_env env, napi_callback_info i) { return start(env, i, OP_BLOSC_ENC); }
static napi_value blosc_decode_js(napi_env env, napi_callback_info i) { return start(env, i, OP_BLOSC_DEC); }
static napi_value zstd_encode_js(napi_env env, napi_callback_info i) { return start(env, i, OP_ZSTD_ENC); }
static napi_value zstd_decode_js(napi_env env, napi_callback_info i) { return start(env, i, OP_ZSTD_DEC); }
static napi_value crc32c_js(napi_env env, napi_callback_info i) { return start(env, i, OP_CRC); }

/* crc32cSync(data) / crc32cPortable(data): on the calling thread, for inputs too small for the pool. */
static napi_value crc32c_sync(napi_env env, napi_callback_info info, int portable) {
  size_t argc = 1;
  napi_value argv[1], out;
  const uint8_t *p;
  size_t n;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 1 ||
      !zs_get_bytes(env, argv[0], &p, &n)) {
    napi_throw_type_error(env, "ZS_ARGS", "crc32c expects a Uint8Array");
    return NULL;
  }
  if (napi_create_uint32(env, portable ? zs_crc32c_portable(p, n) : zs_crc32c(p, n), &out) != napi_ok) return NULL;
  return out;
}
static napi_value crc32c_sync_js(napi_env env, napi_callback_info i) { return crc32c_sync(env, i, 0); }
static napi_value crc32c_portable_js(napi_env env, napi_callback_info i) { return crc32c_sync(env, i, 1); }

static napi_status set_string(napi_env env, napi_value o, const char *key, const char *value) {
  napi_value v;
  napi_status st = napi_create_string_utf8(env, value, NAPI_AUTO_LENGTH, &v);
  return st == napi_ok ? napi_set_named_property(env, o, key, v) : st;
}

static napi_status set_bool(napi_env env, napi_value o, const char *key, bool value) {
  napi_value v;
  napi_status st = napi_get_boolean(env, value, &v);
  return st == napi_ok ? napi_set_named_property(env, o, key, v) : st;
}

#ifdef ZSTREAM_ZSTD_COMPILED_IN
#define ZSTD_COMPILED_IN true
#else
#define ZSTD_COMPILED_IN false
#endif

/* info(): what this build is (Blosc format, zstd version and origin, SIMD paths). */
static napi_value info_js(napi_env env, napi_callback_info i) {
  (void)i;
  napi_value o;
  if (napi_create_object(env, &o) != napi_ok ||
      set_string(env, o, "blosc", "zarr-stream blosc1 (format 2, zstd)") != napi_ok ||
      set_string(env, o, "shuffleSimd", zs_shuffle_simd()) != napi_ok ||
      set_string(env, o, "zstd", ZSTD_versionString()) != napi_ok ||
      set_bool(env, o, "zstdCompiledIn", ZSTD_COMPILED_IN) != napi_ok ||
      set_bool(env, o, "crc32cHardware", zs_crc32c_hardware()) != napi_ok)
    return NULL;
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
      {"encodePacked", NULL, pack_js, NULL, NULL, NULL, napi_default, NULL},
      {"copyBoxes", NULL, copy_js, NULL, NULL, NULL, napi_default, NULL},
      {"decodeBoxes", NULL, unpack_js, NULL, NULL, NULL, napi_default, NULL},
      {"crc32cSync", NULL, crc32c_sync_js, NULL, NULL, NULL, napi_default, NULL},
      {"crc32cPortable", NULL, crc32c_portable_js, NULL, NULL, NULL, napi_default, NULL},
      {"info", NULL, info_js, NULL, NULL, NULL, napi_default, NULL},
  };
  if (napi_define_properties(env, exports, sizeof(props) / sizeof(props[0]), props) != napi_ok) {
    napi_throw_error(env, "ZS_INTERNAL", "could not define the codec functions");
    return NULL;
  }
  return exports;
}

NAPI_MODULE(NODE_GYP_MODULE_NAME, init)
