/* The life of a job on the libuv pool: queued with its promise (napi_create_async_work), run by
 * codec-ops.c, then settled and freed on the JS thread. Every Node-API status is checked: a failure
 * before the promise exists throws; after that it rejects the promise, so none is left pending, and
 * every path frees the job, its references and its buffers. */
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "codec-job.h"

job_t *zs_new_job(napi_env env, op_t op) {
  job_t *j = calloc(1, sizeof(job_t));
  if (!j) napi_throw_error(env, "ZS_INTERNAL", "out of memory");
  else j->op = op;
  return j;
}

static void drop_ref(napi_env env, napi_ref *ref) {
  if (*ref) napi_delete_reference(env, *ref);
  *ref = NULL;
}

/* A part other than the leader owns only its async work: its arrays and references are the leader's. */
static void free_part(napi_env env, job_t *p) {
  if (p->work) napi_delete_async_work(env, p->work);
  free(p);
}

void zs_free_job(napi_env env, job_t *j) {
  if (j->op == OP_BLOSC_ENC || j->op == OP_ZSTD_ENC) zs_scratch_put(j);
  for (size_t i = 1; i < j->nparts; i++) free_part(env, j->parts[i]);
  free(j->parts);
  drop_ref(env, &j->input_ref);
  drop_ref(env, &j->output_ref);
  drop_ref(env, &j->sizes_ref);
  if (j->work) napi_delete_async_work(env, j->work);
  free(j->srcs);
  free(j->srclens);
  free(j->boxes);
  free(j);
}

napi_value zs_bad_args(napi_env env, job_t *j, const char *what) {
  zs_free_job(env, j);
  bool pending = false;
  if (napi_is_exception_pending(env, &pending) != napi_ok || !pending) napi_throw_type_error(env, "ZS_ARGS", what);
  return NULL;
}

/* The job's failure as an Error: code ZS_CORRUPT (the input does not decode), ZS_UNSUPPORTED (a Blosc
 * inner codec we do not implement) or ZS_INTERNAL; decodeBoxes failures name their frame. */
static napi_status job_error(napi_env env, const job_t *j, const char *fallback, napi_value *err) {
  napi_value code, msg, frame;
  const char *name = j->corrupt ? "ZS_CORRUPT" : j->unsupported ? "ZS_UNSUPPORTED" : "ZS_INTERNAL";
  napi_status st;
  if ((st = napi_create_string_utf8(env, name, NAPI_AUTO_LENGTH, &code)) != napi_ok ||
      (st = napi_create_string_utf8(env, j->msg[0] ? j->msg : fallback, NAPI_AUTO_LENGTH, &msg)) != napi_ok ||
      (st = napi_create_error(env, code, msg, err)) != napi_ok || j->op != OP_UNPACK)
    return st;
  if ((st = napi_create_double(env, (double)j->failed, &frame)) != napi_ok) return st;
  return napi_set_named_property(env, *err, "frame", frame);
}

/* A plain Uint8Array over the decoded Buffer's memory: callers compare results with Uint8Arrays. */
static napi_status decoded_bytes(napi_env env, const job_t *j, napi_value *out) {
  napi_value buf, ab;
  napi_typedarray_type t;
  size_t len, off;
  void *p;
  napi_status st;
  if ((st = napi_get_reference_value(env, j->output_ref, &buf)) != napi_ok ||
      (st = napi_get_typedarray_info(env, buf, &t, &len, &p, &ab, &off)) != napi_ok)
    return st;
  return napi_create_typedarray(env, napi_uint8_array, j->dstlen, ab, off, out);
}

/* The compressed bytes copied out of the scratch buffer into V8-owned memory, so the GC sees their size. */
static napi_status encoded_bytes(napi_env env, const job_t *j, napi_value *out) {
  void *p = NULL;
  napi_value ab;
  napi_status st = napi_create_arraybuffer(env, j->dstlen, &p, &ab);
  if (st != napi_ok) return st;
  if (j->dstlen) memcpy(p, j->dst, j->dstlen);
  return napi_create_typedarray(env, napi_uint8_array, j->dstlen, ab, 0, out);
}

static napi_status job_result(napi_env env, const job_t *j, napi_value *out) {
  switch (j->op) {
    case OP_CRC: return napi_create_uint32(env, j->crc, out);
    case OP_PACK: return napi_create_double(env, (double)j->dstlen, out);
    case OP_COPY:
    case OP_UNPACK: return napi_get_undefined(env, out);
    case OP_BLOSC_DEC:
    case OP_ZSTD_DEC: return decoded_bytes(env, j, out);
    case OP_BLOSC_ENC:
    case OP_ZSTD_ENC: return encoded_bytes(env, j, out);
  }
  return napi_generic_failure;
}

