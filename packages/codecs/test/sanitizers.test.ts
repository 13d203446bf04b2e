import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { cpSync, existsSync, mkdtempSync, rmSync, symlinkSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { after, test } from "node:test";
import { fileURLToPath } from "node:url";

/*
 * The codec tests once more against an addon built with AddressSanitizer and UBSan (binding.gyp's
 * `sanitize` flag): the fuzzer's mutated frames, the c-blosc interop corpus, the corruption and round
 * trip suites, decodeBoxes with a shard's frames split over the pool (damaged frames included), and the
 * reuse of decoded results' memory. Any read or write outside a buffer, or undefined behaviour, aborts
 * the child run.
 */

const pkg = fileURLToPath(new URL("../..", import.meta.url));
const work = mkdtempSync(join(tmpdir(), "zs-asan-"));
after(() => rmSync(work, { recursive: true, force: true }));

function gcc(args: string[]): string {
  return spawnSync("gcc", args, { encoding: "utf8" }).stdout.trim();
}

test(
  "sanitizers: the codec suites pass against an ASan+UBSan build of the addon",
  { timeout: 1_800_000 },
  () => {
    const zstd = join(pkg, ".zstd-src");
    assert.ok(existsSync(zstd), "the addon build fetched the zstd sources");
    cpSync(join(pkg, "binding.gyp"), join(work, "binding.gyp"));
    cpSync(join(pkg, "native"), join(work, "native"), { recursive: true });
    symlinkSync(zstd, join(work, ".zstd-src"));
    const gyp = createRequire(import.meta.url).resolve("node-gyp/bin/node-gyp.js");
    const nodedir = dirname(dirname(process.execPath));
    for (const step of ["configure", "build"]) {
      const defs = step === "configure" ? ["--", "-Dzstd_src=.zstd-src/1.5.7", "-Dsanitize=1"] : [];
      const r = spawnSync(process.execPath, [gyp, step, `--nodedir=${nodedir}`, "--jobs=2", ...defs], {
        cwd: work,
        encoding: "utf8",
      });
      assert.equal(r.status, 0, `node-gyp ${step}: ${r.stderr}`);
    }
    const addon = join(work, "build", "Release", "zstream_codecs.node");
    const undefinedSymbols = spawnSync("nm", ["-D", "--undefined-only", addon], { encoding: "utf8" }).stdout;
    assert.match(undefinedSymbols, /__asan_/, "the addon under test is instrumented");
    assert.match(undefinedSymbols, /__ubsan_/, "the addon under test is instrumented");
    const libasan = gcc(["-print-file-name=libasan.so"]);
    const libubsan = gcc(["-print-file-name=libubsan.so"]);
    assert.ok(existsSync(libasan), "gcc ships libasan");
    const suites = [
      "fuzz",
      "blosc-interop",
      "corruption",
      "roundtrip",
      "encode-into",
      "copy-boxes",
      "decode-boxes-batch",
      "result-pool",
      "lone-call",
    ].map((s) => join(pkg, "dist", "test", `${s}.test.js`));
    const r = spawnSync(process.execPath, ["--test", "--test-concurrency=1", ...suites], {
      encoding: "utf8",
      maxBuffer: 1 << 26,
      env: {
        ...process.env,
        NODE_TEST_CONTEXT: undefined, // else the child reports to this runner in its own protocol, not TAP
        ZSTREAM_ADDON_PATH: addon,
        ZSTREAM_FUZZ_RUNS: "300",
        LD_PRELOAD: [libasan, libubsan].join(":"),
        // Node itself is not instrumented and keeps memory until exit: leaks are not the question here.
        ASAN_OPTIONS: "detect_leaks=0:abort_on_error=1",
        UBSAN_OPTIONS: "print_stacktrace=1:halt_on_error=1",
      },
    });
    const report = `${r.stdout}\n${r.stderr}`;
    assert.doesNotMatch(report, /AddressSanitizer|runtime error:/, report.slice(-4000));
    assert.equal(r.status, 0, report.slice(-4000));
    assert.match(r.stdout, /# fail 0/);
  },
);
