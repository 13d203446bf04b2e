/* Byte shuffle and bit shuffle. The fast paths use 16-byte vectors through the compiler's generic vector
 * extensions, so the same source becomes SSE2 on x86-64 and SIMD128 in the wasm build; other targets and
 * odd type sizes take the scalar loops, which define the result. */
#include "shuffle.h"

#include <string.h>

#if defined(__wasm_simd128__)
#include <wasm_simd128.h>
#define ZS_SIMD "wasm-simd128"
#elif defined(__SSE2__)
#include <emmintrin.h>
#define ZS_SIMD "sse2"
#endif

const char *zs_shuffle_simd(void) {
#ifdef ZS_SIMD
  return ZS_SIMD;
#else
  return "scalar";
#endif
}

void zs_shuffle_scalar(size_t ts, size_t n, const uint8_t *src, uint8_t *dst) {
  size_t elems = n / ts;
  for (size_t j = 0; j < ts; j++)
    for (size_t i = 0; i < elems; i++) dst[j * elems + i] = src[i * ts + j];
  memcpy(dst + elems * ts, src + elems * ts, n - elems * ts);
}

void zs_unshuffle_scalar(size_t ts, size_t n, const uint8_t *src, uint8_t *dst) {
  size_t elems = n / ts;
  for (size_t i = 0; i < elems; i++)
    for (size_t j = 0; j < ts; j++) dst[i * ts + j] = src[j * elems + i];
  memcpy(dst + elems * ts, src + elems * ts, n - elems * ts);
}

void zs_unshuffle_run_scalar(size_t ts, size_t stride, size_t count, const uint8_t *src, uint8_t *dst) {
  for (size_t i = 0; i < count; i++)
    for (size_t j = 0; j < ts; j++) dst[i * ts + j] = src[j * stride + i];
}

/* Transposes the 8x8 bit matrix held in x (byte k = row k, bit m = column m). */
static inline uint64_t transpose8x8(uint64_t x) {
  uint64_t t;
  t = (x ^ (x >> 7)) & 0x00AA00AA00AA00AAULL;
  x ^= t ^ (t << 7);
  t = (x ^ (x >> 14)) & 0x0000CCCC0000CCCCULL;
  x ^= t ^ (t << 14);
  t = (x ^ (x >> 28)) & 0x00000000F0F0F0F0ULL;
  x ^= t ^ (t << 28);
  return x;
}

static inline uint64_t load64(const uint8_t *p) {
  uint64_t x;
  memcpy(&x, p, 8);
  return x;
}
static inline void store64(uint8_t *p, uint64_t x) { memcpy(p, &x, 8); }

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the bit transposes assume a little-endian host"
#endif

/* Row r of a bit-shuffled block of `elems` elements starts at r * elems / 8. Elements from `from` on. */
static void bitrows_from_bytes(size_t ts, size_t elems, size_t from, const uint8_t *bytes, uint8_t *dst) {
  size_t rowlen = elems / 8;
  for (size_t b = 0; b < ts; b++) {
    for (size_t i = from; i < elems; i += 8) {
      uint64_t x = transpose8x8(load64(bytes + b * elems + i));
      for (size_t k = 0; k < 8; k++) dst[(8 * b + k) * rowlen + i / 8] = (uint8_t)(x >> (8 * k));
    }
  }
}

static void bytes_from_bitrows(size_t ts, size_t elems, const uint8_t *src, uint8_t *bytes) {
  size_t rowlen = elems / 8;
  for (size_t b = 0; b < ts; b++) {
    for (size_t q = 0; q < rowlen; q++) {
      uint64_t x = 0;
      for (size_t k = 0; k < 8; k++) x |= (uint64_t)src[(8 * b + k) * rowlen + q] << (8 * k);
      store64(bytes + b * elems + 8 * q, transpose8x8(x));
    }
  }
}

void zs_bitshuffle_scalar(size_t ts, size_t n, const uint8_t *src, uint8_t *dst, uint8_t *tmp) {
  size_t elems = n / ts;
  if (elems % 8) {
    memcpy(dst, src, n);
    return;
  }
  zs_shuffle_scalar(ts, elems * ts, src, tmp);
  bitrows_from_bytes(ts, elems, 0, tmp, dst);
  memcpy(dst + elems * ts, src + elems * ts, n - elems * ts);
}

typedef void byte_filter(size_t ts, size_t n, const uint8_t *src, uint8_t *dst);

