import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { it } from "node:test";
import { fileURLToPath } from "node:url";
import { tempRoots } from "@zarr-stream/test-support/temp-dirs";
import { FsStore } from "../src/fs-store.js";
import { crashPayloadSeq } from "./crash-payload.js";

const CHILD = fileURLToPath(new URL("./crash-child.js", import.meta.url));
const KILLS = 32;
const KEY = "var/c/0/0";

interface Round {
  started: boolean;
  lastAcked: number | undefined;
}

/** Runs one child, SIGKILLs it `delayMs` after it reports ready, and returns what it acknowledged. */
function runAndKill(root: string, startSeq: number, delayMs: number): Promise<Round> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(process.execPath, [CHILD, root, KEY, String(startSeq)], {
      stdio: ["ignore", "pipe", "pipe"],
    });
    const round: Round = { started: false, lastAcked: undefined };
    let out = "";
    let err = "";
    child.stderr.on("data", (d) => {
      err += d;
    });
    child.stdout.on("data", (d) => {
      out += d;
      const lines = out.split("\n");
      out = lines.pop() ?? "";
      for (const line of lines) {
        if (line === "started" && !round.started) {
          round.started = true;
          setTimeout(() => child.kill("SIGKILL"), delayMs);
        } else if (line.startsWith("done ")) round.lastAcked = Number(line.slice(5));
      }
    });
    child.on("error", reject);
    child.on("close", (code, signal) => {
      if (signal !== "SIGKILL") reject(new Error(`child ended without the kill (code ${code}): ${err}`));
      else resolvePromise(round);
    });
  });
}

it("§5.4 stage-and-rename survives SIGKILL: after each kill the object is a whole payload, never older than the last acknowledged put, and no staging file is listed", async (t) => {
  const root = tempRoots("store-crash").fresh();
  const store = new FsStore(root);
  let durable: number | undefined; // sequence number of the object last seen on disk
  let nextSeq = 0;
  let acked = 0;
  const began = performance.now();
  for (let kill = 0; kill < KILLS; kill++) {
    // A few kills right at start-up, the rest spread over a handful of 4 MiB rewrites.
    const delayMs = kill % 8 === 0 ? 0 : Math.floor(Math.random() * 40);
    const round = await runAndKill(root, nextSeq, delayMs);
    const bytes = await store.get(KEY);
    const where = `kill ${kill} (delay ${delayMs} ms, acked ${round.lastAcked ?? "none"})`;
    if (round.lastAcked === undefined && durable === undefined) {
      // Nothing was ever acknowledged: absence is allowed, a partial object is not.
      if (bytes !== undefined) assert.equal(crashPayloadSeq(bytes), nextSeq, `${where}: torn first write`);
    } else {
      assert.ok(bytes !== undefined, `${where}: an acknowledged object vanished`);
      const seq = crashPayloadSeq(bytes);
      assert.ok(seq !== undefined, `${where}: the object is not one of the two payloads (torn or mixed)`);
      const floor = round.lastAcked ?? durable!;
      const allowed = round.lastAcked === undefined ? [durable, nextSeq] : [floor, floor + 1];
      assert.ok(
        allowed.includes(seq),
        `${where}: found version ${seq}, expected one of ${allowed.join(", ")}`,
      );
    }
    if (bytes !== undefined) durable = crashPayloadSeq(bytes);
    if (round.lastAcked !== undefined) acked += round.lastAcked - nextSeq + 1;
    nextSeq = Math.max(nextSeq, (round.lastAcked ?? nextSeq - 1) + 1, (durable ?? -1) + 1);
    assert.deepEqual(await store.list(""), bytes === undefined ? [] : [KEY], `${where}: list`);
  }
  const elapsed = performance.now() - began;
  const leftovers = readdirSync(join(root, "var", "c", "0")).filter((n) => n.startsWith(".zs-tmp-")).length;
  t.diagnostic(
    `${KILLS} kills in ${elapsed.toFixed(0)} ms, ${acked} puts acknowledged, ${leftovers} kills left a staging file`,
  );
  // Kills that never land mid-write would prove nothing about atomicity.
  assert.ok(leftovers >= 1, "no kill interrupted a write");
});
