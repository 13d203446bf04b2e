/* Node-API entry points of the file I/O addon: argument checks on the JS thread, the file operations
 * (file-ops.c) on the I/O threads (io-threads.c), and the promise settled back on the JS thread. Every
 * Node-API status is checked: a call that fails before the job is queued throws, and one that fails
 * while settling rejects the promise, so no promise is left pending. */
#include <errno.h>
#include <node_api.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "file-ops.h"
#include "io-threads.h"

typedef enum { JOB_WRITE, JOB_READ, JOB_STAT } file_op_t;

typedef struct file_job {
  io_task_t task; /* first: io-threads hands back this pointer */
  file_op_t op;
  napi_deferred deferred;
  napi_ref keep; /* the caller's buffer, alive until the promise settles */
  char *path;
  double beneath; /* length of path's trusted prefix: no symlink after it is followed */
  uint8_t *bytes; /* write: the source; read: the destination */
  size_t len;
  double position, length, got, filesize; /* read */
  int from_end;
  int pinned; /* readPinnedInto: the descriptor stays open and is handed back */
  int fd;
  struct stat st; /* stat */
  file_result_t result;
} file_job_t;

static void run(io_task_t *t) {
  file_job_t *j = (file_job_t *)t;
  if (j->op == JOB_WRITE) zs_write_file_direct(j->path, (size_t)j->beneath, j->bytes, j->len, &j->result);
  else if (j->op == JOB_STAT) {
    if (zs_stat_beneath(j->path, (size_t)j->beneath, &j->st) < 0) {
      j->result.err = errno ? errno : EIO;
      j->result.syscall = "stat";
    }
  }
  else if (j->pinned)
    zs_read_range(j->path, (size_t)j->beneath, &j->fd, 1, j->position, j->length, j->from_end, j->bytes, j->len, &j->got,
                  &j->filesize, &j->result);
  else
    zs_read_file_range(j->path, (size_t)j->beneath, j->position, j->length, j->from_end, j->bytes, j->len, &j->got, &j->filesize,
                       &j->result);
}

static void free_job(file_job_t *j) {
  free(j->path);
  free(j);
}

/* An Error whose code is the errno's name and whose syscall names the failing call, as node:fs's are. */
static napi_status errno_error(napi_env env, const file_result_t *r, napi_value *err) {
  char msg[300];
  napi_value code, text, sys;
  snprintf(msg, sizeof(msg), "%s failed: %s", r->syscall, strerror(r->err));
  napi_status st;
  if ((st = napi_create_string_utf8(env, uv_err_name(-r->err), NAPI_AUTO_LENGTH, &code)) != napi_ok ||
      (st = napi_create_string_utf8(env, msg, NAPI_AUTO_LENGTH, &text)) != napi_ok ||
      (st = napi_create_error(env, code, text, err)) != napi_ok ||
      (st = napi_create_string_utf8(env, r->syscall, NAPI_AUTO_LENGTH, &sys)) != napi_ok)
    return st;
  return napi_set_named_property(env, *err, "syscall", sys);
}

static napi_status read_result(napi_env env, const file_job_t *j, napi_value *out) {
  napi_value got, size, fd;
  napi_status st;
  if ((st = napi_create_array_with_length(env, j->pinned ? 3 : 2, out)) != napi_ok ||
      (st = napi_create_double(env, j->got, &got)) != napi_ok ||
      (st = napi_create_double(env, j->filesize, &size)) != napi_ok ||
      (st = napi_set_element(env, *out, 0, got)) != napi_ok ||
      (st = napi_set_element(env, *out, 1, size)) != napi_ok || !j->pinned)
    return st;
  if ((st = napi_create_int32(env, j->fd, &fd)) != napi_ok) return st;
  return napi_set_element(env, *out, 2, fd);
}

#ifdef __APPLE__
#define MTIME(st) ((st).st_mtimespec)
#else
#define MTIME(st) ((st).st_mtim)
#endif

/* [kind, ino, size, mtimeNs]: kind "file", "link" or "other"; ino and mtimeNs as BigInts (an inode number
 * may pass 2^53), size a number. */
static napi_status stat_result(napi_env env, const file_job_t *j, napi_value *out) {
  const struct stat *s = &j->st;
  const char *kind = S_ISREG(s->st_mode) ? "file" : S_ISLNK(s->st_mode) ? "link" : "other";
  int64_t mtime_ns = (int64_t)MTIME(*s).tv_sec * 1000000000 + (int64_t)MTIME(*s).tv_nsec;
  napi_value v[4];
  napi_status status;
  if ((status = napi_create_array_with_length(env, 4, out)) != napi_ok ||
      (status = napi_create_string_utf8(env, kind, NAPI_AUTO_LENGTH, &v[0])) != napi_ok ||
      (status = napi_create_bigint_uint64(env, (uint64_t)s->st_ino, &v[1])) != napi_ok ||
      (status = napi_create_double(env, (double)s->st_size, &v[2])) != napi_ok ||
      (status = napi_create_bigint_int64(env, mtime_ns, &v[3])) != napi_ok)
    return status;
  for (uint32_t i = 0; i < 4; i++)
    if ((status = napi_set_element(env, *out, i, v[i])) != napi_ok) return status;
  return napi_ok;
}

