import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import {
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  symlinkSync,
  unlinkSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { after, test } from "node:test";
import { fileURLToPath } from "node:url";
import {
  directFileWriter,
  type FileRangeReader,
  fileIoBackend,
  fileRangeReader,
  fileStatter,
  pinnedFileReader,
} from "../src/index.js";
import { nodeFsPinnedFile, nodeFsRangeReader, nodeFsWriter } from "../src/node-fs.js";

// Inside the package rather than os.tmpdir(): a tmpfs /tmp keeps every page in memory whatever we do,
// and the page-cache assertion below is about a disk filesystem.
const dir = mkdtempSync(join(fileURLToPath(new URL("../..", import.meta.url)), ".direct-write-"));
after(() => rmSync(dir, { recursive: true, force: true }));

function writer() {
  assert.equal(fileIoBackend().backend, "native", `the addon is not built: ${fileIoBackend().reason}`);
  return directFileWriter();
}

/** Bytes at an odd address (a subarray), so the addon cannot write them in place. */
function pattern(n: number): Uint8Array {
  const b = new Uint8Array(n + 3).subarray(3);
  for (let i = 0; i < n; i++) b[i] = (i * 7919 + (i >> 12)) & 255;
  return b;
}

const native = () => ({ write: writer(), read: fileRangeReader(), pinned: pinnedFileReader() });
const nodeFs = () => ({ write: nodeFsWriter, read: nodeFsRangeReader, pinned: nodeFsPinnedFile });

for (const [name, impl] of [
  ["native", native],
  ["node:fs", nodeFs],
] as const) {
  test(`direct write [${name}]: every size around the 4 KiB block and the 2 MiB bounce buffer reads back exactly`, async () => {
    const { write } = impl();
    for (const n of [
      0,
      1,
      4095,
      4096,
      4097,
      (2 << 20) - 1,
      2 << 20,
      (2 << 20) + 4096 + 5,
      (5 << 20) + 4099,
    ]) {
      const path = join(dir, `${name}-size-${n}`);
      const bytes = pattern(n);
      await write(path, bytes);
      const back = readFileSync(path);
      assert.equal(back.length, n, `size ${n}`);
      assert.ok(back.equals(bytes), `content of size ${n}`);
    }
  });

  test(`direct write [${name}]: an existing file is refused (EEXIST from open) and left as it was; a missing directory is ENOENT`, async () => {
    const { write } = impl();
    const path = join(dir, `${name}-exists`);
    writeFileSync(path, "keep me");
    await assert.rejects(write(path, pattern(1 << 20)), (err: NodeJS.ErrnoException) => {
      assert.equal(err.code, "EEXIST");
      assert.equal(err.syscall, "open");
      return true;
    });
    assert.equal(readFileSync(path, "utf8"), "keep me");
    await assert.rejects(write(join(dir, "no", "such"), pattern(10)), { code: "ENOENT", syscall: "open" });
  });

  test(`range reader [${name}]: ranges and suffixes clamp to the file, into the start of the caller's buffer`, async () => {
    await checkRanges(impl().read, join(dir, `${name}-ranges`));
  });

  test(`pinned file [${name}]: reads as the range reader does`, async () => {
    const pin = impl().pinned;
    await checkRanges(
      (path, position, length, fromEnd, into, beneath) => {
        const file = pin(path, beneath);
        return file.read(position, length, fromEnd, into).finally(() => file.close());
      },
      join(dir, `${name}-pinned-ranges`),
    );
  });

  test(`pinned file [${name}]: after the first read, a rename over the path or an unlink does not change what it reads`, async () => {
    const path = join(dir, `${name}-pinned`);
    const old = pattern(5000);
    writeFileSync(path, old);
    const file = impl().pinned(path);
    const into = new Uint8Array(5000);
    try {
      assert.deepEqual(await file.read(0, 100, true, into), [100, 5000]);
      writeFileSync(`${path}.new`, pattern(7000).reverse());
      renameSync(`${path}.new`, path);
      assert.deepEqual(await file.read(10, 20, false, into), [20, 5000], "the open file's size");
      assert.deepEqual(into.subarray(0, 20), old.subarray(10, 30));
      unlinkSync(path);
      assert.deepEqual(
        await Promise.all([file.read(0, 8, true, into), file.read(0, 1, false, new Uint8Array(1))]),
        [
          [8, 5000],
          [1, 5000],
        ],
      );
      assert.deepEqual(into.subarray(0, 8), old.subarray(4992));
    } finally {
      await file.close();
    }
  });

  test(`pinned file [${name}]: a first read that finds nothing leaves nothing open; a later read opens the path`, async () => {
    const path = join(dir, `${name}-pinned-late`);
    const file = impl().pinned(path);
    const into = new Uint8Array(4);
    await assert.rejects(file.read(0, 4, false, into), { code: "ENOENT" });
    writeFileSync(path, "abcd");
    assert.deepEqual(await file.read(0, 4, false, into), [4, 4]);
    await file.close();
    const fds = readdirSync("/proc/self/fd").length;
    for (let i = 0; i < 20; i++) {
      const f = impl().pinned(path);
      await f.read(0, 4, false, into);
      await f.close();
    }
    assert.ok(readdirSync("/proc/self/fd").length <= fds, "every pinned file closed its descriptor");
  });

  test(`confined [${name}]: below the root no symbolic link is followed (ELOOP), above it one is; a FIFO answers at once`, async () => {
    const { write, read, pinned } = impl();
    // root/in/f is a file; root/out -> outside (a directory link), root/in/lf -> outside/secret (a file link)
    const base = join(dir, `${name}-confined`);
    const root = join(base, "root");
    const outside = join(base, "outside");
    mkdirSync(join(root, "in"), { recursive: true });
    mkdirSync(outside, { recursive: true });
    writeFileSync(join(outside, "secret"), "SECRET");
    writeFileSync(join(root, "in", "f"), "inside");
    symlinkSync(outside, join(root, "out"));
    symlinkSync(join(outside, "secret"), join(root, "in", "lf"));
    // The root itself may be reached through a link: only what lies below it is confined.
    symlinkSync(root, join(base, "alias"));
    const alias = join(base, "alias");
    const into = new Uint8Array(64);
    const pinRead = async (path: string, beneath: number) => {
      const file = pinned(path, beneath);
      return file.read(0, 64, false, into).finally(() => file.close());
    };
    for (const r of [alias, root]) {
      const n = r.length;
      assert.deepEqual(await read(`${r}/in/f`, 0, 64, false, into, n), [6, 6]);
      assert.deepEqual(await pinRead(`${r}/in/f`, n), [6, 6]);
      for (const path of [`${r}/out/secret`, `${r}/in/lf`]) {
        await assert.rejects(read(path, 0, 64, false, into, n), { code: "ELOOP" }, path);
        await assert.rejects(pinRead(path, n), { code: "ELOOP" }, path);
      }
      await assert.rejects(write(`${r}/out/new-${n}`, pattern(5000), n), { code: "ELOOP" });
      // O_EXCL never follows a link in the last place: the name is taken.
      await assert.rejects(write(`${r}/in/lf`, pattern(5000), n), { code: "EEXIST" });
      await write(`${r}/in/new-${n}`, pattern(5000), n);
      assert.deepEqual(new Uint8Array(readFileSync(join(root, "in", `new-${n}`))), pattern(5000));
    }
    assert.deepEqual(readdirSync(outside), ["secret"], "nothing was created outside");
    assert.equal(readFileSync(join(outside, "secret"), "utf8"), "SECRET");
    // Without a root (beneath 0) paths open as given, as before.
    assert.deepEqual(await read(join(root, "out", "secret"), 0, 64, false, into), [6, 6]);
    // A FIFO with no writer: O_NONBLOCK opens it at once, and it is not a regular file.
    const fifo = join(root, "in", "fifo");
    execFileSync("mkfifo", [fifo]);
    const started = Date.now();
    assert.deepEqual(await read(fifo, 0, 4, false, into, root.length), [0, -1]);
    assert.deepEqual(await pinRead(fifo, root.length), [0, -1]);
    assert.ok(Date.now() - started < 2000, "the FIFO did not block the read");
  });
}

async function checkRanges(read: FileRangeReader, path: string) {
  const bytes = pattern(10_000);
  writeFileSync(path, bytes);
  const into = new Uint8Array(20_000).fill(1);
  assert.deepEqual(await read(path, 100, 50, false, into), [50, 10_000]);
  assert.deepEqual(into.subarray(0, 50), bytes.subarray(100, 150));
  assert.equal(into[50], 1, "nothing written past what was read");
  assert.deepEqual(await read(path, 9_990, 500, false, into), [10, 10_000], "clamped at the end");
  assert.deepEqual(into.subarray(0, 10), bytes.subarray(9_990));
  assert.deepEqual(await read(path, 20_000, 5, false, into), [0, 10_000], "past the end");
  assert.deepEqual(await read(path, 0, 300, true, into), [300, 10_000]);
  assert.deepEqual(into.subarray(0, 300), bytes.subarray(9_700));
  assert.deepEqual(
    await read(path, 0, 50_000, true, into.subarray(0, 10_000)),
    [10_000, 10_000],
    "whole file",
  );
  assert.deepEqual(await read(path, 0, 50_000, true, new Uint8Array(9_999)), [-1, 10_000], "into too small");
  assert.deepEqual(await read(dir, 0, 4, false, into), [0, -1], "a directory is not a file");
  await assert.rejects(read(join(dir, "nope"), 0, 4, false, into), { code: "ENOENT", syscall: "open" });
}

test("direct write [native]: the written bytes are not left in the page cache, unlike a buffered write", async () => {
  const n = (8 << 20) + 100;
  const direct = join(dir, "cache-direct");
  const buffered = join(dir, "cache-buffered");
  await writer()(direct, pattern(n));
  writeFileSync(buffered, pattern(n));
  const resident = execFileSync("fincore", ["--bytes", "--noheadings", "--output", "RES", direct, buffered])
    .toString()
    .trim()
    .split("\n")
    .map(Number);
  assert.equal(resident.length, 2);
  // At most the buffered tail's page of the direct file; the buffered file is all there.
  assert.ok(resident[0]! <= 4096, `direct write left ${resident[0]} bytes cached`);
  assert.ok(resident[1]! >= n - 4096, `buffered write left only ${resident[1]} bytes cached`);
});

test("addon: arguments that are not a path, bytes or non-negative numbers are a TypeError before any I/O", () => {
  const { write, read } = native();
  assert.throws(() => write("a\0b", pattern(10)), TypeError);
  assert.throws(() => write("", pattern(10)), TypeError);
  assert.throws(() => write(join(dir, "x"), [1, 2, 3] as unknown as Uint8Array), TypeError);
  assert.throws(() => read(join(dir, "x"), -1, 4, false, new Uint8Array(4)), TypeError);
  assert.throws(
    () => read(join(dir, "x"), 0, 4, false, new Uint16Array(4) as unknown as Uint8Array),
    TypeError,
  );
});

test("confined stat [native]: an lstat's fields; a link in the last place is reported, one on the way is ELOOP", async () => {
  const stat = fileStatter();
  assert.ok(stat, `the addon is not built: ${fileIoBackend().reason}`);
  const base = join(dir, "stat");
  const root = join(base, "root");
  mkdirSync(join(root, "in"), { recursive: true });
  mkdirSync(join(base, "outside"), { recursive: true });
  writeFileSync(join(root, "in", "f"), "twelve bytes");
  writeFileSync(join(base, "outside", "secret"), "SECRET");
  symlinkSync(join(base, "outside"), join(root, "out"));
  symlinkSync(join(base, "outside", "secret"), join(root, "in", "lf"));
  symlinkSync(root, join(base, "alias"));
  for (const r of [root, join(base, "alias")]) {
    const n = r.length;
    const want = lstatSync(join(root, "in", "f"), { bigint: true });
    assert.deepEqual(await stat(`${r}/in/f`, n), {
      kind: "file",
      ino: want.ino,
      size: 12,
      mtimeNs: want.mtimeNs,
    });
    assert.equal((await stat(`${r}/in/lf`, n)).kind, "link", "the last link is not followed");
    assert.equal((await stat(`${r}/in`, n)).kind, "other");
    await assert.rejects(stat(`${r}/out/secret`, n), { code: "ELOOP", syscall: "stat" });
    await assert.rejects(stat(`${r}/in/nope`, n), { code: "ENOENT" });
    await assert.rejects(stat(`${r}/in/f/g`, n), { code: "ENOTDIR" });
  }
  // Without a root (beneath 0) the path is lstat'ed as given.
  assert.equal((await stat(join(root, "out", "secret"))).kind, "file");
  assert.throws(() => stat("a\0b"), TypeError);
});

test("file I/O threads: worker threads that load the addon, exit early or are terminated mid-I/O end cleanly", () => {
  // The I/O threads outlive any one worker, and Node unloads an addon when the last worker using it
  // ends: this failed with SIGSEGV before the addon pinned itself (pin_addon in io-threads.c).
  const script = `
    const { Worker } = await import("node:worker_threads");
    const src = \`
      const c = await import("@zarr-stream/fileio");
      const { workerData: path } = await import("node:worker_threads");
      const read = c.fileRangeReader(), write = c.directFileWriter();
      const big = new Uint8Array(4 << 20).fill(3);
      const jobs = [];
      for (let i = 0; i < 8; i++) {
        jobs.push(read(path, 0, 10, false, new Uint8Array(10)));
        jobs.push(write(path + "-w" + Math.random(), big));
      }
      if (process.env.WAIT === "1") await Promise.all(jobs);
      process.exit(0);
    \`;
    for (let k = 0; k < 4; k++) {
      const workerData = ${JSON.stringify(join(dir, "worker"))};
      const a = new Worker(src, { eval: true, workerData, env: { ...process.env, WAIT: String(k % 2) } });
      await new Promise((res) => a.on("exit", res));
      const b = new Worker(src, { eval: true, workerData });
      setTimeout(() => b.terminate(), 5);
      await new Promise((res) => b.on("exit", res));
    }
    console.log("workers done");`;
  writeFileSync(join(dir, "worker"), "0123456789");
  const res = spawnSync(process.execPath, ["--input-type=module", "-e", script], {
    encoding: "utf8",
    cwd: fileURLToPath(new URL("../..", import.meta.url)),
  });
  assert.equal(res.signal, null, `killed by ${res.signal}: ${res.stderr.slice(-2000)}`);
  assert.equal(res.status, 0, res.stderr.slice(-2000));
  assert.equal(res.stdout.trim(), "workers done");
});

test("addon: a position or length that is not a whole number is a TypeError before any I/O", async () => {
  // A fractional suffix length put the start between two bytes: pread began at the byte before it and
  // read one byte short of the end, resolving as if it had read the file's last bytes.
  const { read } = native();
  const path = join(dir, "fractional");
  writeFileSync(path, pattern(100));
  assert.throws(() => read(path, 0, 10.5, true, new Uint8Array(20)), TypeError);
  assert.throws(() => read(path, 1.5, 10, false, new Uint8Array(20)), TypeError);
  assert.throws(() => read(path, 2 ** 53, 10, false, new Uint8Array(20)), TypeError);
  assert.deepEqual(await read(path, 0, 10, true, new Uint8Array(20)), [10, 100]);
});
