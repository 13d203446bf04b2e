/* Whole-file operations for FsStore, plain POSIX (no Node-API): each runs start to finish on one I/O
 * thread and records a failure as an errno plus the call that set it. */
#ifndef ZS_FILE_OPS_H
#define ZS_FILE_OPS_H
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

typedef struct file_result {
  int err;             /* 0, or the errno of the call that failed */
  const char *syscall; /* that call's name */
} file_result_t;

/* open(path, flags, mode) with O_CLOEXEC, following no symbolic link after the first `beneath` bytes of
 * path (a link there fails with ELOOP); beneath 0 opens path as given. */
int zs_open_beneath(const char *path, size_t beneath, int flags, mode_t mode);

/* lstat(path) confined as zs_open_beneath is: a link as the last component is reported (S_ISLNK), a
 * link on the way fails with ELOOP. */
int zs_stat_beneath(const char *path, size_t beneath, struct stat *st);

/* Creates `path` (it must not exist), writes n bytes around the page cache where the filesystem allows
 * (O_DIRECT for whole 4 KiB blocks, buffered for the tail) and fsyncs it. EINVAL or ENOTSUP from open
 * or write means this filesystem refuses direct I/O; the file may then exist, partly written. */
void zs_write_file_direct(const char *path, size_t beneath, const uint8_t *src, size_t n, file_result_t *r);

/* Reads `length` bytes from `position` (with from_end: the last `length` bytes), clamped to the file,
 * into dst. *filesize is -1 when path is not a regular file; *got is -1 when dst (cap bytes) cannot
 * hold what the request covers, and nothing is read then. The file is opened with O_NONBLOCK and, after
 * the first `beneath` bytes of path, without following a symbolic link (zs_open_beneath). */
void zs_read_file_range(const char *path, size_t beneath, double position, double length, int from_end, uint8_t *dst,
                        size_t cap, double *got, double *filesize, file_result_t *r);

/* zs_read_file_range on a descriptor: with a path, the file is opened into *fd and, when `keep` and it is
 * a regular file, left open for the caller (else closed, *fd = -1); with path NULL, *fd is the caller's
 * open descriptor, read and left open. A file renamed over the path later does not change what *fd reads. */
void zs_read_range(const char *path, size_t beneath, int *fd, int keep, double position, double length, int from_end,
                   uint8_t *dst, size_t cap, double *got, double *filesize, file_result_t *r);

#endif
