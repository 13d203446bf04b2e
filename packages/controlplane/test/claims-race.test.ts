import assert from "node:assert/strict";
import { type ChildProcess, fork } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import fc from "fast-check";
import { claimKey } from "../src/layout.js";

const RACER = fileURLToPath(new URL("./fixtures/claim-racer.js", import.meta.url));
const ROUNDS = 200;

function next(child: ChildProcess, type: string): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    const onMessage = (m: Record<string, unknown>) => {
      child.off("exit", onExit);
      if (m.type === "error") reject(new Error(String(m.error)));
      else if (m.type !== type) reject(new Error(`expected ${type}, got ${JSON.stringify(m)}`));
      else resolve(m);
    };
    const onExit = (code: number | null) => reject(new Error(`racer exited (${code}) waiting for ${type}`));
    child.once("message", onMessage);
    child.once("exit", onExit);
  });
}

async function readOwner(root: string): Promise<string | undefined> {
  const text = await readFile(join(root, claimKey("race:zarr_append:g")), "utf8").catch(() => undefined);
  return text === undefined ? undefined : (JSON.parse(text) as { owner_id: string }).owner_id;
}

test(`claims: two processes x ${ROUNDS} rounds of acquisition, heartbeats, stalls and clears with a clock skewed +-300 s never have two holders`, async (t) => {
  const root = await mkdtemp(join(tmpdir(), "zs-claim-race-"));
  const names = ["p0", "p1"] as const;
  const kids = names.map((n) => fork(RACER, [root, n], { stdio: ["ignore", "inherit", "inherit", "ipc"] }));
  try {
    await Promise.all(kids.map((k) => next(k, "ready")));
    // Each round: whether the current holder stalls past the stale threshold, whether each process
    // contends (clears a claim it observes silent), and which sign the skewed process's clock offset takes.
    const plan = fc.sample(
      fc.record({
        stallHolder: fc.boolean(),
        contend: fc.tuple(fc.boolean(), fc.boolean()),
        skew: fc.constantFrom(300, -300),
      }),
      { numRuns: ROUNDS, seed: 1717 },
    );
    let takeovers = 0;
    let lastHolder: number | undefined;
    for (const [r, step] of plan.entries()) {
      const stalling = step.stallHolder ? lastHolder : undefined;
      const acts: Promise<unknown>[] = [];
      // A stalling holder gets its message first, so its heartbeats have stopped when the other contends.
      for (const i of stalling === 1 ? [1, 0] : [0, 1]) {
        const k = kids[i]!;
        acts.push(next(k, "acted"));
        k.send({
          type: "act",
          skewS: i === 0 ? step.skew : 0,
          stallMs: stalling === i ? 600 : 0,
          contend: step.contend[i],
        });
        if (stalling === i) await sleep(50);
      }
      await Promise.all(acts);
      const held: boolean[] = [];
      for (const k of kids) {
        const checked = next(k, "checked");
        k.send({ type: "check" });
        held.push((await checked).held as boolean);
      }
      const owner = await readOwner(root);
      assert.ok(!(held[0] && held[1]), `round ${r}: both processes pass the claim fence`);
      for (const [i, h] of held.entries()) {
        if (h) assert.equal(owner, names[i], `round ${r}: ${names[i]} holds but the claim names ${owner}`);
      }
      const holder = held[0] ? 0 : held[1] ? 1 : undefined;
      if (holder !== undefined && lastHolder !== undefined && holder !== lastHolder) takeovers++;
      if (holder !== undefined) lastHolder = holder;
    }
    t.diagnostic(`${takeovers} takeovers in ${ROUNDS} rounds`);
    // How many clears succeed depends on timing (a stalled holder's own timestamps, skewed, must look
    // stale too); that clearing was raced at all is what the run must show.
    let tried = 0;
    for (const k of kids) {
      const acted = next(k, "acted");
      k.send({ type: "act", skewS: 0, stallMs: 0, contend: false });
      tried += ((await acted).clearsTried as number) ?? 0;
    }
    assert.ok(tried >= 20, `clears were tried in only ${tried} rounds: the race did not exercise clearing`);
  } finally {
    for (const k of kids) if (k.connected) k.send({ type: "exit" });
    await Promise.all(
      kids.map((k) => new Promise((r) => (k.exitCode !== null ? r(null) : k.once("exit", r)))),
    );
    await rm(root, { recursive: true, force: true });
  }
});
