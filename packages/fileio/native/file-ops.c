/* Direct writes and one-job range reads (see file-ops.h).
 *
 * A shard is written once, fsynced at once and never read back by the writer, so copying it into the
 * page cache buys nothing and costs a large share of the writer's CPU (packages/spec/docs/writer-decisions.md,
 * "Shards are written around the page cache"). The caller's bytes have no alignment guarantee (V8 owns them), so whole blocks go
 * through an aligned per-thread bounce buffer, a user-space memcpy of hot memory far cheaper than the
 * kernel's copy into fresh cache pages, and the last partial block is written buffered after O_DIRECT
 * is cleared from the descriptor.
 *
 * A ranged read is open, fstat, pread and close in one job: through node:fs that is four trips through
 * the libuv pool, each queued behind codec jobs, and a record read makes dozens of them. */
#define _GNU_SOURCE /* O_DIRECT */
#include "file-ops.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef O_NOFOLLOW
#define O_NOFOLLOW 0
#endif

#define DIO_ALIGN ((size_t)4096)
#define DIO_BOUNCE ((size_t)2 << 20)
static __thread uint8_t *tl_bounce;

/* Records errno against `syscall`, after closing fd when it is open. */
static void failed(file_result_t *r, const char *syscall, int fd) {
  r->err = errno ? errno : EIO;
  r->syscall = syscall;
  if (fd >= 0) close(fd);
}

static int write_all(int fd, const uint8_t *p, size_t n, size_t at) {
  while (n) {
    ssize_t w = pwrite(fd, p, n, (off_t)at);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      if (w == 0) errno = EIO;
      return -1;
    }
    p += w;
    at += (size_t)w;
    n -= (size_t)w;
  }
  return 0;
}

#ifdef O_DIRECT
/* Writes the first `whole` bytes (a multiple of DIO_ALIGN) with O_DIRECT; returns the offset reached (a
 * short write stops early and leaves the rest to the buffered tail) or -1. */
static ssize_t write_direct_blocks(int fd, const uint8_t *src, size_t whole) {
  size_t done = 0;
  if (whole && !tl_bounce && posix_memalign((void **)&tl_bounce, DIO_ALIGN, DIO_BOUNCE) != 0) {
    tl_bounce = NULL;
    errno = ENOMEM;
    return -1;
  }
  while (done < whole) {
    size_t n = whole - done < DIO_BOUNCE ? whole - done : DIO_BOUNCE;
    memcpy(tl_bounce, src + done, n);
    ssize_t w = pwrite(fd, tl_bounce, n, (off_t)done);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) return -1;
    done += (size_t)w;
    if ((size_t)w != n) break;
  }
  return (ssize_t)done;
}
#endif


/* Opens the directory holding path's last component: its first `beneath` bytes (the store root, trusted)
 * as the OS resolves them, then every later directory with openat and O_NOFOLLOW, so no symbolic link
 * below the root is followed, whatever another process renames meanwhile: a link anywhere there fails
 * with ELOOP. `copy` is a writable copy of path whose byte at `beneath` is a '/'; *last is set to its
 * last component. Returns the directory's descriptor, or -1 with errno. */