/* Rejects with a ZS_INTERNAL Error saying which step failed (an exception Node-API left pending, if any,
 * is the better reason); failing even that, with undefined. */
static void reject_internal(napi_env env, napi_deferred deferred, const char *what) {
  napi_value code, msg, err;
  bool pending = false;
  bool thrown = napi_is_exception_pending(env, &pending) == napi_ok && pending &&
                napi_get_and_clear_last_exception(env, &err) == napi_ok;
  if (!thrown && (napi_create_string_utf8(env, "ZS_INTERNAL", NAPI_AUTO_LENGTH, &code) != napi_ok ||
                  napi_create_string_utf8(env, what, NAPI_AUTO_LENGTH, &msg) != napi_ok ||
                  napi_create_error(env, code, msg, &err) != napi_ok))
    napi_get_undefined(env, &err);
  napi_reject_deferred(env, deferred, err);
}

/* Settles the promise with v. A deferred is spent once resolve or reject gets past its checks, so a
 * second try is made only when an exception was pending (the call then did nothing). */
static void conclude(napi_env env, napi_deferred deferred, napi_value v, bool resolve) {
  napi_status st = resolve ? napi_resolve_deferred(env, deferred, v) : napi_reject_deferred(env, deferred, v);
  if (st == napi_pending_exception) reject_internal(env, deferred, "an exception was pending");
}

/* Settles the call led by L with the outcome of its first part (in frame order) that failed, so a split
 * call reports the same frame a single job would have; with none failed, with L's result. */
static void settle(napi_env env, job_t *L) {
  const job_t *r = L;
  for (size_t i = 0; i < L->nparts; i++) {
    if (L->parts[i]->status != napi_ok || zs_job_failed(L->parts[i])) {
      r = L->parts[i];
      break;
    }
  }
  napi_value value;
  if (r->status == napi_ok && !zs_job_failed(r)) {
    if (job_result(env, L, &value) == napi_ok) {
      conclude(env, L->deferred, value, true);
    } else {
      char what[96];
      snprintf(what, sizeof(what), "could not hand over a %zu-byte result", L->dstlen);
      reject_internal(env, L->deferred, what);
    }
  } else if (job_error(env, r, r->status == napi_cancelled ? "async work was cancelled" : "async work failed",
                       &value) == napi_ok) {
    conclude(env, L->deferred, value, false);
  } else {
    reject_internal(env, L->deferred, "could not build the codec error");
  }
}

/* Unpack jobs (parts included) queued and not yet completed, over every JS thread using the addon. */
static atomic_size_t unpacks_in_flight;

static void complete(napi_env env, napi_status status, void *data) {
  job_t *j = data;
  j->status = status;
  if (j->op == OP_UNPACK) atomic_fetch_sub(&unpacks_in_flight, 1);
  job_t *L = j->leader ? j->leader : j;
  if (L->nparts > 1 && --L->pending > 0) return;
  settle(env, L);
  zs_free_job(env, L);
}

static napi_status keep(napi_env env, napi_value v, napi_ref *ref) {
  return v ? napi_create_reference(env, v, 1, ref) : napi_ok;
}

/* The libuv pool's size, read the way libuv reads it (default 4, at most 1024). */
static size_t pool_threads(void) {
  static size_t n;
  if (!n) {
    const char *v = getenv("UV_THREADPOOL_SIZE");
    long k = v ? strtol(v, NULL, 10) : 4;
    n = k < 1 ? 1 : k > 1024 ? 1024 : (size_t)k;
  }
  return n;
}

/* The cores this process may run on (sysconf's online count, at least 1). */
static size_t cores(void) {
  static size_t n;
  if (!n) {
    long k = sysconf(_SC_NPROCESSORS_ONLN);
    n = k < 1 ? 1 : (size_t)k;
  }
  return n;
}

/* Splits an unpack job's frames into parts for the cores that no unpack job in flight occupies (at most
 * one part per frame and per pool thread), so one shard's decode uses every core when it is the only call
 * in flight, while a reader with several shards in flight gets one job per shard: every part costs a
 * thread wake-up and a completion on the JS thread, which with parts on busy cores only added context
 * switches (packages/spec/docs/codecs.md, "Reading a checkpoint store"). Leaves L whole when the parts
 * cannot be made. */
