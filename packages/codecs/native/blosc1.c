/* Blosc 1.x frames with zstd blocks. The encoder makes c-blosc 1.21's choices for zstd (unsplit blocks,
 * stored blocks and a memcpyed frame when compression does not pay, and at most levels its block size and
 * zstd level 2 * clevel - 1) except at the two levels the profiles use, where larger blocks and a lower
 * zstd level give frames no larger than c-blosc's at two to three times its compression speed (see
 * zb_blocksize and packages/spec/docs/codecs.md). The decoder also reads what other c-blosc settings write
 * (split blocks, bit shuffle, format version 1, any block size). Every length read from a frame is checked
 * against the frame and the output before it is used. */
#include "blosc1.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "box-copy.h"
#include "shuffle.h"

#define FLAG_SHUFFLE 0x01
#define FLAG_MEMCPYED 0x02
#define FLAG_BITSHUFFLE 0x04
#define FLAG_RESERVED 0x08
#define FLAG_DONT_SPLIT 0x10
#define COMPCODE_ZSTD 4
#define COMPCODE_MAX 4
#define FORMAT_VERSION 2
#define ZSTD_FORMAT_VERSION 1
#define MIN_BUFFERSIZE 128 /* smaller buffers are stored, and split streams are at least this long */
#define MAX_SPLITS 16
#define MAX_BUFFERSIZE ((size_t)INT32_MAX - ZB_HEADER)

static inline uint32_t rd32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static inline void wr32(uint8_t *p, uint32_t v) {
  p[0] = (uint8_t)v;
  p[1] = (uint8_t)(v >> 8);
  p[2] = (uint8_t)(v >> 16);
  p[3] = (uint8_t)(v >> 24);
}

void zb_ctx_free(zb_ctx *c) {
  ZSTD_freeCCtx(c->cctx);
  ZSTD_freeDCtx(c->dctx);
  free(c->tmp);
  memset(c, 0, sizeof(*c));
}

/* Three block-sized scratch buffers (filter input, the bit shuffle's own scratch, and a block's plain bytes
 * when zb_decode_box cannot unshuffle straight into place). */
static uint8_t *scratch(zb_ctx *c, size_t blocksize) {
  if (c->tmpcap < 3 * blocksize) {
    free(c->tmp);
    c->tmpcap = 0;
    if (!(c->tmp = malloc(3 * blocksize))) return NULL;
    c->tmpcap = 3 * blocksize;
  }
  return c->tmp;
}

/*
 * Per Blosc clevel: the block size in quarters of 64 KiB and the zstd level. c-blosc takes 32 KiB (an L1
 * cache), doubles it for a high-ratio codec and scales it by the level, with zstd level 2 * clevel - 1
 * (the maximum, 22, at clevel 9; clevel 0 stores).
 * zstd's speed per byte changes little with the block size while its ratio grows with it, so a larger block
 * buys back the ratio a faster level gives up. clevel 5 (diagnostic): 512 KiB at zstd 6 where c-blosc has
 * 256 KiB at zstd 9; clevel 7 (checkpoint): 1 MiB at zstd 11 where c-blosc has 512 KiB at zstd 13.
 */
static const struct {
  unsigned quarters;
  int zstd;
} LEVELS[10] = {{1, 0}, {2, 1}, {4, 3}, {8, 5}, {16, 7}, {32, 6}, {32, 11}, {64, 11}, {32, 15}, {64, 22}};

size_t zb_blocksize(int clevel, size_t typesize, size_t nbytes) {
  if (nbytes < typesize) return 1;
  size_t bs = nbytes;
  if (nbytes >= 32 * 1024) bs = (size_t)16 * 1024 * LEVELS[clevel].quarters;
  if (bs > nbytes) bs = nbytes;
  if (bs > typesize) bs = bs / typesize * typesize;
  return bs;
}

static int zstd_level(int clevel) { return LEVELS[clevel].zstd; /* 22 is ZSTD_maxCLevel() */ }

static size_t store_frame(const uint8_t *src, size_t n, uint8_t *dst) {
  dst[2] |= FLAG_MEMCPYED;
  if (n) memcpy(dst + ZB_HEADER, src, n); /* an empty input may come with no buffer at all */
  wr32(dst + 12, (uint32_t)(n + ZB_HEADER));
  return n + ZB_HEADER;
}

