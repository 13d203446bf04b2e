// One writer process driven line by line over stdin, for the zombie and create-race tests: every command
// line gets one reply line on stdout, `ok <json>` or `err <error name> <message>`. Stores are opened by
// URL (file:// or s3://; the S3 endpoint comes from the environment), so nothing is shared with the
// parent but the store itself.
//   open <url> <create|join|resume> <role json> <region json>   (schema: gridSchema())
//   write <t> <r>          writeRecord(t, generator record r over the handle's region)
//   flush                  -> the token
//   commit <tokens json>   owner: flush its own pending data, then commit([own token, ...tokens])
//   drop                   forget the handle (as a preempted job does: no close)
//   exit
import { createInterface } from "node:readline";
import type { CommitToken, Region, Role } from "@zarr-stream/spec";
import { openStore, type Store } from "@zarr-stream/store";
import { ZarrStreamWriter } from "../src/index.js";
import { gridSchema, recordArrays } from "./helpers.js";

const SCHEMA = gridSchema();
let store: Store | undefined;
let w: ZarrStreamWriter | undefined;
let region: Region = {};

const reply = (line: string) => process.stdout.write(`${line}\n`);
const words = (line: string, n: number) => {
  const parts: string[] = [];
  let rest = line;
  for (let i = 0; i < n - 1; i++) {
    const at = rest.indexOf(" ");
    if (at < 0) break;
    parts.push(rest.slice(0, at));
    rest = rest.slice(at + 1);
  }
  parts.push(rest);
  return parts;
};

async function run(line: string): Promise<unknown> {
  const cmd = line.split(" ", 1)[0];
  switch (cmd) {
    case "open": {
      const [, url, mode, roleText, regionText] = words(line, 5);
      (store as { close?: () => void } | undefined)?.close?.();
      store = openStore(url!);
      const role = JSON.parse(roleText!) as Role;
      region = JSON.parse(regionText!) as Region;
      w =
        mode === "create"
          ? await ZarrStreamWriter.create(store, SCHEMA, role, region)
          : mode === "join"
            ? await ZarrStreamWriter.join(store, role, region)
            : await ZarrStreamWriter.resume(store, role, region);
      return w.committedCount;
    }
    case "write": {
      const [, t, r] = words(line, 3);
      const h = w!;
      return h.writeRecord(
        Number(t),
        recordArrays(SCHEMA, Number(r), region, (_, p) => p || h.isOwner),
      );
    }
    case "flush":
      return w!.flush();
    case "commit": {
      const [, tokens] = words(line, 2);
      const own = await w!.flush();
      const receipt = await w!.commit([own, ...(JSON.parse(tokens!) as CommitToken[])]);
      return { commit_seq: receipt.commit_seq, n_committed: receipt.n_committed };
    }
    case "drop":
      w = undefined;
      return null;
    case "exit":
      (store as { close?: () => void } | undefined)?.close?.();
      process.exit(0);
      break;
    default:
      throw new Error(`unknown command ${JSON.stringify(line)}`);
  }
  return null;
}

// Commands run one after another, in the order they arrive.
let queue: Promise<void> = Promise.resolve();
createInterface({ input: process.stdin }).on("line", (line) => {
  queue = queue.then(async () => {
    try {
      reply(`ok ${JSON.stringify((await run(line)) ?? null)}`);
    } catch (err) {
      const e = err as Error;
      reply(`err ${e?.name ?? "Error"} ${String(e?.message ?? e).replace(/\n/g, " ")}`);
    }
  });
});
reply("ready");