/* Bit rows back to byte rows, then `unshuffle` (scalar or SIMD) back to elements. */
static inline __attribute__((always_inline)) void bitunshuffle_with(byte_filter *unshuffle, size_t ts, size_t n,
                                                                    const uint8_t *src, uint8_t *dst, uint8_t *tmp) {
  size_t elems = n / ts;
  if (elems % 8) {
    memcpy(dst, src, n);
    return;
  }
  bytes_from_bitrows(ts, elems, src, tmp);
  unshuffle(ts, elems * ts, tmp, dst);
  memcpy(dst + elems * ts, src + elems * ts, n - elems * ts);
}

void zs_bitunshuffle_scalar(size_t ts, size_t n, const uint8_t *src, uint8_t *dst, uint8_t *tmp) {
  bitunshuffle_with(zs_unshuffle_scalar, ts, n, src, dst, tmp);
}

#ifdef ZS_SIMD
typedef uint8_t v16 __attribute__((vector_size(16)));

static inline v16 vload(const uint8_t *p) {
  v16 v;
  memcpy(&v, p, 16);
  return v;
}
static inline void vstore(uint8_t *p, v16 v) { memcpy(p, &v, 16); }

#define LO8(x, y) __builtin_shufflevector(x, y, 0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23)
#define HI8(x, y) __builtin_shufflevector(x, y, 8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31)

/*
 * A tile of 16 elements of T bytes is T vectors; shuffling it is a transpose of the tile's address bits.
 * One round of byte interleaves (LO8/HI8 of vectors i and i + 2^s) moves vector-index bit s to the bottom
 * of the in-vector index and the in-vector top bit into its place. Four rounds that bring in the element
 * bits e3, e2, e1, e0 leave each vector holding one byte position of all 16 elements; ROUNDS_T lists the
 * vector bit used by each round and ROW_T which byte row each final vector is (worked out by following
 * the bit labels through the rounds).
 */
/* Full unrolling turns the tables into constants, so the tile stays in registers. */
#if defined(__clang__)
#define UNROLL _Pragma("unroll")
#else
#define UNROLL _Pragma("GCC unroll 16")
#endif

static const int ROUNDS_2[4] = {0, 0, 0, 0}, ROW_2[2] = {0, 1};
static const int ROUNDS_4[4] = {1, 0, 1, 0}, ROW_4[4] = {0, 1, 2, 3};
static const int ROUNDS_8[4] = {2, 1, 0, 2}, ROW_8[8] = {0, 2, 4, 6, 1, 3, 5, 7};
static const int ROUNDS_16[4] = {3, 2, 1, 0}, ROW_16[16] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};

static inline __attribute__((always_inline)) void shuffle_tiles(const int T, const int *rounds, const int *row,
                                                               size_t elems, const uint8_t *src, uint8_t *dst) {
  for (size_t t = 0; t + 16 <= elems; t += 16) {
    v16 v[16];
    UNROLL for (int i = 0; i < T; i++) v[i] = vload(src + t * T + 16 * i);
    UNROLL for (int r = 0; r < 4; r++) {
      const int bit = 1 << rounds[r];
      UNROLL for (int i = 0; i < T; i++) {
        if (i & bit) continue;
        v16 lo = LO8(v[i], v[i | bit]), hi = HI8(v[i], v[i | bit]);
        v[i] = lo;
        v[i | bit] = hi;
      }
    }
    UNROLL for (int i = 0; i < T; i++) vstore(dst + row[i] * elems + t, v[i]);
  }
}

typedef uint16_t v8x16 __attribute__((vector_size(16)));
typedef uint32_t v4x32 __attribute__((vector_size(16)));
typedef uint64_t v2x64 __attribute__((vector_size(16)));

/* Interleaves the low (hi = 0) or high halves of x and y in units of 2^w bytes. */
static inline __attribute__((always_inline)) v16 unpack(int w, int hi, v16 x, v16 y) {
  switch (w * 2 + hi) {
    case 0: return LO8(x, y);
    case 1: return HI8(x, y);
    case 2: return (v16)__builtin_shufflevector((v8x16)x, (v8x16)y, 0, 8, 1, 9, 2, 10, 3, 11);
    case 3: return (v16)__builtin_shufflevector((v8x16)x, (v8x16)y, 4, 12, 5, 13, 6, 14, 7, 15);
    case 4: return (v16)__builtin_shufflevector((v4x32)x, (v4x32)y, 0, 4, 1, 5);
    case 5: return (v16)__builtin_shufflevector((v4x32)x, (v4x32)y, 2, 6, 3, 7);
    case 6: return (v16)__builtin_shufflevector((v2x64)x, (v2x64)y, 0, 2);
    default: return (v16)__builtin_shufflevector((v2x64)x, (v2x64)y, 1, 3);
  }
}