size_t zb_encode(zb_ctx *c, const uint8_t *src, size_t n, uint8_t *dst, int clevel, int shuffle, size_t typesize) {
  size_t blocksize = zb_blocksize(clevel, typesize, n);
  size_t nblocks = n / blocksize + (n % blocksize != 0);
  size_t maxbytes = n + ZB_MAX_OVERHEAD;
  dst[0] = FORMAT_VERSION;
  dst[1] = ZSTD_FORMAT_VERSION;
  dst[2] = (uint8_t)((shuffle == 1 ? FLAG_SHUFFLE : 0) | (shuffle == 2 ? FLAG_BITSHUFFLE : 0) | FLAG_DONT_SPLIT |
                     COMPCODE_ZSTD << 5);
  dst[3] = (uint8_t)typesize;
  wr32(dst + 4, (uint32_t)n);
  wr32(dst + 8, (uint32_t)blocksize);
  if (clevel == 0 || n < MIN_BUFFERSIZE) return store_frame(src, n, dst);

  if (!c->cctx && !(c->cctx = ZSTD_createCCtx())) return 0;
  uint8_t *tmp = scratch(c, blocksize);
  if (!tmp) return 0;
  const int level = zstd_level(clevel);
  size_t pos = ZB_HEADER + 4 * nblocks;
  for (size_t j = 0; j < nblocks; j++) {
    const size_t bsize = j == nblocks - 1 && n % blocksize ? n % blocksize : blocksize;
    const uint8_t *in = src + j * blocksize;
    if (shuffle == 1 && typesize > 1) {
      zs_shuffle(typesize, bsize, in, tmp);
      in = tmp;
    } else if (shuffle == 2 && bsize >= typesize) {
      zs_bitshuffle(typesize, bsize, in, tmp, tmp + blocksize);
      in = tmp;
    }
    wr32(dst + ZB_HEADER + 4 * j, (uint32_t)pos);
    pos += 4;
    if (pos >= maxbytes) return store_frame(src, n, dst);
    /* A block gets at most its own size: anything longer is stored as it is. */
    size_t maxout = bsize < maxbytes - pos ? bsize : maxbytes - pos;
    size_t csize = ZSTD_compressCCtx(c->cctx, dst + pos, maxout, in, bsize, level);
    if (ZSTD_isError(csize) || csize == 0 || csize == bsize) {
      if (pos + bsize > maxbytes) return store_frame(src, n, dst);
      memcpy(dst + pos, in, bsize);
      csize = bsize;
    }
    wr32(dst + pos - 4, (uint32_t)csize);
    pos += csize;
  }
  wr32(dst + 12, (uint32_t)pos);
  return pos;
}

#define CORRUPT(...)                            \
  do {                                          \
    snprintf(msg, msglen, __VA_ARGS__);         \
    return ZB_CORRUPT;                          \
  } while (0)

/* Reads block j's nsplits streams from `pos` on into out (bsize bytes). */
static zb_status read_streams(zb_ctx *c, const uint8_t *src, size_t srclen, size_t pos, uint8_t *out, size_t bsize,
                              size_t nsplits, size_t j, char *msg, size_t msglen) {
  const size_t neblock = bsize / nsplits;
  if (neblock * nsplits != bsize) CORRUPT("Blosc block %zu of %zu bytes does not split into %zu streams", j, bsize, nsplits);
  for (size_t s = 0; s < nsplits; s++) {
    if (pos > srclen - 4) CORRUPT("Blosc block %zu is cut off", j);
    const uint32_t csize = rd32(src + pos);
    pos += 4;
    if (csize > INT32_MAX || csize > srclen - pos)
      CORRUPT("Blosc block %zu claims %u compressed bytes, past the frame's end", j, csize);
    if (csize == neblock) {
      memcpy(out + s * neblock, src + pos, neblock);
    } else {
      size_t r = ZSTD_decompressDCtx(c->dctx, out + s * neblock, neblock, src + pos, csize);
      if (ZSTD_isError(r)) CORRUPT("Blosc block %zu: zstd %s", j, ZSTD_getErrorName(r));
      if (r != neblock) CORRUPT("Blosc block %zu decoded to %zu bytes, expected %zu", j, r, neblock);
    }
    pos += csize;
  }
  return ZB_OK;
}

/* Calls run(arg, chunk byte offset, target pointer, bytes) for each row of the box (its last dim's run)
 * that meets the chunk's bytes [lo, hi), clipped to them. Rows ascend in chunk offset. */
