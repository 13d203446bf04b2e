import { ClaimLost } from "@zarr-stream/spec";
import type { Store } from "@zarr-stream/store";
import * as claims from "./claims.js";
import type { ClaimDoc, Clock } from "./documents.js";

export interface HeldClaimsOptions {
  store: Store;
  ownerId: string;
  product: string;
  clock: Clock;
  /** Heartbeat timer period; 0 disables the timer. */
  heartbeatIntervalS: number;
  staleThresholdS: number;
  /** Called when a background heartbeat fails (e.g. the claim was cleared by an operator). */
  onHeartbeatError?: (error: unknown) => void;
}

/**
 * The claims this process holds, by full domain, each with its background heartbeat. A claim found lost
 * (cleared or taken over) is forgotten and its timer stopped, so it is never written again. The writes
 * and checks of one claim run one at a time: two heartbeats in flight on the version last written would
 * race, and the loser would take its own claim for lost.
 */
export class HeldClaims {
  readonly #held = new Map<string, claims.HeldClaim>();
  readonly #timers = new Map<string, NodeJS.Timeout>();
  readonly #queues = new Map<string, Promise<unknown>>();

  /** Runs `op` after every earlier operation on `domain` has settled. */
  #serial<T>(domain: string, op: () => Promise<T>): Promise<T> {
    const next = (this.#queues.get(domain) ?? Promise.resolve()).then(op, op);
    const settled = next.catch(() => undefined);
    this.#queues.set(domain, settled);
    void settled.then(() => {
      if (this.#queues.get(domain) === settled) this.#queues.delete(domain);
    });
    return next;
  }

  constructor(private readonly o: HeldClaimsOptions) {}

  /** Create-only acquisition of `domain`, then a background heartbeat (unref'd). */
  async acquire(domain: string): Promise<ClaimDoc> {
    const { store, ownerId, product, clock, heartbeatIntervalS, staleThresholdS } = this.o;
    const held = await claims.acquire(
      store,
      domain,
      { ownerId, product, heartbeatIntervalS, staleThresholdS },
      clock,
    );
    this.#held.set(domain, held);
    this.#stopTimer(domain);
    if (heartbeatIntervalS > 0) {
      const timer = setInterval(() => {
        this.heartbeat(domain).catch((e) => {
          this.#stopTimer(domain);
          this.o.onHeartbeatError?.(e);
        });
      }, heartbeatIntervalS * 1000);
      timer.unref();
      this.#timers.set(domain, timer);
    }
    return held.doc;
  }

  /** Refreshes one claim we hold (a conditional write); a claim we lost is a ClaimLost. */
  heartbeat(domain: string): Promise<ClaimDoc> {
    return this.#serial(domain, async () => {
      try {
        const next = await claims.heartbeatClaim(this.o.store, this.#get(domain), this.o.clock);
        this.#held.set(domain, next);
        return next.doc;
      } catch (e) {
        if (e instanceof ClaimLost) this.#held.delete(domain);
        throw e;
      }
    });
  }

  /** Resolves while the claim is the version this process last wrote; ClaimLost once it is not. */
  assertHeld(domain: string): Promise<void> {
    return this.#serial(domain, () => this.#assertHeld(domain));
  }

  async #assertHeld(domain: string): Promise<void> {
    try {
      await claims.assertHeld(this.o.store, this.#get(domain));
    } catch (e) {
      if (e instanceof ClaimLost) {
        this.#held.delete(domain);
        this.#stopTimer(domain);
      }
      throw e;
    }
  }

  /** Deletes our claim; a claim this process held but lost is a ClaimLost and is left to its new holder. */
  release(domain: string): Promise<void> {
    this.#stopTimer(domain);
    return this.#serial(domain, async () => {
      if (this.#held.has(domain)) {
        await this.#assertHeld(domain);
        this.#held.delete(domain);
      }
      await claims.release(this.o.store, domain, this.o.ownerId, this.o.clock);
    });
  }

  /** Stops every heartbeat; the claims stay held in the store. */
  stopHeartbeats(): void {
    for (const d of [...this.#timers.keys()]) this.#stopTimer(d);
  }

  #get(domain: string): claims.HeldClaim {
    const held = this.#held.get(domain);
    if (!held)
      throw new ClaimLost(`claim ${domain} is not held by ${this.o.ownerId} in this process`, domain);
    return held;
  }

  #stopTimer(domain: string): void {
    const t = this.#timers.get(domain);
    if (t) clearInterval(t);
    this.#timers.delete(domain);
  }
}
