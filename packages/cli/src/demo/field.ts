/**
 * The demo's synthetic but physical-looking fields, pure functions of (record time, grid point) plus a
 * per-writer random stream, so the read-back check can regenerate exactly what each writer wrote.
 */
import type { Region } from "@zarr-stream/spec";
import { SchemaError } from "@zarr-stream/spec";

const DEG = Math.PI / 180;
export const DAY = 86400;

/** Cell-centre latitudes, south to north (degrees_north). */
export function latitudes(n: number): number[] {
  return Array.from({ length: n }, (_, i) => -90 + ((i + 0.5) * 180) / n);
}

/** Cell-centre longitudes, 0 to 360 (degrees_east). */
export function longitudes(n: number): number[] {
  return Array.from({ length: n }, (_, j) => ((j + 0.5) * 360) / n);
}

/** Continents of a made-up planet: smooth blobs of land, plus a polar cap. */
export function isLand(latDeg: number, lonDeg: number): boolean {
  const p = latDeg * DEG;
  const l = lonDeg * DEG;
  const f =
    Math.sin(2 * l + 0.5) * Math.cos(1.5 * p) +
    0.5 * Math.sin(3 * l + 2 * p) * Math.cos(p) +
    0.4 * Math.sin(5 * l - 1) * Math.cos(2 * p);
  return latDeg < -68 || f > 0.45;
}

/** xorshift128: a model's per-rank RNG, whose 16-byte state is what the demo checkpoints as a blob. */
export class Rng {
  private readonly s: Uint32Array;

  constructor(seed: number) {
    this.s = new Uint32Array(4);
    let x = (seed + 0x9e3779b9) >>> 0;
    for (let i = 0; i < 4; i++) {
      // splitmix32 spreads a small seed over all 128 state bits
      x = (x + 0x9e3779b9) >>> 0;
      let z = x;
      z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
      z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
      this.s[i] = (z ^ (z >>> 16)) >>> 0 || 1;
    }
  }

  /** The generator a checkpointed `stateBytes()` describes (a restarted writer goes on from it). */
  static fromState(bytes: Uint8Array): Rng {
    if (bytes.length !== 16) throw new SchemaError(`an Rng state is 16 bytes, got ${bytes.length}`, "");
    const rng = new Rng(0);
    const view = new DataView(bytes.buffer, bytes.byteOffset, 16);
    for (let i = 0; i < 4; i++) rng.s[i] = view.getUint32(4 * i, true);
    return rng;
  }

  nextU32(): number {
    const s = this.s;
    let t = s[0]!;
    t ^= t << 11;
    t ^= t >>> 8;
    s[0] = s[1]!;
    s[1] = s[2]!;
    s[2] = s[3]!;
    const w = s[3]!;
    s[3] = (w ^ (w >>> 19) ^ t) >>> 0;
    return s[3]!;
  }

  /** Uniform in [-1, 1). */
  symmetric(): number {
    return (this.nextU32() / 2 ** 32) * 2 - 1;
  }

  stateBytes(): Uint8Array {
    const out = new Uint8Array(16);
    const view = new DataView(out.buffer);
    for (let i = 0; i < 4; i++) view.setUint32(4 * i, this.s[i]!, true);
    return out;
  }
}

export interface Grid {
  nLat: number;
  nLon: number;
}

function wrap180(x: number): number {
  return ((((x + 180) % 360) + 360) % 360) - 180;
}

/**
 * Near-surface air temperature (K) at time t over a region: a meridional gradient, a diurnal cycle over
 * land, a warm anomaly advected eastward along a wavering track, and small RNG noise; rounded to 1/64 K
 * as a model would quantise output (which is also what makes it compress).
 */
export function temperature(t: number, grid: Grid, region: Region, rng: Rng): Float32Array {
  const [a0, a1] = region.lat ?? [0, grid.nLat];
  const [o0, o1] = region.lon ?? [0, grid.nLon];
  const lats = latitudes(grid.nLat);
  const lons = longitudes(grid.nLon);
  const out = new Float32Array((a1 - a0) * (o1 - o0));
  const cLon = (30 + (360 * t) / (6 * DAY)) % 360;
  const cLat = 25 + 10 * Math.sin((2 * Math.PI * t) / (2 * DAY));
  const sigma2 = 2 * 10 * 10;
  let k = 0;
  for (let i = a0; i < a1; i++) {
    const lat = lats[i]!;
    const sinP = Math.sin(lat * DEG);
    const cosP = Math.cos(lat * DEG);
    for (let j = o0; j < o1; j++) {
      const lon = lons[j]!;
      let v = 300 - 48 * sinP * sinP;
      if (isLand(lat, lon)) v += 6 * cosP * Math.cos(2 * Math.PI * (t / DAY + lon / 360) - Math.PI);
      const dLon = wrap180(lon - cLon) * cosP;
      const dLat = lat - cLat;
      v += 14 * Math.exp(-(dLat * dLat + dLon * dLon) / sigma2);
      v += 0.3 * rng.symmetric();
      out[k++] = Math.round(v * 64) / 64;
    }
  }
  return out;
}

/** The land mask (1 = land) over a region. */
export function landMask(grid: Grid, region: Region): Uint8Array {
  const [a0, a1] = region.lat ?? [0, grid.nLat];
  const [o0, o1] = region.lon ?? [0, grid.nLon];
  const lats = latitudes(grid.nLat);
  const lons = longitudes(grid.nLon);
  const out = new Uint8Array((a1 - a0) * (o1 - o0));
  let k = 0;
  for (let i = a0; i < a1; i++) for (let j = o0; j < o1; j++) out[k++] = isLand(lats[i]!, lons[j]!) ? 1 : 0;
  return out;
}

/** Record r's time: hourly steps, in "seconds since 2000-01-01 00:00:00". */
export function recordTime(r: number): number {
  return r * 3600;
}
