{
  "variables": {
    "sanitize%": 0
  },
  "targets": [
    {
      "target_name": "zstream_fileio",
      "sources": [
        "native/addon.c",
        "native/file-ops.c",
        "native/io-threads.c"
      ],
      "cflags": [
        "-O2",
        "-Wall",
        "-Wextra"
      ],
      "cflags_c": [
        "-std=gnu11"
      ],
      "defines": [
        "NAPI_VERSION=8"
      ],
      "libraries": [
        "-lpthread"
      ],
      "conditions": [
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