/*
 * Unshuffling a tile loads its T byte rows (16 elements each). Interleaving in units of 2^r bytes with
 * the vector whose index differs in bit r inserts byte bit r at in-vector position r; after log2(T)
 * rounds each vector holds 16 / T whole elements, and vector i holds element group bitreverse(i).
 */
static inline __attribute__((always_inline)) void unshuffle_tiles(const int T, const int L, size_t elems,
                                                                 size_t stride, const uint8_t *src, uint8_t *dst,
                                                                 const int nt) {
  (void)nt; /* streaming stores exist on SSE2 only */
  for (size_t t = 0; t + 16 <= elems; t += 16) {
    v16 v[16];
    UNROLL for (int i = 0; i < T; i++) v[i] = vload(src + i * stride + t);
    UNROLL for (int r = 0; r < L; r++) {
      const int bit = 1 << r;
      UNROLL for (int i = 0; i < T; i++) {
        if (i & bit) continue;
        v16 lo = unpack(r, 0, v[i], v[i | bit]), hi = unpack(r, 1, v[i], v[i | bit]);
        v[i] = lo;
        v[i | bit] = hi;
      }
    }
    UNROLL for (int i = 0; i < T; i++) {
      int g = 0;
      for (int m = 0; m < L; m++) g |= ((i >> m) & 1) << (L - 1 - m);
#if defined(__SSE2__) && !defined(__wasm_simd128__)
      if (nt) _mm_stream_si128((__m128i *)(dst + t * T + 16 * g), (__m128i)v[i]);
      else
#endif
        vstore(dst + t * T + 16 * g, v[i]);
    }
  }
}

/* Elements before the last whole tile were done by the vector loop; the rest are scalar. */
static void shuffle_tail(size_t ts, size_t elems, size_t from, const uint8_t *src, uint8_t *dst) {
  for (size_t j = 0; j < ts; j++)
    for (size_t i = from; i < elems; i++) dst[j * elems + i] = src[i * ts + j];
}
static void unshuffle_tail(size_t ts, size_t elems, size_t stride, size_t from, const uint8_t *src, uint8_t *dst) {
  for (size_t i = from; i < elems; i++)
    for (size_t j = 0; j < ts; j++) dst[i * ts + j] = src[j * stride + i];
}

void zs_shuffle(size_t ts, size_t n, const uint8_t *src, uint8_t *dst) {
  size_t elems = n / ts;
  switch (ts) {
    case 2: shuffle_tiles(2, ROUNDS_2, ROW_2, elems, src, dst); break;
    case 4: shuffle_tiles(4, ROUNDS_4, ROW_4, elems, src, dst); break;
    case 8: shuffle_tiles(8, ROUNDS_8, ROW_8, elems, src, dst); break;
    case 16: shuffle_tiles(16, ROUNDS_16, ROW_16, elems, src, dst); break;
    default: zs_shuffle_scalar(ts, n, src, dst); return;
  }
  shuffle_tail(ts, elems, elems / 16 * 16, src, dst);
  memcpy(dst + elems * ts, src + elems * ts, n - elems * ts);
}

static inline __attribute__((always_inline)) void unshuffle_with(size_t ts, size_t n, const uint8_t *src,
                                                                 uint8_t *dst, const int nt) {
  size_t elems = n / ts;
  switch (ts) {
    case 2: unshuffle_tiles(2, 1, elems, elems, src, dst, nt); break;
    case 4: unshuffle_tiles(4, 2, elems, elems, src, dst, nt); break;
    case 8: unshuffle_tiles(8, 3, elems, elems, src, dst, nt); break;
    case 16: unshuffle_tiles(16, 4, elems, elems, src, dst, nt); break;
    default: zs_unshuffle_scalar(ts, n, src, dst); return;
  }
  unshuffle_tail(ts, elems, elems, elems / 16 * 16, src, dst);
  memcpy(dst + elems * ts, src + elems * ts, n - elems * ts);
}

void zs_unshuffle(size_t ts, size_t n, const uint8_t *src, uint8_t *dst) { unshuffle_with(ts, n, src, dst, 0); }

/* Ordinary stores: rows of a box start anywhere in a cache line, and streaming stores of partial lines
 * made the scatter 2.4 times slower in the read-all profile (packages/spec/docs/codecs.md). */
