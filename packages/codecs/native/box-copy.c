/* The writer's record-to-chunk gather and the reader's chunk-to-target scatter, run on the pool so the
 * variables of a record copy in parallel at memcpy speed instead of on the JS thread. */
#include "box-copy.h"

#include <string.h>

void zs_byte_strides(const size_t *shape, int rank, size_t itemsize, size_t *str) {
  str[rank] = itemsize;
  for (int d = rank - 1; d >= 0; d--) str[d] = str[d + 1] * (d + 1 < rank ? shape[d + 1] : 1);
}

/* Whole trailing dims merge into one memcpy run; the dims before them are walked like an odometer. */
void zs_copy_box(const uint8_t *src, const size_t *src_shape, const size_t *sstr, uint8_t *dst,
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