/* Rejects with a plain Error naming the Node-API step that failed (or, failing even that, undefined). */
static void reject_internal(napi_env env, napi_deferred deferred, const char *what) {
  napi_value code, msg, err;
  bool pending = false;
  if (napi_is_exception_pending(env, &pending) == napi_ok && pending)
    napi_get_and_clear_last_exception(env, &err);
  else if (napi_create_string_utf8(env, "ZS_INTERNAL", NAPI_AUTO_LENGTH, &code) != napi_ok ||
           napi_create_string_utf8(env, what, NAPI_AUTO_LENGTH, &msg) != napi_ok ||
           napi_create_error(env, code, msg, &err) != napi_ok)
    napi_get_undefined(env, &err);
  napi_reject_deferred(env, deferred, err);
}

/* Settles the promise with v. A deferred is spent once resolve or reject gets past its checks, so a
 * second try is made only when an exception was pending (the call then did nothing). */
static void conclude(napi_env env, napi_deferred deferred, napi_value v, bool resolve) {
  napi_status st = resolve ? napi_resolve_deferred(env, deferred, v) : napi_reject_deferred(env, deferred, v);
  if (st == napi_pending_exception) reject_internal(env, deferred, "an exception was pending");
}

static void settle(napi_env env, io_task_t *t) {
  file_job_t *j = (file_job_t *)t;
  if (env != NULL) {
    napi_value value;
    if (j->result.err) {
      if (errno_error(env, &j->result, &value) == napi_ok) conclude(env, j->deferred, value, false);
      else reject_internal(env, j->deferred, "could not build the file I/O error");
    } else {
      napi_status st = j->op == JOB_READ   ? read_result(env, j, &value)
                       : j->op == JOB_STAT ? stat_result(env, j, &value)
                                           : napi_get_undefined(env, &value);
      if (st == napi_ok) conclude(env, j->deferred, value, true);
      else reject_internal(env, j->deferred, "could not build the file I/O result");
    }
    if (j->keep) napi_delete_reference(env, j->keep);
  }
  free_job(j);
}

static int get_bytes(napi_env env, napi_value v, uint8_t **p, size_t *n) {
  napi_typedarray_type type;
  napi_value ab;
  size_t off;
  void *data = NULL;
  bool is_ta = false;
  if (napi_is_typedarray(env, v, &is_ta) != napi_ok || !is_ta ||
      napi_get_typedarray_info(env, v, &type, n, &data, &ab, &off) != napi_ok || type != napi_uint8_array)
    return 0;
  /* An empty typed array may have no backing store; zero bytes go nowhere. */
  static uint8_t nothing;
  *p = data ? data : &nothing;
  return 1;
}

/* Copies the JS string v into a fresh NUL-terminated buffer; 0 for a non-string, "" or an embedded NUL. */
static int get_path(napi_env env, napi_value v, char **out) {
  size_t len = 0;
  if (napi_get_value_string_utf8(env, v, NULL, 0, &len) != napi_ok || len == 0 || !(*out = malloc(len + 1)))
    return 0;
  return napi_get_value_string_utf8(env, v, *out, len + 1, &len) == napi_ok && strlen(*out) == len;
}

/* A byte offset or count: a whole number 0..2^53 - 1, as node:fs takes them. A fraction would be cut
 * off differently in the start (an off_t) and the length (a size_t), shifting the bytes read. */
static int get_offset(napi_env env, napi_value v, double *out) {
  return napi_get_value_double(env, v, out) == napi_ok && *out >= 0 && *out <= 9007199254740991.0 &&
         *out == (double)(int64_t)*out;
}

/* Frees j (when there is one) and throws: a TypeError (ZS_ARGS) for bad arguments, else an Error
 * (ZS_INTERNAL); an exception Node-API already raised is left to propagate. */
static napi_value refuse(napi_env env, file_job_t *j, bool bad_args, const char *what) {
  if (j) free_job(j);
  bool pending = false;
  if (napi_is_exception_pending(env, &pending) == napi_ok && pending) return NULL;
  if (bad_args) napi_throw_type_error(env, "ZS_ARGS", what);
  else napi_throw_error(env, "ZS_INTERNAL", what);
  return NULL;
}

/* Keeps `keep` (when not NULL) alive, creates the promise and hands j to the I/O threads. Throws when no promise could
 * be made; once there is one, every failure rejects it. */
static napi_value submit(napi_env env, file_job_t *j, napi_value keep) {
  napi_value promise;
  j->task.run = run;
  j->task.settle = settle;
  if (keep && napi_create_reference(env, keep, 1, &j->keep) != napi_ok)
    return refuse(env, j, false, "could not reference the buffer");
  if (napi_create_promise(env, &j->deferred, &promise) != napi_ok) {
    if (j->keep) napi_delete_reference(env, j->keep);
    return refuse(env, j, false, "could not create a promise");
  }
  if (io_submit(env, &j->task) != napi_ok) {
    /* The promise exists: settle it, so the caller sees the failure where it awaits. */
    reject_internal(env, j->deferred, "could not start the file I/O threads");
    if (j->keep) napi_delete_reference(env, j->keep);
    free_job(j);
  }
  return promise;
}

