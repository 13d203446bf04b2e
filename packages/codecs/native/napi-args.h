/* Reading the arguments of an addon call; each returns 0 when the value is not what is asked for. */
#ifndef ZS_NAPI_ARGS_H
#define ZS_NAPI_ARGS_H
#include <node_api.h>

#include "codec-job.h"

int zs_get_bytes(napi_env env, napi_value v, const uint8_t **p, size_t *n);
int zs_get_int(napi_env env, napi_value v, int *out);
/* A JS array of Uint8Arrays into j->srcs/srclens (j->n of them); with allow_absent, undefined and null
 * entries become NULL (an absent chunk). */
int zs_get_byte_list(napi_env env, napi_value arr, int allow_absent, job_t *j);
/* An Int32Array of a multiple of `stride` numbers, copied into j->boxes (the JS array may change). */
int zs_get_boxes(napi_env env, napi_value v, size_t stride, job_t *j);
/* An Int32Array of at most MAX_RANK non-negative extents. */
int zs_get_shape(napi_env env, napi_value v, size_t *shape, int *rank);
#endif
