import type { Store } from "@zarr-stream/store";
import { ZarrStreamWriter } from "../src/index.js";
import { gridSchema, recordArrays } from "./helpers.js";

/** The crash test's run: 4 writers on a 2x2 lat/lon split, 12 records, a commit every 3. */
export const N_RECORDS = 12;
export const COMMIT_EVERY = 3;
export const SCHEMA = gridSchema({}, true);
export const REGIONS = [
  { lat: [0, 2], lon: [0, 3] },
  { lat: [0, 2], lon: [3, 6] },
  { lat: [2, 4], lon: [0, 3] },
  { lat: [2, 4], lon: [3, 6] },
] as { lat: [number, number]; lon: [number, number] }[];
export const tOf = (r: number) => 60 * (r + 1);

export async function openWriters(store: Store, mode: "create" | "resume"): Promise<ZarrStreamWriter[]> {
  const ownerRole = { kind: "owner", nWriters: 4 } as const;
  const owner =
    mode === "create"
      ? await ZarrStreamWriter.create(store, SCHEMA, ownerRole, REGIONS[0])
      : await ZarrStreamWriter.resume(store, ownerRole, REGIONS[0]);
  const others: ZarrStreamWriter[] = [];
  for (const id of [1, 2, 3]) {
    const role = { kind: "contributor", id } as const;
    others.push(
      mode === "create"
        ? await ZarrStreamWriter.join(store, role, REGIONS[id])
        : await ZarrStreamWriter.resume(store, role, REGIONS[id]),
    );
  }
  return [owner, ...others];
}

/** Writes records from..N_RECORDS-1, committing every COMMIT_EVERY records; reports each commit. */
export async function runFrom(
  writers: ZarrStreamWriter[],
  from: number,
  onCommit: (n: number) => void = () => {},
) {
  const [owner, ...others] = writers as [ZarrStreamWriter, ...ZarrStreamWriter[]];
  for (let r = from; r < N_RECORDS; r++) {
    for (const w of writers) {
      await w.writeRecord(
        tOf(r),
        recordArrays(SCHEMA, r, REGIONS[w.writerId]!, (_, p) => p || w.isOwner),
      );
    }
    if ((r + 1) % COMMIT_EVERY === 0) {
      const tokens = await Promise.all(others.map((w) => w.flush()));
      const receipt = await owner.commit([await owner.flush(), ...tokens]);
      onCommit(receipt.n_committed);
    }
  }
  const last = await Promise.all(others.map((w) => w.flush()));
  for (const w of others) await w.close();
  await owner.close(last);
}