void zs_unshuffle_run(size_t ts, size_t stride, size_t count, const uint8_t *src, uint8_t *dst) {
  switch (ts) {
    case 2: unshuffle_tiles(2, 1, count, stride, src, dst, 0); break;
    case 4: unshuffle_tiles(4, 2, count, stride, src, dst, 0); break;
    case 8: unshuffle_tiles(8, 3, count, stride, src, dst, 0); break;
    case 16: unshuffle_tiles(16, 4, count, stride, src, dst, 0); break;
    default: zs_unshuffle_run_scalar(ts, stride, count, src, dst); return;
  }
  unshuffle_tail(ts, count, stride, count / 16 * 16, src, dst);
}

/* Streaming stores skip reading the destination's lines into the cache before overwriting them: half the
 * memory traffic when dst is not in cache and is not read again soon (a fresh result, a large target). */
void zs_unshuffle_stream(size_t ts, size_t n, const uint8_t *src, uint8_t *dst) {
#if defined(__SSE2__) && !defined(__wasm_simd128__)
  if (((uintptr_t)dst & 15) == 0) {
    unshuffle_with(ts, n, src, dst, 1);
    _mm_sfence();
    return;
  }
#endif
  unshuffle_with(ts, n, src, dst, 0);
}

/* The top bit of each of the 16 bytes, byte i as bit i. */
static inline unsigned top_bits(v16 v) {
#if defined(__wasm_simd128__)
  return (unsigned)wasm_i8x16_bitmask((v128_t)v);
#else
  return (unsigned)_mm_movemask_epi8((__m128i)v);
#endif
}

void zs_bitshuffle(size_t ts, size_t n, const uint8_t *src, uint8_t *dst, uint8_t *tmp) {
  size_t elems = n / ts, rowlen = elems / 8;
  if (elems % 8) {
    memcpy(dst, src, n);
    return;
  }
  zs_shuffle(ts, elems * ts, src, tmp);
  /* Bit k of 16 bytes of one byte row becomes two bytes of bit row 8b + k: shift bit k to the top. */
  for (size_t b = 0; b < ts; b++) {
    const uint8_t *bytes = tmp + b * elems;
    for (size_t i = 0; i + 16 <= elems; i += 16) {
      v16 v = vload(bytes + i);
      for (int k = 7; k >= 0; k--) {
        unsigned m = top_bits(v);
        uint8_t *out = dst + (8 * b + (size_t)k) * rowlen + i / 8;
        out[0] = (uint8_t)m;
        out[1] = (uint8_t)(m >> 8);
        v = v + v;
      }
    }
  }
  if (elems % 16) {
    /* One group of 8 elements remains per byte row. */
    for (size_t b = 0; b < ts; b++) {
      uint64_t x = transpose8x8(load64(tmp + b * elems + elems - 8));
      for (size_t k = 0; k < 8; k++) dst[(8 * b + k) * rowlen + rowlen - 1] = (uint8_t)(x >> (8 * k));
    }
  }
  memcpy(dst + elems * ts, src + elems * ts, n - elems * ts);
}

void zs_bitunshuffle(size_t ts, size_t n, const uint8_t *src, uint8_t *dst, uint8_t *tmp) {
  bitunshuffle_with(zs_unshuffle, ts, n, src, dst, tmp);
}
#else
void zs_shuffle(size_t ts, size_t n, const uint8_t *src, uint8_t *dst) { zs_shuffle_scalar(ts, n, src, dst); }
void zs_unshuffle(size_t ts, size_t n, const uint8_t *src, uint8_t *dst) { zs_unshuffle_scalar(ts, n, src, dst); }
void zs_unshuffle_stream(size_t ts, size_t n, const uint8_t *src, uint8_t *dst) {
  zs_unshuffle_scalar(ts, n, src, dst);
}
void zs_unshuffle_run(size_t ts, size_t stride, size_t count, const uint8_t *src, uint8_t *dst) {
  zs_unshuffle_run_scalar(ts, stride, count, src, dst);
}

void zs_bitshuffle(size_t ts, size_t n, const uint8_t *src, uint8_t *dst, uint8_t *tmp) {
  zs_bitshuffle_scalar(ts, n, src, dst, tmp);
}
void zs_bitunshuffle(size_t ts, size_t n, const uint8_t *src, uint8_t *dst, uint8_t *tmp) {
  zs_bitunshuffle_scalar(ts, n, src, dst, tmp);
}
#endif