static void box_rows(const zb_box *b, size_t lo, size_t hi,
                     void (*run)(void *arg, size_t off, uint8_t *to, size_t len), void *arg) {
  const int R = b->rank;
  size_t sstr[MAX_RANK + 1];
  sstr[R] = b->itemsize;
  for (int d = R - 1; d >= 0; d--) sstr[d] = sstr[d + 1] * (d + 1 < R ? b->shape[d + 1] : 1);
  for (int d = 0; d < R; d++)
    if (b->count[d] == 0) return;
  const size_t rowlen = (size_t)b->count[R - 1] * b->itemsize;
  int32_t idx[MAX_RANK] = {0};
  for (;;) {
    size_t off = 0, to = 0;
    for (int d = 0; d < R; d++) {
      off += (size_t)(b->src0[d] + idx[d]) * sstr[d];
      to += (size_t)(b->dst0[d] + idx[d]) * b->dstr[d];
    }
    if (off >= hi) return;
    if (off + rowlen > lo) {
      const size_t a = off > lo ? off : lo, z = off + rowlen < hi ? off + rowlen : hi;
      run(arg, a, b->target + to + (a - off), z - a);
    }
    int d = R - 2;
    for (; d >= 0; d--) {
      if (++idx[d] < b->count[d]) break;
      idx[d] = 0;
    }
    if (d < 0) return;
  }
}

/* A block's bytes as they are (no filter, or already unfiltered), starting at chunk offset `at`. */
struct plain_rows {
  const uint8_t *bytes;
  size_t at;
};
static void copy_run(void *arg, size_t off, uint8_t *to, size_t len) {
  const struct plain_rows *p = arg;
  memcpy(to, p->bytes + (off - p->at), len);
}

/* A byte-shuffled block of element size ts whose byte rows are `stride` bytes long, starting at `at`. */
struct shuffled_rows {
  const uint8_t *planes;
  size_t at, stride, ts;
};
static void unshuffle_run(void *arg, size_t off, uint8_t *to, size_t len) {
  const struct shuffled_rows *p = arg;
  zs_unshuffle_run(p->ts, p->stride, len / p->ts, p->planes + (off - p->at) / p->ts, to);
}

static zb_status decode_frame(zb_ctx *c, const uint8_t *src, size_t srclen, uint8_t *dst, size_t expected,
                              const zb_box *box, char *msg, size_t msglen);

/* Block `tmp` (bsize bytes from chunk offset `at`, still filtered as the flags say) into the box. A byte
 * shuffle of the box's own item size unshuffles each row's run straight into the target; other filters
 * first unfilter the block into the third scratch buffer. */
static void scatter_block(const zb_box *box, size_t at, size_t bsize, uint8_t *tmp, size_t blocksize, size_t ts,
                          int unshuffle, int unbitshuffle) {
  if (unshuffle && ts == box->itemsize && bsize % ts == 0) {
    struct shuffled_rows p = {tmp, at, bsize / ts, ts};
    box_rows(box, at, at + bsize, unshuffle_run, &p);
    return;
  }
  const uint8_t *plain = tmp;
  if (unshuffle || unbitshuffle) {
    uint8_t *flat = tmp + 2 * blocksize;
    if (unshuffle) zs_unshuffle(ts, bsize, tmp, flat);
    else zs_bitunshuffle(ts, bsize, tmp, flat, tmp + blocksize);
    plain = flat;
  }
  struct plain_rows p = {plain, at};
  box_rows(box, at, at + bsize, copy_run, &p);
}

zb_status zb_decode(zb_ctx *c, const uint8_t *src, size_t srclen, uint8_t *dst, size_t expected, char *msg,
                    size_t msglen) {
  return decode_frame(c, src, srclen, dst, expected, NULL, msg, msglen);
}

zb_status zb_decode_box(zb_ctx *c, const uint8_t *src, size_t srclen, size_t expected, const zb_box *box, char *msg,
                        size_t msglen) {
  return decode_frame(c, src, srclen, NULL, expected, box, msg, msglen);
}

