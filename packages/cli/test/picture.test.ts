import assert from "node:assert/strict";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { readRecord } from "@zarr-stream/reader";
import type { StreamSchema } from "@zarr-stream/spec";
import { FsStore } from "@zarr-stream/store";
import { ZarrStreamWriter } from "@zarr-stream/writer";
import pixelmatch from "pixelmatch";
import { PNG } from "pngjs";
import { colormap } from "../src/picture/colormap.js";
import type { Picture } from "../src/picture/frame.js";
import { renderHeatmap } from "../src/picture/heatmap.js";
import { prettyUnits } from "../src/picture/labels.js";
import { renderLine } from "../src/picture/line.js";
import { FONT_FAMILY, rasterizePixels } from "../src/picture/resvg.js";
import { numberTicks, timeTicks } from "../src/picture/ticks.js";
import { plotStore } from "../src/plot/plot.js";
import { tempDir, zstreamInProcess } from "./helpers.js";

/** The committed reference pictures: packages/cli/test/pictures (this file runs from dist/test). */
const REFERENCES = fileURLToPath(new URL("../../test/pictures/", import.meta.url));
/** ZSTREAM_UPDATE_PICTURES=1 rewrites the references from this run (then look at them before committing). */
const UPDATE = process.env.ZSTREAM_UPDATE_PICTURES === "1";

let root: string;

function decode(png: Buffer): PNG {
  return PNG.sync.read(png);
}

function pixel(png: PNG, x: number, y: number): [number, number, number] {
  const o = (Math.floor(y) * png.width + Math.floor(x)) * 4;
  return [png.data[o]!, png.data[o + 1]!, png.data[o + 2]!];
}

/**
 * Compares a picture with its committed reference: same size, and at most 0.5 % of pixels differing by
 * more than pixelmatch's perceptual threshold (antialiasing differences are not counted). A mismatch
 * leaves the picture and a diff image beside the test's temp files and names them.
 */
function matchesReference(name: string, pic: Picture): void {
  const file = join(REFERENCES, `${name}.png`);
  if (UPDATE || !existsSync(file)) {
    assert.ok(UPDATE, `no reference ${file}: run with ZSTREAM_UPDATE_PICTURES=1 and look at it`);
    mkdirSync(REFERENCES, { recursive: true });
    writeFileSync(file, pic.png);
    return;
  }
  const want = decode(readFileSync(file));
  const got = decode(pic.png);
  assert.deepEqual([got.width, got.height], [want.width, want.height], `${name}: size`);
  const diff = new PNG({ width: got.width, height: got.height });
  const bad = pixelmatch(want.data, got.data, diff.data, got.width, got.height, { threshold: 0.1 });
  const limit = Math.ceil(got.width * got.height * 0.005);
  if (bad > limit) {
    // kept after the run (the test's temp root is not), for a person to look at
    const keep = mkdtempSync(join(tmpdir(), `zs-picture-${name}-`));
    writeFileSync(join(keep, "actual.png"), pic.png);
    writeFileSync(join(keep, "diff.png"), PNG.sync.write(diff));
    assert.fail(`${name}: ${bad} pixels differ from the reference (limit ${limit}); see ${keep}`);
  }
}

/** A field with a north-south gradient, a warm blob and a NaN cell: the features a heatmap must show. */
function syntheticField(ny: number, nx: number): Float64Array {
  const v = new Float64Array(ny * nx);
  for (let i = 0; i < ny; i++) {
    for (let j = 0; j < nx; j++) {
      const lat = -90 + ((i + 0.5) * 180) / ny;
      const lon = ((j + 0.5) * 360) / nx;
      const blob = 8 * Math.exp(-(((lat - 20) / 25) ** 2 + ((lon - 120) / 40) ** 2));
      v[i * nx + j] = 30 * Math.cos((lat * Math.PI) / 180) - 5 + blob;
    }
  }
  v[3 * nx + 4] = Number.NaN;
  return v;
}

