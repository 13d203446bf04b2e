import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { cpSync, existsSync, mkdtempSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { after, test } from "node:test";
import { fileURLToPath } from "node:url";

/*
 * The file I/O suite once more against an addon built with AddressSanitizer and UBSan (binding.gyp's
 * `sanitize` flag), worker threads that end mid-I/O included: any access outside a buffer, use after
 * free or undefined behaviour aborts the child run.
 */

const pkg = fileURLToPath(new URL("../..", import.meta.url));
const scratch = mkdtempSync(join(tmpdir(), "zs-fileio-asan-"));
after(() => rmSync(scratch, { recursive: true, force: true }));

const runtime = (lib: string) =>
  spawnSync("gcc", [`-print-file-name=${lib}`], { encoding: "utf8" }).stdout.trim();

test(
  "sanitizers: the file I/O suite passes against an ASan+UBSan build of the addon",
  { timeout: 900_000 },
  () => {
    for (const part of ["binding.gyp", "native"])
      cpSync(join(pkg, part), join(scratch, part), { recursive: true });
    const gyp = createRequire(import.meta.url).resolve("node-gyp/bin/node-gyp.js");
    const nodedir = dirname(dirname(process.execPath));
    for (const args of [["configure", "--", "-Dsanitize=1"], ["build"]]) {
      const r = spawnSync(process.execPath, [gyp, args[0]!, `--nodedir=${nodedir}`, ...args.slice(1)], {
        cwd: scratch,
        encoding: "utf8",
      });
      assert.equal(r.status, 0, `node-gyp ${args[0]}: ${r.stderr}`);
    }
    const addon = join(scratch, "build", "Release", "zstream_fileio.node");
    const imports = spawnSync("nm", ["-D", "--undefined-only", addon], { encoding: "utf8" }).stdout;
    assert.match(imports, /__asan_/, "the addon under test is instrumented");
    assert.match(imports, /__ubsan_/, "the addon under test is instrumented");
    const preload = [runtime("libasan.so"), runtime("libubsan.so")];
    assert.ok(preload.every(existsSync), `gcc ships ${preload.join(" and ")}`);
    const r = spawnSync(process.execPath, ["--test", join(pkg, "dist", "test", "file-io.test.js")], {
      encoding: "utf8",
      maxBuffer: 1 << 26,
      env: {
        ...process.env,
        NODE_TEST_CONTEXT: undefined, // else the child reports to this runner in its own protocol, not TAP
        ZSTREAM_FILEIO_ADDON_PATH: addon,
        LD_PRELOAD: preload.join(":"),
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
