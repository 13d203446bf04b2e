/* File jobs get threads of their own rather than the libuv pool: a read or write that waits for the
 * disk would hold a thread the codecs need (packages/spec/docs/decisions.md, "File jobs have threads of their own"). The
 * codecs addon keeps the libuv pool for compression, so the two pools share no code and this package
 * has its own small addon (packages/spec/docs/decisions.md, "Native modules"). IO_THREADS threads, started on first use, take tasks from one queue; each env
 * completes its tasks on its JS thread through a threadsafe function, referenced only while it has tasks
 * in flight so that an idle addon never keeps the process alive. */
#define _GNU_SOURCE /* dladdr */
#include "io-threads.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>

#define IO_THREADS 4

typedef struct io_env {
  napi_threadsafe_function done;
  size_t pending; /* tasks queued or running; touched on the JS thread only */
  pthread_mutex_t lock;
  pthread_cond_t idle;
  size_t running; /* tasks not yet handed back to the JS thread; under lock */
} io_env_t;

static pthread_mutex_t queue_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t queue_ready = PTHREAD_COND_INITIALIZER;
static io_task_t *queue_head, *queue_tail;
static int threads_started;

static void *io_thread(void *arg) {
  (void)arg;
  for (;;) {
    pthread_mutex_lock(&queue_lock);
    while (!queue_head) pthread_cond_wait(&queue_ready, &queue_lock);
    io_task_t *t = queue_head;
    queue_head = t->next;
    if (!queue_head) queue_tail = NULL;
    pthread_mutex_unlock(&queue_lock);
    t->run(t);
    io_env_t *io = t->io;
    /* Refused only while the env is going away; nothing can settle the promise then, so free the task. */
    if (napi_call_threadsafe_function(io->done, t, napi_tsfn_nonblocking) != napi_ok) t->settle(NULL, t);
    pthread_mutex_lock(&io->lock);
    if (--io->running == 0) pthread_cond_broadcast(&io->idle);
    pthread_mutex_unlock(&io->lock);
  }
  return NULL;
}

/* Node unloads an addon when the last worker thread that loaded it ends; the I/O threads run (and sleep)
 * in this library's code, so it must stay mapped once they exist. */
static void pin_addon(void) {
  Dl_info self;
  if (dladdr(&threads_started, &self) && self.dli_fname)
    (void)dlopen(self.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
}

/* Starts the threads not yet running (under queue_lock); 0 when not even one runs. */
static int start_threads(void) {
  if (threads_started == 0) pin_addon();
  for (; threads_started < IO_THREADS; threads_started++) {
    pthread_t thread;
    pthread_attr_t attr;
    if (pthread_attr_init(&attr) != 0) break;
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    int failed = pthread_create(&thread, &attr, io_thread, NULL);
    pthread_attr_destroy(&attr);
    if (failed) break;
  }
  return threads_started > 0;
}

static void io_complete(napi_env env, napi_value cb, void *context, void *data) {
  (void)cb;
  io_env_t *io = context;
  io_task_t *t = data;
  t->settle(env, t);
  if (env != NULL && --io->pending == 0) napi_unref_threadsafe_function(env, io->done);
}

/* Teardown of an env (a worker thread ending): its buffers must outlive any task still reading or
 * writing them, so wait for the I/O threads to be done with its tasks. */
static void io_env_cleanup(void *arg) {
  io_env_t *io = arg;
  pthread_mutex_lock(&io->lock);
  while (io->running) pthread_cond_wait(&io->idle, &io->lock);
  pthread_mutex_unlock(&io->lock);
}

static void io_env_free(io_env_t *io) {
  pthread_mutex_destroy(&io->lock);
  pthread_cond_destroy(&io->idle);
  free(io);
}

static void io_env_finalize(napi_env env, void *data, void *hint) {
  (void)hint;
  io_env_t *io = data;
  napi_remove_env_cleanup_hook(env, io_env_cleanup, io);
  io_env_free(io);
}

napi_status io_threads_init(napi_env env) {
  io_env_t *io = calloc(1, sizeof(io_env_t));
  napi_value name;
  if (!io) return napi_generic_failure;
  pthread_mutex_init(&io->lock, NULL);
  pthread_cond_init(&io->idle, NULL);
  napi_status st = napi_create_string_utf8(env, "zstream-file-io", NAPI_AUTO_LENGTH, &name);
  if (st == napi_ok)
    st = napi_create_threadsafe_function(env, NULL, NULL, name, 0, 1, NULL, NULL, io, io_complete, &io->done);
  if (st != napi_ok) {
    io_env_free(io);
    return st;
  }
  if ((st = napi_unref_threadsafe_function(env, io->done)) == napi_ok &&
      (st = napi_add_env_cleanup_hook(env, io_env_cleanup, io)) == napi_ok &&
      (st = napi_set_instance_data(env, io, io_env_finalize, NULL)) == napi_ok)
    return napi_ok;
  /* The threadsafe function goes with the env; io must outlive its finalizer, so it stays allocated. */
  return st;
}

napi_status io_submit(napi_env env, io_task_t *t) {
  io_env_t *io = NULL;
  napi_status st = napi_get_instance_data(env, (void **)&io);
  if (st != napi_ok || !io) return st != napi_ok ? st : napi_generic_failure;
  pthread_mutex_lock(&queue_lock);
  int running = start_threads();
  pthread_mutex_unlock(&queue_lock);
  if (!running) return napi_generic_failure;
  if (io->pending == 0 && (st = napi_ref_threadsafe_function(env, io->done)) != napi_ok) return st;
  io->pending++;
  t->io = io;
  t->next = NULL;
  pthread_mutex_lock(&io->lock);
  io->running++;
  pthread_mutex_unlock(&io->lock);
  pthread_mutex_lock(&queue_lock);
  if (queue_tail) queue_tail->next = t;
  else queue_head = t;
  queue_tail = t;
  pthread_cond_signal(&queue_ready);
  pthread_mutex_unlock(&queue_lock);
  return napi_ok;
}