static int open_parent_beneath(char *copy, size_t beneath, char **last) {
  copy[beneath] = '\0';
  int dir = open(copy, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  char *name = copy + beneath + 1;
  while (dir >= 0) {
    char *slash = strchr(name, '/');
    if (!slash) break;
    *slash = '\0';
    int next = openat(dir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    /* O_DIRECTORY with O_NOFOLLOW reports a link as ENOTDIR: tell the two apart. */
    if (next < 0 && errno == ENOTDIR && fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode))
      errno = ELOOP;
    int saved = errno;
    close(dir);
    errno = saved;
    dir = next;
    name = slash + 1;
  }
  *last = name;
  return dir;
}

/* Calls at(dir, name, arg) on path's last component in its confined directory (open_parent_beneath),
 * returning what it returns, or -1 with errno when the directory cannot be opened. */
static int at_beneath(const char *path, size_t beneath, int (*at)(int, const char *, void *), void *arg) {
  size_t n = strlen(path);
  if (beneath >= n || path[beneath] != '/') {
    errno = EINVAL;
    return -1;
  }
  char *copy = malloc(n + 1), *name;
  if (!copy) return -1;
  memcpy(copy, path, n + 1);
  int dir = open_parent_beneath(copy, beneath, &name);
  int res = dir < 0 ? -1 : at(dir, name, arg);
  int saved = errno;
  if (dir >= 0) close(dir);
  free(copy);
  errno = saved;
  return res;
}

typedef struct {
  int flags;
  mode_t mode;
} open_args_t;

static int open_at(int dir, const char *name, void *arg) {
  const open_args_t *a = arg;
  return openat(dir, name, a->flags | O_NOFOLLOW | O_CLOEXEC, a->mode);
}

static int stat_at(int dir, const char *name, void *st) {
  return fstatat(dir, name, st, AT_SYMLINK_NOFOLLOW);
}

/* Opens path, following no symbolic link after its first `beneath` bytes (open_parent_beneath, then
 * openat with O_NOFOLLOW). With beneath 0 the path is opened as given. */
int zs_open_beneath(const char *path, size_t beneath, int flags, mode_t mode) {
  if (beneath == 0) return open(path, flags | O_CLOEXEC, mode);
  open_args_t a = {flags, mode};
  return at_beneath(path, beneath, open_at, &a);
}

int zs_stat_beneath(const char *path, size_t beneath, struct stat *st) {
  if (beneath == 0) return lstat(path, st);
  return at_beneath(path, beneath, stat_at, st);
}

void zs_write_file_direct(const char *path, size_t beneath, const uint8_t *src, size_t n, file_result_t *r) {
#ifdef O_DIRECT
  int fd = zs_open_beneath(path, beneath, O_WRONLY | O_CREAT | O_EXCL | O_DIRECT, 0666);
  if (fd < 0) {
    failed(r, "open", -1);
    return;
  }
  ssize_t done = write_direct_blocks(fd, src, n / DIO_ALIGN * DIO_ALIGN);
  if (done < 0) {
    failed(r, "write", fd);
    return;
  }
  if ((size_t)done < n) {
    int flags = fcntl(fd, F_GETFL);
    if (flags < 0 || fcntl(fd, F_SETFL, flags & ~O_DIRECT) < 0 ||
        write_all(fd, src + done, n - (size_t)done, (size_t)done) < 0) {
      failed(r, "write", fd);
      return;
    }
  }
  if (fsync(fd) < 0) {
    failed(r, "fsync", fd);
    return;
  }
  if (close(fd) < 0) {
    failed(r, "close", -1);
    return;
  }
#else
  (void)path, (void)beneath, (void)src, (void)n, (void)write_all;
  errno = ENOTSUP;
  failed(r, "open", -1);
#endif
}

void zs_read_file_range(const char *path, size_t beneath, double position, double length, int from_end, uint8_t *dst,
                        size_t cap, double *got, double *filesize, file_result_t *r) {
  int fd = -1;
  zs_read_range(path, beneath, &fd, 0, position, length, from_end, dst, cap, got, filesize, r);
}

void zs_read_range(const char *path, size_t beneath, int *fd, int keep, double position, double length, int from_end,
                   uint8_t *dst, size_t cap, double *got, double *filesize, file_result_t *r) {
  /* A descriptor the caller holds is never closed here, not even when a call on it fails. */
  int ours = path != NULL;
  /* O_NONBLOCK: opening a FIFO (or a device) must not wait for a writer; fstat then refuses it. */
  if (ours && (*fd = zs_open_beneath(path, beneath, O_RDONLY | O_NONBLOCK, 0)) < 0) {
    failed(r, "open", -1);
    return;
  }
  struct stat st;
  if (fstat(*fd, &st) < 0) {
    failed(r, "fstat", ours ? *fd : -1);
    if (ours) *fd = -1;
    return;
  }
  *filesize = S_ISREG(st.st_mode) ? (double)st.st_size : -1;
  double size = (double)st.st_size;
  double start = from_end ? (size > length ? size - length : 0) : (position < size ? position : size);
  double want = from_end ? size - start : (length < size - start ? length : size - start);
  int too_small = *filesize >= 0 && want > (double)cap;
  size_t n = *filesize < 0 || too_small ? 0 : (size_t)want, done = 0;
  while (done < n) {
    ssize_t got_now = pread(*fd, dst + done, n - done, (off_t)start + (off_t)done);
    if (got_now < 0 && errno == EINTR) continue;
    if (got_now < 0) {
      failed(r, "read", ours ? *fd : -1);
      if (ours) *fd = -1;
      return;
    }
    if (got_now == 0) break;
    done += (size_t)got_now;
  }
  if (ours && (!keep || *filesize < 0)) {
    close(*fd);
    *fd = -1;
  }
  *got = too_small ? -1 : (double)done;
}
