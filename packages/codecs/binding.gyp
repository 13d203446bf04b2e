{
  "variables": {
    "zstd_src%": "",
    "sanitize%": 0
  },
  "targets": [
    {
      "target_name": "zstream_codecs",
      "sources": [
        "native/addon.c",
        "native/async-jobs.c",
        "native/box-copy.c",
        "native/codec-ops.c",
        "native/napi-args.c",
        "native/result-pool.c",
        "native/blosc1.c",
        "native/shuffle.c",
        "native/crc32c.c"
      ],
      "cflags": [
        "-O3",
        "-Wall",
        "-Wextra"
      ],
      "cflags_c": [
        "-std=gnu11"
      ],
      "defines": [
        "NAPI_VERSION=8"
      ],
      "conditions": [
        [
          "zstd_src!=''",
          {
            "sources": [
              "<(zstd_src)/lib/common/debug.c",
              "<(zstd_src)/lib/common/entropy_common.c",
              "<(zstd_src)/lib/common/error_private.c",
              "<(zstd_src)/lib/common/fse_decompress.c",
              "<(zstd_src)/lib/common/pool.c",
              "<(zstd_src)/lib/common/threading.c",
              "<(zstd_src)/lib/common/xxhash.c",
              "<(zstd_src)/lib/common/zstd_common.c",
              "<(zstd_src)/lib/compress/fse_compress.c",
              "<(zstd_src)/lib/compress/hist.c",
              "<(zstd_src)/lib/compress/huf_compress.c",
              "<(zstd_src)/lib/compress/zstd_compress.c",
              "<(zstd_src)/lib/compress/zstd_compress_literals.c",
              "<(zstd_src)/lib/compress/zstd_compress_sequences.c",
              "<(zstd_src)/lib/compress/zstd_compress_superblock.c",
              "<(zstd_src)/lib/compress/zstd_double_fast.c",
              "<(zstd_src)/lib/compress/zstd_fast.c",
              "<(zstd_src)/lib/compress/zstd_lazy.c",
              "<(zstd_src)/lib/compress/zstd_ldm.c",
              "<(zstd_src)/lib/compress/zstd_opt.c",
              "<(zstd_src)/lib/compress/zstd_preSplit.c",
              "<(zstd_src)/lib/decompress/huf_decompress.c",
              "<(zstd_src)/lib/decompress/huf_decompress_amd64.S",
              "<(zstd_src)/lib/decompress/zstd_ddict.c",
              "<(zstd_src)/lib/decompress/zstd_decompress.c",
              "<(zstd_src)/lib/decompress/zstd_decompress_block.c"
            ],
            "include_dirs": [
              "<(zstd_src)/lib"
            ],
            "defines": [
              "XXH_NAMESPACE=ZSTD_",
              "ZSTD_NO_TRACE",
              "ZSTREAM_ZSTD_COMPILED_IN",
              "ZSTDLIB_VISIBLE=",
              "ZSTDERRORLIB_VISIBLE="
            ],
            "cflags": [
              "-fvisibility=hidden"
            ]
          },
          {
            "libraries": [
              "-lzstd"
            ]
          }
        ],
        [
          "sanitize==1",
          {
            "cflags": [
              "-fsanitize=address,undefined",
              "-fno-sanitize-recover=undefined",
              "-fno-omit-frame-pointer",
              "-g"
            ],
            "ldflags": [
              "-fsanitize=address,undefined"
            ]
          }
        ]
      ]
    }
  ]
}
