/* The C libraries' own speed on the same bytes and chunking the Node benchmark uses: one thread, a plain
 * loop over 1 MiB chunks. Usage: reference <file> <chunk> <typesize> <profile: diagnostic|checkpoint|wasm> <reps>
 * Prints: <compress MB/s> <decompress MB/s> <compressed bytes>. */
#include <blosc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zstd.h>

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
  if (argc != 6) return 2;
  size_t chunk = strtoul(argv[2], NULL, 10), typesize = strtoul(argv[3], NULL, 10);
  const char *profile = argv[4];
  int reps = atoi(argv[5]), is_zstd = strcmp(profile, "wasm") == 0;
  int clevel = strcmp(profile, "checkpoint") == 0 ? 7 : 5;
  FILE *f = fopen(argv[1], "rb");
  if (!f) return 3;
  fseek(f, 0, SEEK_END);
  size_t n = (size_t)ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char *src = malloc(n), *back = malloc(chunk);
  if (fread(src, 1, n, f) != n) return 4;
  fclose(f);
  size_t nchunks = (n + chunk - 1) / chunk, cap = ZSTD_compressBound(chunk) + BLOSC_MAX_OVERHEAD;
  unsigned char *comp = malloc(nchunks * cap);
  size_t *clen = calloc(nchunks, sizeof(size_t));
  ZSTD_CCtx *cctx = ZSTD_createCCtx();
  ZSTD_DCtx *dctx = ZSTD_createDCtx();
  double best_c = 1e9, best_d = 1e9;
  size_t total = 0;
  for (int r = 0; r < reps; r++) {
    double t0 = now();
    total = 0;
    for (size_t i = 0; i < nchunks; i++) {
      size_t len = i + 1 < nchunks ? chunk : n - i * chunk;
      unsigned char *out = comp + i * cap;
      if (is_zstd) {
        ZSTD_CCtx_reset(cctx, ZSTD_reset_session_and_parameters);
        ZSTD_CCtx_setParameter(cctx, ZSTD_c_compressionLevel, 5);
        clen[i] = ZSTD_compress2(cctx, out, cap, src + i * chunk, len);
      } else {
        clen[i] = (size_t)blosc_compress_ctx(clevel, 1, typesize, len, src + i * chunk, out, cap, "zstd", 0, 1);
      }
      total += clen[i];
    }
    double t1 = now();
    for (size_t i = 0; i < nchunks; i++) {
      size_t len = i + 1 < nchunks ? chunk : n - i * chunk;
      size_t got = is_zstd ? ZSTD_decompressDCtx(dctx, back, chunk, comp + i * cap, clen[i])
                           : (size_t)blosc_decompress_ctx(comp + i * cap, back, chunk, 1);
      if (got != len) return 5;
    }
    double t2 = now();
    for (size_t i = 0; i < nchunks && r == 0; i++) { /* untimed: the round trip is exact */
      size_t len = i + 1 < nchunks ? chunk : n - i * chunk;
      if (is_zstd) ZSTD_decompressDCtx(dctx, back, chunk, comp + i * cap, clen[i]);
      else blosc_decompress_ctx(comp + i * cap, back, chunk, 1);
      if (memcmp(back, src + i * chunk, len) != 0) return 6;
    }
    if (t1 - t0 < best_c) best_c = t1 - t0;
    if (t2 - t1 < best_d) best_d = t2 - t1;
  }
  printf("%.1f %.1f %zu\n", n / best_c / 1e6, n / best_d / 1e6, total);
  return 0;
}