const lats = (n: number) => Float64Array.from({ length: n }, (_, i) => -90 + ((i + 0.5) * 180) / n);
const lons = (n: number) => Float64Array.from({ length: n }, (_, j) => ((j + 0.5) * 360) / n);

interface StoreSpec {
  dims: [string, number][];
  coords?: StreamSchema["coords"];
  attrs?: Record<string, unknown>;
  timeUnits?: string;
  calendar?: string;
  /** Record r's values, C order over the non-time dims. */
  records: Float64Array[];
}

/** A committed store of one float64 variable `v` with the given dims (after time), coordinates and attributes. */
async function makeStore(name: string, spec: StoreSpec): Promise<FsStore> {
  const dir = join(root, `${name}.zarr`);
  const shape = Object.fromEntries(spec.dims);
  const schema: StreamSchema = {
    dims: [["time", 0], ...spec.dims],
    time_dim: "time",
    time_mode: "append",
    vars: [
      {
        name: "v",
        dims: ["time", ...spec.dims.map(([d]) => d)],
        dtype: "float64",
        attrs: spec.attrs ?? {},
      },
    ],
    statics: [],
    chunk_shape: { time: 1, ...shape },
    shard_shape: { time: 4, ...shape },
    profile: "diagnostic",
    coords: {
      time: {
        attrs: {
          units: spec.timeUnits ?? "hours since 2000-01-01 00:00:00",
          ...(spec.calendar === undefined ? {} : { calendar: spec.calendar }),
        },
      },
      ...spec.coords,
    },
  };
  const store = new FsStore(dir);
  const w = await ZarrStreamWriter.create(store, schema, { kind: "single" });
  for (let r = 0; r < spec.records.length; r++) await w.writeRecord(6 * r, { v: spec.records[r]! });
  await w.close();
  return new FsStore(dir);
}

/** The colour drawn at the centre of data cell (row, col) as the picture lays the rows out (top first). */
function cellColour(pic: Picture, png: PNG, ny: number, nx: number, row: number, col: number) {
  const { x, y, width, height } = pic.plot;
  return pixel(png, x + ((col + 0.5) * width) / nx, y + ((row + 0.5) * height) / ny);
}

