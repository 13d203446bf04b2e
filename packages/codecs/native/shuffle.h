/* Blosc's byte shuffle and bit shuffle filters (c-blosc 1.x semantics, frame-compatible). */
#ifndef ZSTREAM_SHUFFLE_H
#define ZSTREAM_SHUFFLE_H
#include <stddef.h>
#include <stdint.h>

/* Byte j of element i goes to dst[j * (n / ts) + i]; the n % ts trailing bytes are copied as they are. */
void zs_shuffle(size_t ts, size_t n, const uint8_t *src, uint8_t *dst);
void zs_unshuffle(size_t ts, size_t n, const uint8_t *src, uint8_t *dst);
/* zs_unshuffle writing around the cache (SSE2 streaming stores, when dst is 16-byte aligned). */
void zs_unshuffle_stream(size_t ts, size_t n, const uint8_t *src, uint8_t *dst);

/* `count` whole elements of a byte-shuffled block whose byte rows are `stride` bytes apart: byte j of element
 * i comes from src[j * stride + i]. Unshuffles a run of a block straight into its place in a strided
 * destination (a row of a chunk's box in the reader's target). */
void zs_unshuffle_run(size_t ts, size_t stride, size_t count, const uint8_t *src, uint8_t *dst);

/* Bit k of byte j of element i goes to bit i of row 8j + k (rows of n / ts / 8 bytes, bits LSB first).
 * As in c-blosc, a block whose element count is not a multiple of 8 is copied unfiltered, and trailing
 * bytes after the last whole element are copied. tmp holds n bytes. */
void zs_bitshuffle(size_t ts, size_t n, const uint8_t *src, uint8_t *dst, uint8_t *tmp);
void zs_bitunshuffle(size_t ts, size_t n, const uint8_t *src, uint8_t *dst, uint8_t *tmp);

/* The scalar versions, for tests that compare them with the SIMD paths. */
void zs_shuffle_scalar(size_t ts, size_t n, const uint8_t *src, uint8_t *dst);
void zs_unshuffle_scalar(size_t ts, size_t n, const uint8_t *src, uint8_t *dst);
void zs_unshuffle_run_scalar(size_t ts, size_t stride, size_t count, const uint8_t *src, uint8_t *dst);
void zs_bitshuffle_scalar(size_t ts, size_t n, const uint8_t *src, uint8_t *dst, uint8_t *tmp);
void zs_bitunshuffle_scalar(size_t ts, size_t n, const uint8_t *src, uint8_t *dst, uint8_t *tmp);

/* "sse2", "wasm-simd128" or "scalar": what the build's fast paths use. */
const char *zs_shuffle_simd(void);
#endif
