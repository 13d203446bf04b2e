/* Strided box copies between row-major arrays: the gather that feeds the encoder (record → chunks) and
 * the scatter after the decoder (chunk → target). */
#ifndef ZS_BOX_COPY_H
#define ZS_BOX_COPY_H
#include <stddef.h>
#include <stdint.h>

#define MAX_RANK 32

/* Byte strides of a row-major array: str[d] for d < rank, str[rank] = itemsize. */
void zs_byte_strides(const size_t *shape, int rank, size_t itemsize, size_t *str);

/* Copies box `cnt` from s0 of src into d0 of dst (byte strides sstr/dstr from zs_byte_strides). Bounds
 * are the caller's: the JS side checks every box before a job is queued. */
void zs_copy_box(const uint8_t *src, const size_t *src_shape, const size_t *sstr, uint8_t *dst,
                 const size_t *dst_shape, const size_t *dstr, int rank, size_t itemsize, const int32_t *s0,
                 const int32_t *d0, const int32_t *cnt);
#endif