/** The text of every <text> element of an SVG. */
function svgTexts(svg: string): string[] {
  return [...svg.matchAll(/<text[^>]*>([^<]*)<\/text>/g)].map((m) =>
    m[1]!.replace(/&#(\d+);/g, (_, c) => String.fromCharCode(Number(c))),
  );
}

before(() => {
  root = tempDir("picture");
});
after(() => rmSync(root, { recursive: true, force: true }));

describe("reference pictures", () => {
  it("a heatmap with coordinates, Unicode labels and a missing cell matches its reference", () => {
    const pic = renderHeatmap(
      {
        values: syntheticField(18, 36),
        ny: 18,
        nx: 36,
        y: { label: "latitude (°N)", coords: lats(18), latitude: true },
        x: { label: "longitude (°E)", coords: lons(36) },
        title: "Lufttemperatur über Grund (°C)",
        subtitle: "2000-01-02 23:00 [record 47]",
        label: "°C",
      },
      { cmap: "viridis", size: { width: 360 } },
    );
    assert.equal(pic.width, 360);
    matchesReference("heatmap-viridis", pic);
  });

  it("a heatmap with --cmap RdBu_r and a --vmin/--vmax inside the data (extend triangles) matches its reference", () => {
    const pic = renderHeatmap(
      {
        values: syntheticField(18, 36),
        ny: 18,
        nx: 36,
        y: { label: "latitude (°N)", coords: lats(18).reverse(), latitude: true },
        x: { label: "longitude (°E)", coords: lons(36) },
        title: "ΔT anomaly (K)",
        label: "K",
      },
      { cmap: "RdBu_r", vmin: -10, vmax: 20, size: { width: 360, height: 220 } },
    );
    assert.deepEqual([pic.width, pic.height], [360, 220]);
    matchesReference("heatmap-rdbu-extend", pic);
  });

  it("a time series with calendar ticks matches its reference", () => {
    const t0 = Date.UTC(2000, 0, 1);
    const x = Float64Array.from({ length: 40 }, (_, i) => t0 + i * 3 * 3600e3);
    const y = Float64Array.from({ length: 40 }, (_, i) => 1005.03 + 0.003 * Math.sin(i / 4));
    y[17] = Number.NaN;
    const pic = renderLine(
      {
        x,
        y,
        time: true,
        xLabel: "time (UTC)",
        yLabel: "air pressure (hPa)",
        title: "air pressure (hPa)",
        subtitle: "mean over lat [10:20], lon [0:30] (unweighted)",
      },
      { cmap: "viridis", size: { width: 360, height: 200 } },
    );
    matchesReference("series-time", pic);
  });
});

describe("tick labels", () => {
  it("ticks of data between 1005.030 and 1005.033 read with enough digits to tell them apart", () => {
    const ticks = numberTicks(1005.03, 1005.033, 6);
    const labels = ticks.map((t) => t.label[0]!);
    assert.ok(ticks.length >= 3, labels.join(" "));
    assert.equal(new Set(labels).size, labels.length, labels.join(" "));
    for (const [i, s] of labels.entries()) {
      assert.match(s, /^1005\.03\d+$/);
      // the label is the tick's value, not a rounding of it
      assert.equal(Number(s), Number(ticks[i]!.value.toFixed(s.split(".")[1]!.length)));
    }
  });

  it("tiny and huge ranges get distinct scientific labels; indices get whole numbers", () => {
    const tiny = numberTicks(0, 3e-5, 5).map((t) => t.label[0]!);
    assert.equal(new Set(tiny).size, tiny.length);
    assert.ok(
      tiny.some((s) => s.includes("×10⁻⁵")),
      tiny.join(" "),
    );
    const huge = numberTicks(2.5e9, 2.6e9, 5).map((t) => t.label[0]!);
    assert.equal(new Set(huge).size, huge.length, huge.join(" "));
    assert.ok(
      huge.every((s) => s.includes("×10⁹")),
      huge.join(" "),
    );
    const index = numberTicks(-0.5, 3.5, 10, true);
    assert.deepEqual(
      index.map((t) => t.label[0]),
      ["0", "1", "2", "3"],
    );
  });

  it("time ticks fall on calendar steps and carry the date when it changes", () => {
    const hours = timeTicks(new Date(Date.UTC(2000, 0, 1, 0)), new Date(Date.UTC(2000, 0, 2, 12)), 6);
    assert.deepEqual(hours[0]!.label, ["00:00", "2000-01-01"]);
    assert.ok(hours.some((t) => t.label[1] === "2000-01-02"));
    assert.ok(hours.every((t) => /^\d\d:\d\d$/.test(t.label[0]!)));
    const months = timeTicks(new Date(Date.UTC(2000, 0, 1)), new Date(Date.UTC(2000, 11, 31)), 5);
    assert.ok(
      months.every((t) => /^2000-\d\d$/.test(t.label[0]!)),
      months.map((t) => t.label).join(" "),
    );
  });

  it("CF units are drawn in figure typography", () => {
    assert.equal(prettyUnits("degrees_north"), "°N");
    assert.equal(prettyUnits("W m-2"), "W m⁻²");
    assert.equal(prettyUnits("m2 s-1"), "m² s⁻¹");
    assert.equal(prettyUnits("1"), "");
    assert.equal(prettyUnits("K"), "K");
  });
});

/** One text rendered alone, black on white, at the same size and place each time. */
function renderText(text: string, size = 24, width = 64): Buffer {
  const svg =
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${2 * size}"><rect width="100%" height="100%" fill="#fff"/>` +
    `<text x="4" y="${1.4 * size}" font-family="${FONT_FAMILY}" font-size="${size}">${text}</text></svg>`;
  return rasterizePixels(svg).pixels;
}

describe("Unicode labels", () => {
  it("every character of CF-style names and units has a glyph in the bundled font (no tofu boxes)", () => {
    // U+4E2D and U+6587 are not in DejaVu Sans: both draw the font's missing-glyph box, identically
    const tofu = renderText("中");
    assert.deepEqual(renderText("文"), tofu, "the missing-glyph probe no longer draws the same box");
    for (const ch of "Temperaturüéèàçñøå°ΔΘλµσ²³⁻¹−–—±×·ÅЖжαβγ") {
      assert.notDeepEqual(renderText(ch), tofu, `${ch} (U+${ch.codePointAt(0)!.toString(16)}) draws a box`);
    }
  });

  it("a title from long_name and units is drawn as the same text rendered on its own", async () => {
    const store = await makeStore("unicode", {
      dims: [
        ["lat", 4],
        ["lon", 8],
      ],
      coords: {
        lat: { values: [...lats(4)], attrs: { units: "degrees_north" } },
        lon: { values: [...lons(8)] },
      },
      attrs: { long_name: "Température à 2 m", units: "degC" },
      records: [syntheticField(4, 8).map((v) => (Number.isNaN(v) ? 0 : v))],
    });
    const pic = await plotStore(store, { variable: "v", record: 0, size: { width: 480 } });
    assert.equal(pic.titleBox.text, "Température à 2 m (°C)");
    assert.ok(svgTexts(pic.svg).includes("Température à 2 m (°C)"));
    // the title's region of the picture against the same text drawn alone at the same place and size
    const { x, y, size, text } = pic.titleBox;
    const alone =
      `<svg xmlns="http://www.w3.org/2000/svg" width="${pic.width}" height="${pic.height}"><rect width="100%" height="100%" fill="#fff"/>` +
      `<text x="${x}" y="${y}" font-family="${FONT_FAMILY}" font-size="${size}" text-anchor="middle">${text}</text></svg>`;
    const want = rasterizePixels(alone);
    const got = decode(pic.png);
    const top = Math.floor(y - size);
    const rows = Math.ceil(size * 1.3);
    let ink = 0;
    let differ = 0;
    for (let py = top; py < top + rows; py++) {
      for (let px = 0; px < pic.width; px++) {
        const o = (py * pic.width + px) * 4;
        if (want.pixels[o]! < 128) ink++;
        if (Math.abs(want.pixels[o]! - got.data[o]!) > 32) differ++;
      }
    }
    assert.ok(ink > 100, `the title has ${ink} dark pixels`);
    assert.ok(differ <= ink * 0.02, `${differ} of the title's pixels differ from the text drawn alone`);
  });
});

/** 4 x 8 cells, 10 in the row `hot`, 0 elsewhere. */
function hotRow(ny: number, nx: number, hot: number): Float64Array {
  const v = new Float64Array(ny * nx);
  v.fill(10, hot * nx, (hot + 1) * nx);
  return v;
}

const same = (a: readonly number[], b: readonly number[]) => a.every((c, i) => Math.abs(c - b[i]!) <= 1);

describe("plot options and north up (plotStore on small stores)", () => {
  const viridis = colormap("viridis");
  let increasing: FsStore;

  before(async () => {
    increasing = await makeStore("lat-increasing", {
      dims: [
        ["lat", 4],
        ["lon", 8],
      ],
      coords: {
        lat: { values: [...lats(4)], attrs: { units: "degrees_north", long_name: "latitude" } },
        lon: { values: [...lons(8)], attrs: { units: "degrees_east" } },
      },
      attrs: { units: "K" },
      records: [hotRow(4, 8, 3)],
    });
  });

  async function topAndBottom(store: FsStore, ny: number, nx: number) {
    const pic = await plotStore(store, { variable: "v", record: 0, size: { width: 400 } });
    const png = decode(pic.png);
    return { pic, top: cellColour(pic, png, ny, nx, 0, 0), bottom: cellColour(pic, png, ny, nx, ny - 1, 0) };
  }

  it("north is up with latitudes increasing, decreasing, on the second dim, or only a dim name", async () => {
    // the hot row is the northernmost in every store: it must be drawn at the top
    const decreasing = await makeStore("lat-decreasing", {
      dims: [
        ["lat", 4],
        ["lon", 8],
      ],
      coords: { lat: { values: [...lats(4)].reverse(), attrs: { units: "degrees_north" } } },
      records: [hotRow(4, 8, 0)],
    });
    const lonLat = await makeStore("lon-lat", {
      dims: [
        ["lon", 8],
        ["lat", 4],
      ],
      coords: { lat: { values: [...lats(4)], attrs: { standard_name: "latitude" } } },
      // lat varies fastest: 10 where lat is the last (northernmost) index
      records: [Float64Array.from({ length: 32 }, (_, i) => (i % 4 === 3 ? 10 : 0))],
    });
    const named = await makeStore("y-named", {
      dims: [
        ["y", 4],
        ["x", 8],
      ],
      records: [hotRow(4, 8, 3)],
    });
    for (const [name, store] of [
      ["increasing", increasing],
      ["decreasing", decreasing],
      ["[lon, lat]", lonLat],
      ["dim y, no coordinate", named],
    ] as const) {
      const { pic, top, bottom } = await topAndBottom(store, 4, 8);
      assert.ok(same(top, viridis.at(1)), `${name}: top row ${top}, not the hot colour`);
      assert.ok(same(bottom, viridis.at(0)), `${name}: bottom row ${bottom}, not the cold colour`);
      assert.ok(pic.plot.width > pic.plot.height, `${name}: latitude is not the vertical axis`);
    }
    // a dim that is not a latitude keeps image order without a coordinate: row 0 at the top
    const rows = await makeStore("rows", {
      dims: [
        ["row", 4],
        ["col", 8],
      ],
      records: [hotRow(4, 8, 0)],
    });
    const { top } = await topAndBottom(rows, 4, 8);
    assert.ok(same(top, viridis.at(1)), `row 0 of a plain dim is not at the top: ${top}`);
  });

  it("--vmin/--vmax move the colours and mark data beyond them; --cmap changes the map", async () => {
    const base = await topAndBottom(increasing, 4, 8);
    assert.deepEqual([base.pic.vmin, base.pic.vmax], [0, 10]);
    const wide = await plotStore(increasing, {
      variable: "v",
      record: 0,
      vmin: 0,
      vmax: 20,
      size: { width: 400 },
    });
    const widePng = decode(wide.png);
    assert.deepEqual([wide.vmin, wide.vmax], [0, 20]);
    const half = cellColour(wide, widePng, 4, 8, 0, 0);
    assert.ok(same(half, viridis.at(0.5)), `10 in [0, 20] is ${half}, not the middle colour`);
    assert.ok(!same(half, base.top));
    // everything below --vmin takes the low end, and the colour bar gets a triangle below it
    const clipped = await plotStore(increasing, { variable: "v", record: 0, vmin: 5, size: { width: 400 } });
    assert.ok(same(cellColour(clipped, decode(clipped.png), 4, 8, 3, 0), viridis.at(0)));
    assert.match(clipped.svg, /<path d="M[^"]*Z" fill="#440154"/);
    assert.doesNotMatch(base.pic.svg, /<path d="M[^"]*Z"/);

    const magma = await plotStore(increasing, {
      variable: "v",
      record: 0,
      cmap: "magma",
      size: { width: 400 },
    });
    const m = decode(magma.png);
    assert.ok(same(cellColour(magma, m, 4, 8, 0, 0), colormap("magma").at(1)));
    assert.ok(same(cellColour(magma, m, 4, 8, 3, 0), colormap("magma").at(0)));
    const reversed = await plotStore(increasing, {
      variable: "v",
      record: 0,
      cmap: "Viridis_r",
      size: { width: 400 },
    });
    assert.ok(same(cellColour(reversed, decode(reversed.png), 4, 8, 0, 0), viridis.at(0)));
  });

  it("--size sets the picture's pixels: both sides, or the width with the height from the data", async () => {
    const both = await plotStore(increasing, { variable: "v", record: 0, size: { width: 300, height: 200 } });
    assert.deepEqual([decode(both.png).width, decode(both.png).height], [300, 200]);
    const wide = await plotStore(increasing, { variable: "v", record: 0, size: { width: 1200 } });
    const png = decode(wide.png);
    assert.equal(png.width, 1200);
    // 4 x 8 cells: the plot area keeps their 1:2 aspect
    assert.ok(Math.abs(wide.plot.height / wide.plot.width - 0.5) < 0.01, JSON.stringify(wide.plot));
    assert.equal(png.height, wide.height);
    const line = await plotStore(increasing, {
      variable: "v",
      record: 0,
      slices: { lat: 3 },
      size: { width: 640, height: 240 },
    });
    assert.equal(line.kind, "line");
    assert.deepEqual([decode(line.png).width, decode(line.png).height], [640, 240]);
  });

  it("tick labels of a field between 1005.030 and 1005.033 are all different", async () => {
    const store = await makeStore("pressure", {
      dims: [
        ["lat", 4],
        ["lon", 8],
      ],
      coords: { lat: { values: [...lats(4)] } },
      attrs: { long_name: "air pressure", units: "hPa" },
      records: [Float64Array.from({ length: 32 }, (_, i) => 1005.03 + (0.003 * i) / 31)],
    });
    const pic = await plotStore(store, { variable: "v", record: 0 });
    const bar = svgTexts(pic.svg).filter((s) => s.startsWith("1005"));
    assert.ok(bar.length >= 3, bar.join(" "));
    assert.equal(new Set(bar).size, bar.length, bar.join(" "));
    assert.ok(
      bar.every((s) => /^1005\.03\d+$/.test(s)),
      bar.join(" "),
    );
  });
});

describe("time series (plotStore --series)", () => {
  let store: FsStore;
  const records = Array.from({ length: 6 }, (_, r) =>
    Float64Array.from({ length: 32 }, (_, i) => 280 + r + Math.sin(i * 0.7 + r)),
  );

  before(async () => {
    store = await makeStore("series", {
      dims: [
        ["lat", 4],
        ["lon", 8],
      ],
      coords: {
        lat: { values: [...lats(4)], attrs: { units: "degrees_north" } },
        lon: { values: [...lons(8)] },
      },
      attrs: { long_name: "air temperature", units: "K" },
      records,
    });
  });

  it("a point's series is the stored value of each committed record, against decoded time", async () => {
    const pic = await plotStore(store, { variable: "v", series: true, slices: { lat: 1, lon: 2 } });
    assert.equal(pic.kind, "series");
    assert.deepEqual(pic.series!.records, [0, 1, 2, 3, 4, 5]);
    assert.deepEqual(pic.series!.t, [0, 6, 12, 18, 24, 30]);
    for (let r = 0; r < 6; r++) {
      const read = await readRecord(store, "v", r, { lat: [1, 2], lon: [2, 3] });
      assert.equal(pic.series!.values[r], read.data[0]);
    }
    assert.match(pic.title, /at lat = −22\.5°N \[1\], lon = 112\.5 \[2\]/);
    const texts = svgTexts(pic.svg);
    assert.ok(texts.includes("2000-01-01"), texts.join(" | "));
    assert.ok(texts.includes("time (UTC)"));
  });

  it("a region's series is the mean over it; no slice means the whole domain", async () => {
    const region = await plotStore(store, {
      variable: "v",
      series: true,
      slices: { lat: [1, 3], lon: [0, 4] },
    });
    const whole = await plotStore(store, { variable: "v", series: true });
    for (let r = 0; r < 6; r++) {
      const cells: number[] = [];
      for (let i = 1; i < 3; i++) for (let j = 0; j < 4; j++) cells.push(records[r]![i * 8 + j]!);
      const mean = cells.reduce((a, b) => a + b, 0) / cells.length;
      assert.ok(Math.abs(region.series!.values[r]! - mean) < 1e-9);
      const all = records[r]!.reduce((a, b) => a + b, 0) / 32;
      assert.ok(Math.abs(whole.series!.values[r]! - all) < 1e-9);
    }
    assert.match(region.title, /mean over lat \[1:3\], lon \[0:4\]/);
    assert.match(whole.title, /mean over lat, lon/);
  });

  it("a calendar a Date cannot count (noleap) keeps a numeric time axis that names it", async () => {
    const noleap = await makeStore("noleap", {
      dims: [["x", 2]],
      timeUnits: "days since 0001-01-01",
      calendar: "noleap",
      records: [Float64Array.of(1, 2), Float64Array.of(3, 4), Float64Array.of(5, 6)],
    });
    const pic = await plotStore(noleap, { variable: "v", series: true });
    assert.deepEqual(pic.series!.values, [1.5, 3.5, 5.5]);
    const texts = svgTexts(pic.svg);
    assert.ok(texts.includes("time (noleap)"), texts.join(" | "));
    // ticks on the stored t, labelled with the dates they decode to in noleap (t: 0, 6, 12 days)
    assert.ok(texts.includes("0001-01-07"), texts.join(" | "));
  });
});

describe("zstream plot options (command line)", () => {
  let dir: string;
  before(async () => {
    await makeStore("cli", {
      dims: [
        ["lat", 4],
        ["lon", 8],
      ],
      coords: { lat: { values: [...lats(4)] } },
      records: [hotRow(4, 8, 3), hotRow(4, 8, 2)],
    });
    dir = join(root, "cli.zarr");
  });

  it("writes PNG or SVG with the options; refuses bad ones with exit 2 and one line", async () => {
    const png = join(root, "cli.png");
    const ok = await zstreamInProcess(
      "plot",
      dir,
      "--var",
      "v",
      "--record",
      "1",
      "--vmin",
      "-5",
      "--vmax",
      "15",
      "--cmap",
      "RdBu_r",
      "--size",
      "320x200",
      "--out",
      png,
    );
    assert.equal(ok.status, 0, ok.stderr);
    assert.match(ok.stdout, /heatmap 320x200, .* range -5 \.\. 15/);
    assert.deepEqual([decode(readFileSync(png)).width, decode(readFileSync(png)).height], [320, 200]);
    const svg = join(root, "cli.svg");
    const vector = await zstreamInProcess("plot", dir, "--var", "v", "--series", "--out", svg);
    assert.equal(vector.status, 0, vector.stderr);
    assert.match(readFileSync(svg, "utf8"), /^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg"/);
    const cases: [string[], RegExp][] = [
      [["--size", "50"], /--size must be WIDTH or WIDTHxHEIGHT/],
      [["--size", "300x"], /--size must be/],
      [["--cmap", "rainbowish"], /--cmap "rainbowish" is not a colour map; one of .*viridis/],
      [["--vmin", "5", "--vmax", "1"], /--vmin 5 must be below --vmax 1/],
      [["--vmin", "warm"], /--vmin must be a finite number/],
      [["--series", "--record", "0"], /--series plots every committed record/],
      [["--slice", "lat=3:1"], /--slice lat=3:1 is empty/],
    ];
    for (const [args, message] of cases) {
      const r = await zstreamInProcess("plot", dir, "--var", "v", "--record", "0", ...args, "--out", png);
      assert.equal(r.status, 2, `${args.join(" ")}: ${r.stderr}`);
      assert.match(r.stderr, message);
      assert.equal(r.stderr.trim().split("\n").length, 1);
    }
  });
});