static void split_frames(napi_env env, job_t *L, napi_value name) {
  L->begin = 0;
  L->end = L->n;
  size_t k = pool_threads() < cores() ? pool_threads() : cores();
  const size_t busy = atomic_load(&unpacks_in_flight);
  k = busy < k ? k - busy : 1;
  if (k > L->n) k = L->n;
  if (k < 2 || !(L->parts = calloc(k, sizeof(job_t *)))) return;
  L->parts[0] = L;
  L->nparts = 1;
  for (size_t q = 1; q < k; q++) {
    job_t *p = malloc(sizeof(job_t));
    if (!p) break;
    *p = *L;
    p->work = NULL;
    p->deferred = NULL;
    p->input_ref = p->output_ref = p->sizes_ref = NULL;
    p->parts = NULL;
    p->nparts = 0;
    p->leader = L;
    L->parts[L->nparts++] = p;
    if (napi_create_async_work(env, NULL, name, zs_run_job, complete, p, &p->work) != napi_ok) break;
  }
  if (L->nparts != k || !L->parts[k - 1]->work) {
    for (size_t i = 1; i < L->nparts; i++) free_part(env, L->parts[i]);
    free(L->parts);
    L->parts = NULL;
    L->nparts = 0;
    return;
  }
  for (size_t q = 0; q < k; q++) {
    L->parts[q]->begin = L->n * q / k;
    L->parts[q]->end = L->n * (q + 1) / k;
    L->parts[q]->failed = L->parts[q]->begin;
  }
}

napi_value zs_run_now(napi_env env, job_t *j, napi_value out) {
  j->begin = 0;
  j->end = j->n;
  zs_run_job(env, j);
  napi_value value = NULL, err;
  if (zs_job_failed(j)) {
    if (job_error(env, j, "the codec call failed", &err) == napi_ok) napi_throw(env, err);
  } else if (keep(env, out, &j->output_ref) != napi_ok || job_result(env, j, &value) != napi_ok) {
    value = NULL;
  }
  bool pending = false;
  if (!value && (napi_is_exception_pending(env, &pending) != napi_ok || !pending))
    napi_throw_error(env, "ZS_INTERNAL", "could not hand over the codec result");
  zs_free_job(env, j);
  return value;
}

napi_value zs_queue_job(napi_env env, job_t *j, napi_value in, napi_value out, napi_value sizes) {
  napi_value promise, name;
  if (keep(env, in, &j->input_ref) != napi_ok || keep(env, out, &j->output_ref) != napi_ok ||
      keep(env, sizes, &j->sizes_ref) != napi_ok || napi_create_promise(env, &j->deferred, &promise) != napi_ok) {
    zs_free_job(env, j);
    bool pending = false;
    if (napi_is_exception_pending(env, &pending) != napi_ok || !pending)
      napi_throw_error(env, "ZS_INTERNAL", "could not set up the codec job");
    return NULL;
  }
  if (napi_create_string_utf8(env, "zstream-codecs", NAPI_AUTO_LENGTH, &name) != napi_ok ||
      napi_create_async_work(env, NULL, name, zs_run_job, complete, j, &j->work) != napi_ok) {
    reject_internal(env, j->deferred, "could not queue the codec job on the libuv pool");
    zs_free_job(env, j);
    return promise;
  }
  if (j->op == OP_UNPACK) split_frames(env, j, name);
  if (j->nparts < 2) {
    if (napi_queue_async_work(env, j->work) == napi_ok) {
      if (j->op == OP_UNPACK) atomic_fetch_add(&unpacks_in_flight, 1);
    } else {
      reject_internal(env, j->deferred, "could not queue the codec job on the libuv pool");
      zs_free_job(env, j);
    }
    return promise;
  }
  /* Parts that could not be queued count as failed; the call settles once the queued ones complete. */
  for (size_t q = 0; q < j->nparts; q++) {
    if (napi_queue_async_work(env, j->parts[q]->work) == napi_ok) {
      j->pending++;
      atomic_fetch_add(&unpacks_in_flight, 1);
    } else {
      j->parts[q]->status = napi_generic_failure;
    }
  }
  if (j->pending == 0) {
    reject_internal(env, j->deferred, "could not queue the codec job on the libuv pool");
    zs_free_job(env, j);
  }
  return promise;
}
