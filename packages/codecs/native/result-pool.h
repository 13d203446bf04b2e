/* Memory for decoded results handed to JS: reused once V8 lets go of a result, so it stays mapped. */
#ifndef ZS_RESULT_POOL_H
#define ZS_RESULT_POOL_H
#include <node_api.h>

/* A Buffer of n bytes (uninitialised) for a decoder to fill, at *data; 0 after a Node-API failure. */
int zs_result_buffer(napi_env env, size_t n, void **data, napi_value *buf);
#endif
