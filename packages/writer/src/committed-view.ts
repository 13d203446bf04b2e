import { readOutputManifest } from "@zarr-stream/reader";
import { type CommitToken, type OutputManifest, ProtocolError } from "@zarr-stream/spec";
import type { Store } from "@zarr-stream/store";
import { committedIndices } from "./committed-state.js";
import { type CommittedState, stateFromManifest } from "./manifest-doc.js";

async function readCommittedState(store: Store): Promise<CommittedState> {
  return stateFromManifest(await readOutputManifest(store));
}

/**
 * The committed state as this handle knows it: the manifest it last wrote or read. An owner's (or Single
 * writer's) view is exact, since only it commits; see ContributorView for the other writers.
 */
export class CommittedView {
  state: CommittedState;
  manifest: OutputManifest | undefined;

  /**
   * Settles the owner's manifest write of unknown outcome (WriterCore wires it): that write may have
   * committed what the rewrite rule is asked about.
   */
  settle: () => Promise<void> = async () => {};

  constructor(state: CommittedState) {
    this.state = state;
  }

  /** The manifest `manifest`, holding `state`, was written or read: it is the committed state now. */
  adopt(state: CommittedState, manifest: OutputManifest | undefined): void {
    this.state = state;
    this.manifest = manifest;
  }

  isRecordCommitted(index: number): boolean {
    const { entries, nCommitted } = this.state;
    return entries ? entries.at(index)?.committed === true : index < nCommitted;
  }

  isStaticCommitted(name: string): boolean {
    return this.state.staticsCommitted.includes(name);
  }

  /** This handle's token left for the owner: only a contributor's view counts it as committed. */
  noteTokened(_token: CommitToken): void {}

  /** Seed §6.2 rewrite rule: a committed record is invalidated by the owner before it is written again. */
  async assertRecordWritable(index: number): Promise<void> {
    await this.settle();
    if (!this.isRecordCommitted(index)) return;
    await this.recheck();
    if (this.isRecordCommitted(index)) {
      throw new ProtocolError(
        `record ${index} is committed; the owner must invalidate([${index}]) before it is rewritten`,
      );
    }
  }

  async assertStaticWritable(name: string): Promise<void> {
    await this.settle();
    if (!this.isStaticCommitted(name)) return;
    await this.recheck();
    if (this.isStaticCommitted(name))
      throw new ProtocolError(
        `static ${name} is committed; the owner must invalidateStatics(["${name}"]) first`,
      );
  }

  /** Called before a refusal: a view that can lag the store brings itself up to date. */
  protected async recheck(): Promise<void> {}
}

/**
 * A contributor's view (seed §6.2): the manifest it read at join plus the records and statics it has
 * tokened since. The owner may have committed or invalidated meanwhile, so the view re-reads the
 * manifest before it refuses a rewrite.
 */
export class ContributorView extends CommittedView {
  /** Records tokened since the manifest was last read, held committed by the rewrite rule. */
  readonly #tokenedRecords = new Set<number>();
  readonly #tokenedStatics = new Set<string>();
  /**
   * Records of every token this handle posted that its state does not commit yet. A re-read forgets
   * `#tokenedRecords`, but the owner may still commit a token posted before it: the overwrite check
   * counts those commits as seen, so it keeps them here until a read state commits them.
   */
  readonly #posted = new Set<number>();

  constructor(
    state: CommittedState,
    private readonly store: Store,
  ) {
    super(state);
  }

  override isRecordCommitted(index: number): boolean {
    return super.isRecordCommitted(index) || this.#tokenedRecords.has(index);
  }

  override isStaticCommitted(name: string): boolean {
    return super.isStaticCommitted(name) || this.#tokenedStatics.has(name);
  }

  override noteTokened(token: CommitToken): void {
    for (const r of token.records) {
      this.#tokenedRecords.add(r.index);
      this.#posted.add(r.index);
    }
    for (const s of token.statics) this.#tokenedStatics.add(s);
  }

  protected override async recheck(): Promise<void> {
    this.state = await readCommittedState(this.store);
    this.#tokenedRecords.clear();
    this.#tokenedStatics.clear();
    for (const i of this.#posted) if (super.isRecordCommitted(i)) this.#posted.delete(i);
  }

  /**
   * Whether every record the store has committed is one this view holds as committed or one this handle
   * posted a token for: then no commit this contributor did not take part in has happened, and an object
   * another write changed cannot be committed data. The view itself is left as it is: the posted records
   * are what it compares against.
   */
  async sawEveryCommit(): Promise<boolean> {
    const fresh = await readCommittedState(this.store);
    return committedIndices(fresh).every((i) => super.isRecordCommitted(i) || this.#posted.has(i));
  }
}
