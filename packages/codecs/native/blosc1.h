/* Blosc 1.x frames with zstd as the inner codec: our own encoder and decoder of c-blosc's format
 * (format version 2; 16-byte header, block starts, optionally split streams, memcpyed flag). */
#ifndef ZSTREAM_BLOSC1_H
#define ZSTREAM_BLOSC1_H
#include <stddef.h>
#include <stdint.h>

#define ZB_HEADER 16
#define ZB_MAX_OVERHEAD ZB_HEADER

/* Per-thread state: zstd contexts and the block scratch, created on first use and kept. */
typedef struct zb_ctx {
  void *cctx, *dctx;
  uint8_t *tmp; /* two block-sized buffers back to back */
  size_t tmpcap;
  int stream_out; /* the decoder's output is not in cache: unshuffle with streaming stores */
} zb_ctx;

void zb_ctx_free(zb_ctx *c);

/* What the decoder found; ZB_UNSUPPORTED: a valid-looking frame whose inner codec is not zstd. */
typedef enum { ZB_OK = 0, ZB_CORRUPT = 1, ZB_NOMEM = 2, ZB_UNSUPPORTED = 3 } zb_status;

/* The block size our encoder picks at this clevel: c-blosc 1.x's for zstd, larger at clevels 5 and 7. */
size_t zb_blocksize(int clevel, size_t typesize, size_t nbytes);

/* Compresses n bytes (n <= INT32_MAX - 16) into dst, which has room for n + 16 bytes. shuffle: 0 none,
 * 1 byte, 2 bit; typesize 1..255; clevel 0..9. Returns the frame length, or 0 when out of memory. */
size_t zb_encode(zb_ctx *c, const uint8_t *src, size_t n, uint8_t *dst, int clevel, int shuffle, size_t typesize);

/* Decodes a whole frame of srclen bytes into exactly `expected` bytes at dst; never reads outside src or
 * writes outside dst. On failure msg (msglen bytes) says why. */
zb_status zb_decode(zb_ctx *c, const uint8_t *src, size_t srclen, uint8_t *dst, size_t expected, char *msg,
                    size_t msglen);

/* A box of a decoded chunk (row-major, `shape` elements of `itemsize` bytes along `rank` >= 1 dims) and
 * where it goes: count[d] elements from src0[d] of the chunk to dst0[d] of a row-major target whose byte
 * strides are dstr (rank + 1 numbers, the last the item size). The caller has checked that the box lies
 * inside both. */
typedef struct zb_box {
  int rank;
  size_t itemsize;
  const size_t *shape;
  const int32_t *src0, *dst0, *count;
  uint8_t *target;
  const size_t *dstr;
} zb_box;

/* zb_decode of a frame of box->shape's bytes (`expected`), writing only the box into the target: each
 * block is unshuffled row by row straight into place, so the chunk is never assembled and rows outside
 * the box (an edge chunk's padding) are never unshuffled. The frame is checked exactly as zb_decode
 * checks it. */
zb_status zb_decode_box(zb_ctx *c, const uint8_t *src, size_t srclen, size_t expected, const zb_box *box, char *msg,
                        size_t msglen);
#endif