/* The call's `want` arguments into argv and a fresh job; NULL after throwing. */
static file_job_t *job_args(napi_env env, napi_callback_info info, size_t want, napi_value *argv, file_op_t op) {
  size_t argc = want;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc != want) {
    refuse(env, NULL, true, "wrong number of arguments to the file I/O addon");
    return NULL;
  }
  file_job_t *j = calloc(1, sizeof(file_job_t));
  if (!j) refuse(env, NULL, false, "out of memory");
  else j->op = op;
  return j;
}

/* readFileInto(path, beneath, position, length, fromEnd: 0|1, into: Uint8Array): resolves with
 * [bytesRead, fileSize]; see zs_read_file_range. */
static napi_value read_js(napi_env env, napi_callback_info info) {
  napi_value argv[6];
  file_job_t *j = job_args(env, info, 6, argv, JOB_READ);
  if (!j) return NULL;
  int ok = get_path(env, argv[0], &j->path) && get_offset(env, argv[1], &j->beneath) &&
           get_offset(env, argv[2], &j->position) && get_offset(env, argv[3], &j->length) &&
           napi_get_value_int32(env, argv[4], &j->from_end) == napi_ok &&
           get_bytes(env, argv[5], &j->bytes, &j->len);
  if (!ok) return refuse(env, j, true, "bad arguments to readFileInto");
  return submit(env, j, argv[5]);
}

/* readPinnedInto(pathOrFd, beneath, position, length, fromEnd: 0|1, into: Uint8Array): resolves with
 * [bytesRead, fileSize, fd] (beneath as readFileInto's, unused with an fd). Given a path, the file it opens stays open (fd, or -1 when it is not a regular file) for
 * later calls given that fd, which read the same file whatever is renamed over the path; the caller
 * closes it. See zs_read_range. */
static napi_value read_pinned_js(napi_env env, napi_callback_info info) {
  napi_value argv[6];
  file_job_t *j = job_args(env, info, 6, argv, JOB_READ);
  if (!j) return NULL;
  napi_valuetype first;
  j->pinned = 1;
  j->fd = -1;
  int ok = napi_typeof(env, argv[0], &first) == napi_ok &&
           (first == napi_number ? napi_get_value_int32(env, argv[0], &j->fd) == napi_ok && j->fd >= 0
                                 : get_path(env, argv[0], &j->path)) &&
           get_offset(env, argv[1], &j->beneath) && get_offset(env, argv[2], &j->position) &&
           get_offset(env, argv[3], &j->length) && napi_get_value_int32(env, argv[4], &j->from_end) == napi_ok &&
           get_bytes(env, argv[5], &j->bytes, &j->len);
  if (!ok) return refuse(env, j, true, "bad arguments to readPinnedInto");
  return submit(env, j, argv[5]);
}

/* writeFileDirect(path: string, beneath, bytes: Uint8Array): see zs_write_file_direct. */
static napi_value write_js(napi_env env, napi_callback_info info) {
  napi_value argv[3];
  file_job_t *j = job_args(env, info, 3, argv, JOB_WRITE);
  if (!j) return NULL;
  if (!get_path(env, argv[0], &j->path) || !get_offset(env, argv[1], &j->beneath) ||
      !get_bytes(env, argv[2], &j->bytes, &j->len))
    return refuse(env, j, true, "bad arguments to writeFileDirect");
  return submit(env, j, argv[2]);
}

/* statBeneath(path, beneath): resolves with [kind, ino, size, mtimeNs] (stat_result) of path's last
 * component, not following it; see zs_stat_beneath. */
static napi_value stat_js(napi_env env, napi_callback_info info) {
  napi_value argv[2];
  file_job_t *j = job_args(env, info, 2, argv, JOB_STAT);
  if (!j) return NULL;
  if (!get_path(env, argv[0], &j->path) || !get_offset(env, argv[1], &j->beneath))
    return refuse(env, j, true, "bad arguments to statBeneath");
  return submit(env, j, NULL);
}

static bool export_function(napi_env env, napi_value exports, const char *name, napi_callback fn) {
  napi_value f;
  return napi_create_function(env, name, NAPI_AUTO_LENGTH, fn, NULL, &f) == napi_ok &&
         napi_set_named_property(env, exports, name, f) == napi_ok;
}

NAPI_MODULE_INIT() {
  if (io_threads_init(env) != napi_ok || !export_function(env, exports, "writeFileDirect", write_js) ||
      !export_function(env, exports, "readFileInto", read_js) ||
      !export_function(env, exports, "readPinnedInto", read_pinned_js) ||
      !export_function(env, exports, "statBeneath", stat_js)) {
    bool pending = false;
    if (napi_is_exception_pending(env, &pending) != napi_ok || !pending)
      napi_throw_error(env, "ZS_INTERNAL", "could not set up the file I/O addon");
    return NULL;
  }
  return exports;
}
