#include "napi-args.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

int zs_get_bytes(napi_env env, napi_value v, const uint8_t **p, size_t *n) {
  napi_typedarray_type type;
  napi_value ab;
  size_t off;
  void *data;
  bool is_ta = false;
  if (napi_is_typedarray(env, v, &is_ta) != napi_ok || !is_ta) return 0;
  if (napi_get_typedarray_info(env, v, &type, n, &data, &ab, &off) != napi_ok || type != napi_uint8_array) return 0;
  *p = data;
  return 1;
}

int zs_get_int(napi_env env, napi_value v, int *out) { return napi_get_value_int32(env, v, out) == napi_ok; }

int zs_get_byte_list(napi_env env, napi_value arr, int allow_absent, job_t *j) {
  bool is_array = false;
  uint32_t n = 0;
  if (napi_is_array(env, arr, &is_array) != napi_ok || !is_array || napi_get_array_length(env, arr, &n) != napi_ok)
    return 0;
  j->n = n;
  j->srcs = calloc(n ? n : 1, sizeof(*j->srcs));
  j->srclens = calloc(n ? n : 1, sizeof(*j->srclens));
  if (!j->srcs || !j->srclens) return 0;
  for (uint32_t i = 0; i < n; i++) {
    napi_value el;
    napi_valuetype vt;
    if (napi_get_element(env, arr, i, &el) != napi_ok || napi_typeof(env, el, &vt) != napi_ok) return 0;
    if (allow_absent && (vt == napi_undefined || vt == napi_null)) continue;
    if (!zs_get_bytes(env, el, &j->srcs[i], &j->srclens[i])) return 0;
    /* An empty typed array may have no backing store; NULL means "absent", so point it anywhere. */
    if (!j->srcs[i]) j->srcs[i] = (const uint8_t *)"";
  }
  return 1;
}

/* The elements of an Int32Array, or NULL when v is something else. */
static const int32_t *int32s(napi_env env, napi_value v, size_t *n) {
  napi_typedarray_type t;
  size_t off;
  void *p = NULL;
  napi_value ab;
  if (napi_get_typedarray_info(env, v, &t, n, &p, &ab, &off) != napi_ok || t != napi_int32_array) return NULL;
  return p ? p : (const int32_t *)"";
}

int zs_get_boxes(napi_env env, napi_value v, size_t stride, job_t *j) {
  size_t n = 0;
  const int32_t *p = int32s(env, v, &n);
  if (!p || (stride ? n % stride != 0 : n != 0)) return 0;
  if (!(j->boxes = malloc(n ? n * sizeof(int32_t) : 1))) return 0;
  memcpy(j->boxes, p, n * sizeof(int32_t));
  j->nboxes = stride ? n / stride : 0;
  return 1;
}

int zs_get_shape(napi_env env, napi_value v, size_t *shape, int *rank) {
  size_t n = 0;
  const int32_t *p = int32s(env, v, &n);
  if (!p || n > MAX_RANK) return 0;
  for (size_t d = 0; d < n; d++) {
    if (p[d] < 0) return 0;
    shape[d] = (size_t)p[d];
  }
  *rank = (int)n;
  return 1;
}
