{
  "targets": [
    {
      "target_name": "zstream_codecs",
      "sources": ["native/addon.c", "native/crc32c.c"],
      "cflags": ["-O3", "-Wall", "-Wextra"],
      "cflags_c": ["-std=gnu11"],
      "defines": ["NAPI_VERSION=8"],
      "libraries": ["-lblosc", "-lzstd"]
    }
  ]
}