/* With box NULL the frame decodes into dst; otherwise each block's rows go to the box (dst unused). */
static zb_status decode_frame(zb_ctx *c, const uint8_t *src, size_t srclen, uint8_t *dst, size_t expected,
                              const zb_box *box, char *msg, size_t msglen) {
  if (srclen < ZB_HEADER) CORRUPT("truncated Blosc frame: %zu bytes, the header alone is %d", srclen, ZB_HEADER);
  const unsigned version = src[0], flags = src[2];
  const size_t typesize = src[3], nbytes = rd32(src + 4), blocksize = rd32(src + 8), cbytes = rd32(src + 12);
  if (version < 1 || version > FORMAT_VERSION) CORRUPT("unsupported Blosc format version %u", version);
  if (flags & FLAG_RESERVED) CORRUPT("Blosc flags 0x%02x set reserved bit 3", flags);
  if ((flags & FLAG_SHUFFLE) && (flags & FLAG_BITSHUFFLE)) CORRUPT("Blosc flags 0x%02x set both shuffles", flags);
  if (typesize == 0) CORRUPT("Blosc header has typesize 0");
  if (cbytes != srclen) CORRUPT("Blosc header says cbytes=%zu but the frame has %zu bytes", cbytes, srclen);
  if (nbytes != expected) CORRUPT("Blosc header says nbytes=%zu, expected %zu", nbytes, expected);
  if (nbytes == 0) return ZB_OK;
  if (nbytes > MAX_BUFFERSIZE) CORRUPT("Blosc header says nbytes=%zu, above Blosc's limit", nbytes);
  if (flags & FLAG_MEMCPYED) {
    if (cbytes != nbytes + ZB_HEADER) CORRUPT("stored Blosc frame of %zu bytes cannot hold %zu bytes", cbytes, nbytes);
    if (box) {
      struct plain_rows p = {src + ZB_HEADER, 0};
      box_rows(box, 0, nbytes, copy_run, &p);
    } else {
      memcpy(dst, src + ZB_HEADER, nbytes);
    }
    return ZB_OK;
  }
  if (blocksize == 0 || blocksize > nbytes) CORRUPT("Blosc blocksize %zu for %zu bytes", blocksize, nbytes);
  const unsigned compcode = flags >> 5;
  if (compcode > COMPCODE_MAX) CORRUPT("Blosc flags name unknown compressor %u", compcode);
  if (compcode != COMPCODE_ZSTD) {
    snprintf(msg, msglen, "Blosc inner codec %u is not zstd", compcode);
    return ZB_UNSUPPORTED;
  }
  const size_t nblocks = nbytes / blocksize + (nbytes % blocksize != 0);
  const size_t body = ZB_HEADER + 4 * nblocks;
  if (nblocks > (srclen - ZB_HEADER) / 4) CORRUPT("Blosc frame too short for its %zu block offsets", nblocks);
  if (!c->dctx && !(c->dctx = ZSTD_createDCtx())) return ZB_NOMEM;
  uint8_t *tmp = scratch(c, blocksize);
  if (!tmp) return ZB_NOMEM;

  for (size_t j = 0; j < nblocks; j++) {
    const int leftover = j == nblocks - 1 && nbytes % blocksize;
    const size_t bsize = leftover ? nbytes % blocksize : blocksize;
    const int unshuffle = (flags & FLAG_SHUFFLE) && typesize > 1;
    const int unbitshuffle = (flags & FLAG_BITSHUFFLE) && bsize >= typesize;
    /* Streams per block, as c-blosc decides it (format 1 frames have no don't-split flag). */
    const size_t nsplits = !(flags & FLAG_DONT_SPLIT) && typesize <= MAX_SPLITS &&
                                   bsize / typesize >= MIN_BUFFERSIZE && !leftover
                               ? typesize
                               : 1;
    uint8_t *out = unshuffle || unbitshuffle || box ? tmp : dst + j * blocksize;
    const size_t start = rd32(src + ZB_HEADER + 4 * j);
    if (start < body || start >= srclen) CORRUPT("Blosc block %zu starts at %zu, outside the frame", j, start);
    zb_status st = read_streams(c, src, srclen, start, out, bsize, nsplits, j, msg, msglen);
    /* c-blosc's encoder splits any full block when told to always split, but its decoder expects one
     * stream when the block has fewer than 128 elements; such frames are read both ways here. */
    if (st == ZB_CORRUPT && nsplits == 1 && !(flags & FLAG_DONT_SPLIT) && !leftover && typesize > 1 &&
        typesize <= MAX_SPLITS && bsize % typesize == 0)
      st = read_streams(c, src, srclen, start, out, bsize, typesize, j, msg, msglen);
    if (st != ZB_OK) return st;
    if (msglen) msg[0] = 0; /* the first reading's complaint, when the second one succeeded */
    if (box) {
      scatter_block(box, j * blocksize, bsize, tmp, blocksize, typesize, unshuffle, unbitshuffle);
      continue;
    }
    if (unshuffle) (c->stream_out ? zs_unshuffle_stream : zs_unshuffle)(typesize, bsize, tmp, dst + j * blocksize);
    else if (unbitshuffle) zs_bitunshuffle(typesize, bsize, tmp, dst + j * blocksize, tmp + blocksize);
  }
  return ZB_OK;
}
