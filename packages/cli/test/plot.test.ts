import assert from "node:assert/strict";
import { readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { readRecord, readStatic } from "@zarr-stream/reader";
import { FsStore } from "@zarr-stream/store";
import { PNG } from "pngjs";
import { colormap } from "../src/picture/colormap.js";
import { plotStore } from "../src/plot/plot.js";
import { SMALL_DEMO, tempDir, zstream, zstreamInProcess } from "./helpers.js";

let root: string;
let store: string;

function decode(path: string): PNG {
  return PNG.sync.read(readFileSync(path));
}

function pixel(png: PNG, x: number, y: number): [number, number, number] {
  const o = (Math.floor(y) * png.width + Math.floor(x)) * 4;
  return [png.data[o]!, png.data[o + 1]!, png.data[o + 2]!];
}

function minMax(a: ArrayLike<number>): [number, number] {
  let lo = Number.POSITIVE_INFINITY;
  let hi = Number.NEGATIVE_INFINITY;
  for (let i = 0; i < a.length; i++) {
    lo = Math.min(lo, a[i]!);
    hi = Math.max(hi, a[i]!);
  }
  return [lo, hi];
}

describe("zstream plot (child process)", () => {
  before(() => {
    root = tempDir("plot");
    store = join(root, "demo.zarr");
    const r = zstream("demo", "--out", store, ...SMALL_DEMO, "--json");
    assert.equal(r.status, 0, r.stderr);
  });
  after(() => rmSync(root, { recursive: true, force: true }));

  it("§7 a 2-D record renders as a heatmap whose colours span exactly the data's range", async () => {
    const out = join(root, "t5.png");
    const r = zstream("plot", store, "--var", "temperature", "--record", "5", "--out", out);
    assert.equal(r.status, 0, r.stderr);
    const png = decode(out);
    // 900 wide by default; 36 x 72 cells keep their 1:2 aspect in the plot area
    assert.match(
      r.stdout,
      new RegExp(
        `heatmap ${png.width}x${png.height}, near-surface air temperature \\(K\\), 2000-01-01 05:00 \\[record 5\\]`,
      ),
    );
    assert.equal(png.width, 900);
    const data = (await readRecord(new FsStore(store), "temperature", 5)).data as Float32Array;
    const [lo, hi] = minMax(data);
    assert.match(r.stdout, new RegExp(`range ${lo} \\.\\. ${hi}`));
    // the same picture in process, for where the plot area is
    const same = await plotStore(new FsStore(store), { variable: "temperature", record: 5 });
    assert.ok(same.png.equals(readFileSync(out)), "the command and plotStore drew different pictures");
    const { x, y, width, height } = same.plot;
    assert.ok(Math.abs(height / width - 0.5) < 0.01);
    const seen = new Set<string>();
    for (let py = y; py < y + height; py++)
      for (let px = x; px < x + width; px++) seen.add(pixel(png, px, py).join(","));
    const viridis = colormap("viridis");
    assert.ok(seen.has(viridis.at(0).join(",")), "the coldest cell is not the low end of the colour map");
    assert.ok(seen.has(viridis.at(1).join(",")), "the warmest cell is not the high end of the colour map");
    assert.ok(seen.size > 50, `only ${seen.size} colours in the field`);
    // north up: the top row is the northernmost (coldest) latitude, the middle rows are warm
    const top = pixel(png, x + width / 2, y + 2);
    const middle = pixel(png, x + width / 2, y + height / 2);
    assert.ok(top[0] + top[1] < middle[0] + middle[1], `top ${top} is not colder than middle ${middle}`);
    // the title is drawn: dark pixels in the rows above the plot
    let ink = 0;
    for (let py = 0; py < y - 4; py++)
      for (let px = 0; px < png.width; px++) if (pixel(png, px, py)[0] < 100) ink++;
    assert.ok(ink > 200, `title has ${ink} dark pixels`);
  });

  it("§7 --slice down to 1-D renders a line plot; a static plots without --record", async () => {
    const out = join(root, "line.png");
    const r = zstream(
      "plot",
      store,
      "--var",
      "temperature",
      "--record",
      "0",
      "--slice",
      "lat=18",
      "--out",
      out,
    );
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /^.*line 900x450, .*lat = 2\.5°N \[18\]/);
    const png = decode(out);
    assert.deepEqual([png.width, png.height], [900, 450]);
    // the line: columns holding pixels of its colour (antialiased edges aside) across the plot
    const blue = new Set<number>();
    for (let y = 0; y < png.height; y++)
      for (let x = 0; x < png.width; x++) {
        const [r, g, b] = pixel(png, x, y);
        if (Math.abs(r - 31) + Math.abs(g - 119) + Math.abs(b - 180) < 30) blue.add(x);
      }
    assert.ok(blue.size >= 700, `line covers ${blue.size} columns`);

    const maskOut = join(root, "mask.png");
    const m = zstream("plot", store, "--var", "land_mask", "--out", maskOut);
    assert.equal(m.status, 0, m.stderr);
    const mask = (await readStatic(new FsStore(store), "land_mask")).data as Uint8Array;
    assert.match(m.stdout, new RegExp(`range ${Math.min(...mask)} \\.\\. ${Math.max(...mask)}`));
    assert.equal(decode(maskOut).width, 900);
  });

  it("§7 --series draws the mean over the committed records against time", () => {
    const out = join(root, "series.png");
    const r = zstream(
      "plot",
      store,
      "--var",
      "temperature",
      "--series",
      "--slice",
      "lat=10:20",
      "--out",
      out,
    );
    assert.equal(r.status, 0, r.stderr);
    assert.match(
      r.stdout,
      /series 900x450, near-surface air temperature \(K\), mean over lat \[10:20\], lon \(unweighted\)/,
    );
    assert.equal(decode(out).width, 900);
  });

  it("§7 plot refuses uncommitted records (3), unknown variables and bad slices (2, usage) with one line", async () => {
    const cases: [string[], number, RegExp][] = [
      [["--var", "temperature", "--record", "12"], 3, /NotCommitted: record 12/],
      [["--var", "pressure", "--record", "0"], 2, /--var pressure: no such variable or static/],
      [["--var", "temperature"], 2, /pass --record I \(or --series\)/],
      [["--var", "land_mask", "--series"], 2, /land_mask is a static: it has no records/],
      [["--var", "temperature", "--record", "0", "--series"], 2, /takes no --record/],
      [["--var", "temperature", "--record", "0", "--slice", "depth=1"], 2, /no non-time dim depth/],
      [["--var", "temperature", "--record", "0", "--slice", "lat=1", "--slice", "lon=2"], 2, /single value/],
      [["--var", "temperature", "--record", "x"], 2, /--record must be an integer/],
      [["--var", "temperature", "--record", "0", "--slice", "lat"], 2, /--slice must be dim=k or dim=a:b/],
    ];
    for (const [args, status, message] of cases) {
      const r = await zstreamInProcess("plot", store, ...args, "--out", join(root, "never.png"));
      assert.equal(r.status, status, `${args.join(" ")}: ${r.stderr}`);
      assert.match(r.stderr, message);
      assert.equal(r.stderr.trim().split("\n").length, 1, r.stderr);
    }
  });
});
