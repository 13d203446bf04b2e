/* The WebAssembly build's interface: the same Blosc and zstd code as the addon, one instance per thread
 * (each worker owns its module, so one context each suffices). Buffers live in the module's memory;
 * JS allocates them with zs_alloc and frees them with zs_free. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <zstd.h>

#include "blosc1.h"
#include "crc32c.h"
#include "shuffle.h"

#define EXPORT(name) __attribute__((export_name(name)))

static zb_ctx ctx;
static ZSTD_CCtx *cctx;
static ZSTD_DCtx *dctx;
static char msg[256];

EXPORT("zs_init") void zs_init(void) { zs_crc32c_init(); }
EXPORT("zs_alloc") void *zs_alloc(size_t n) { return malloc(n ? n : 1); }
EXPORT("zs_free") void zs_free(void *p) { free(p); }
EXPORT("zs_msg") const char *zs_msg(void) { return msg; }
EXPORT("zs_simd") const char *zs_simd(void) { return zs_shuffle_simd(); }

/* Frame length, or 0 when out of memory. dst holds n + 16 bytes. */
EXPORT("zs_blosc_encode")
size_t zs_blosc_encode(const uint8_t *src, size_t n, uint8_t *dst, int clevel, int shuffle, size_t typesize) {
  return zb_encode(&ctx, src, n, dst, clevel, shuffle, typesize);
}

/* 0 ok, 1 corrupt (zs_msg says why), 2 out of memory, 3 an inner codec other than zstd. */
EXPORT("zs_blosc_decode")
int zs_blosc_decode(const uint8_t *src, size_t srclen, uint8_t *dst, size_t expected) {
  msg[0] = 0;
  return (int)zb_decode(&ctx, src, srclen, dst, expected, msg, sizeof(msg));
}

EXPORT("zs_zstd_bound") size_t zs_zstd_bound(size_t n) { return ZSTD_compressBound(n); }

/* Frame length, or 0 on failure (zs_msg says why). */
EXPORT("zs_zstd_encode")
size_t zs_zstd_encode(const uint8_t *src, size_t n, uint8_t *dst, size_t cap, int level, int checksum) {
  msg[0] = 0;
  if (!cctx && !(cctx = ZSTD_createCCtx())) return 0;
  ZSTD_CCtx_reset(cctx, ZSTD_reset_session_and_parameters);
  size_t e = ZSTD_CCtx_setParameter(cctx, ZSTD_c_compressionLevel, level);
  if (!ZSTD_isError(e)) e = ZSTD_CCtx_setParameter(cctx, ZSTD_c_checksumFlag, checksum);
  if (!ZSTD_isError(e)) e = ZSTD_CCtx_setParameter(cctx, ZSTD_c_contentSizeFlag, 1);
  if (!ZSTD_isError(e)) e = ZSTD_compress2(cctx, dst, cap, src, n);
  if (ZSTD_isError(e)) {
    snprintf(msg, sizeof(msg), "zstd: %s", ZSTD_getErrorName(e));
    return 0;
  }
  return e;
}

/* 0 ok, 1 corrupt (zs_msg says why), 2 out of memory. The frame was checked structurally in JS. */
EXPORT("zs_zstd_decode")
int zs_zstd_decode(const uint8_t *src, size_t srclen, uint8_t *dst, size_t expected) {
  msg[0] = 0;
  if (!dctx && !(dctx = ZSTD_createDCtx())) return 2;
  size_t r = ZSTD_decompressDCtx(dctx, dst, expected, src, srclen);
  if (ZSTD_isError(r)) {
    snprintf(msg, sizeof(msg), "zstd decompression failed: %s", ZSTD_getErrorName(r));
    return 1;
  }
  if (r != expected) {
    snprintf(msg, sizeof(msg), "zstd frame decoded to %zu bytes, expected %zu", r, expected);
    return 1;
  }
  return 0;
}

EXPORT("zs_crc32c") uint32_t zs_crc32c_export(const uint8_t *p, size_t n) { return zs_crc32c(p, n); }
