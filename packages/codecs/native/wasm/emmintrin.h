/* The SSE2 intrinsics zstd uses, as WebAssembly SIMD128 (the wasm build only: scripts/build-wasm.mjs puts
 * this directory first on the include path and defines ZSTD_ARCH_X86_SSE2). zstd then takes its SSE2 code:
 * the row match finder's 16-byte tag compare (a bit mask per row instead of word-sized SWAR steps) and
 * 16-byte literal and match copies. Each intrinsic has a one-instruction SIMD128 equivalent, so the
 * semantics are those of SSE2; zstd uses no other intrinsic under that macro. */
#ifndef ZS_WASM_EMMINTRIN_H
#define ZS_WASM_EMMINTRIN_H

#ifndef __wasm_simd128__
#error "native/wasm/emmintrin.h is for wasm32 with -msimd128 only"
#endif
#include <wasm_simd128.h>

typedef v128_t __m128i;

static inline __attribute__((always_inline)) __m128i _mm_loadu_si128(const __m128i *p) {
  return wasm_v128_load(p);
}
static inline __attribute__((always_inline)) void _mm_storeu_si128(__m128i *p, __m128i v) {
  wasm_v128_store(p, v);
}
static inline __attribute__((always_inline)) __m128i _mm_set1_epi8(char c) { return wasm_i8x16_splat(c); }
static inline __attribute__((always_inline)) __m128i _mm_cmpeq_epi8(__m128i a, __m128i b) {
  return wasm_i8x16_eq(a, b);
}
static inline __attribute__((always_inline)) int _mm_movemask_epi8(__m128i v) {
  return (int)wasm_i8x16_bitmask(v);
}

#endif
