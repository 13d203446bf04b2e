/* A decode's result is a fresh chunk-sized Buffer per call. From glibc, a 1 MiB block is a fresh mmap
 * (or heap top that free() trimmed when V8 let go of the last one), so every page of it faults in and
 * the kernel zeroes it first: for a 1 MiB chunk that costs about as much as decoding it. Results of at
 * least POOL_MIN bytes therefore live in memory of our own, wrapped as an external Buffer whose
 * finaliser (run on the JS thread after V8 collects the Buffer) puts the block back on a small free list
 * for the next result; smaller ones are ordinary Buffers. The list is shared by every thread's
 * environment (worker threads load the addon too), hence the lock. */
#include "result-pool.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#define POOL_MIN ((size_t)64 << 10)
#define POOL_SLOTS 64
#define POOL_BYTES ((size_t)64 << 20) /* at most this much kept idle */

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
  void *p;
  size_t cap;
} slots[POOL_SLOTS];
static int nslots;
static size_t pooled;

/* A kept block of at least n bytes and less than twice that, so a small result never pins a big block. */
static void *take(size_t n, size_t *cap) {
  void *p = NULL;
  pthread_mutex_lock(&lock);
  for (int i = 0; i < nslots; i++) {
    if (slots[i].cap >= n && slots[i].cap / 2 < n) {
      p = slots[i].p;
      *cap = slots[i].cap;
      pooled -= slots[i].cap;
      slots[i] = slots[--nslots];
      break;
    }
  }
  pthread_mutex_unlock(&lock);
  if (!p && (p = malloc(n))) *cap = n;
  return p;
}

static void give_back(napi_env env, void *data, void *hint) {
  (void)env;
  size_t cap = (size_t)(uintptr_t)hint;
  pthread_mutex_lock(&lock);
  if (nslots < POOL_SLOTS && pooled + cap <= POOL_BYTES) {
    slots[nslots].p = data;
    slots[nslots++].cap = cap;
    pooled += cap;
    data = NULL;
  }
  pthread_mutex_unlock(&lock);
  free(data);
}

int zs_result_buffer(napi_env env, size_t n, void **data, napi_value *buf) {
  size_t cap = 0;
  void *p = n >= POOL_MIN ? take(n, &cap) : NULL;
  if (p) {
    if (napi_create_external_buffer(env, n, p, give_back, (void *)(uintptr_t)cap, buf) == napi_ok) {
      *data = p;
      return 1;
    }
    /* e.g. napi_no_external_buffers_allowed where V8's sandbox forbids them: an ordinary Buffer then */
    free(p);
    bool pending = false;
    if (napi_is_exception_pending(env, &pending) == napi_ok && pending) {
      napi_value ignored;
      napi_get_and_clear_last_exception(env, &ignored);
    }
  }
  /* napi_create_buffer does not zero-fill (napi_create_arraybuffer does); the decoder fills every byte or
   * the promise rejects and the buffer is never exposed. */
  return napi_create_buffer(env, n, data, buf) == napi_ok;
}
