/* A small pool of threads of its own for file jobs, completing on the JS thread of the env that queued
 * them. */
#ifndef ZS_IO_THREADS_H
#define ZS_IO_THREADS_H
#include <node_api.h>

typedef struct io_task {
  void (*run)(struct io_task *t); /* on an I/O thread */
  /* On the JS thread: settle the task's promise and free it. env is NULL when the env is being torn
   * down: then free the task's C memory only and touch nothing of JS. */
  void (*settle)(napi_env env, struct io_task *t);
  struct io_env *io;
  struct io_task *next;
} io_task_t;

/* Sets up this env's completion path (instance data); call once from the module's init. */
napi_status io_threads_init(napi_env env);

/* Hands t to the I/O threads. On failure nothing was queued and the caller still owns t. */
napi_status io_submit(napi_env env, io_task_t *t);

#endif
