import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { readRecord } from "@zarr-stream/reader";
import { type BrowserContext, chromium, type Page } from "playwright-core";
import { serveViewer, type ViewerServer } from "../src/index.js";
import { cellCentre } from "../src/page/slice.js";
import { LAT, NLON, writeDemo } from "./demo-store.js";
import { precipAt, pythonSkipReason, writeZarrPythonStore } from "./python-store.js";

const CHROMIUM = "/usr/bin/chromium";
const OUTPUT = fileURLToPath(new URL("../../test-output/", import.meta.url));

/** Outside CI a machine without chromium skips; under CI=true the launch below fails instead. */
function chromiumSkipReason(): string | undefined {
  if (existsSync(CHROMIUM) || process.env.CI === "true") return undefined;
  return `${CHROMIUM} is not installed (apt-get install -y chromium)`;
}

async function pixels(page: Page): Promise<number[]> {
  return page.$eval("#heatmap", (c) => {
    const canvas = c as HTMLCanvasElement;
    return Array.from(canvas.getContext("2d")!.getImageData(0, 0, canvas.width, canvas.height).data);
  });
}

async function shownRecord(page: Page, record: string): Promise<void> {
  await page.waitForFunction(
    (r) =>
      document.body.dataset.status === "ready" &&
      (document.getElementById("heatmap") as HTMLCanvasElement).dataset.record === r,
    record,
    { timeout: 20_000 },
  );
}

/** Moves the mouse over cell (row, col) of the drawn grid and returns the readout's exact value. */
async function hover(page: Page, row: number, col: number, ny: number, nx: number, flipY: boolean) {
  const box = (await page.locator("#heatmap").boundingBox())!;
  const { px, py } = cellCentre(row, col, box.width, box.height, ny, nx, flipY);
  await page.mouse.move(box.x + px, box.y + py);
  await page.waitForFunction(
    ([r, c]) => {
      const d = document.getElementById("readout")!.dataset;
      return d.row === String(r) && d.col === String(c);
    },
    [row, col],
    { timeout: 5_000 },
  );
  return page.$eval("#readout", (e) => ({ value: (e as HTMLElement).dataset.value!, text: e.textContent! }));
}

async function field(page: Page, name: string): Promise<string> {
  return page.$eval(`dd[data-field="${name}"]`, (e) => e.textContent ?? "");
}

describe("viewer page in headless chromium", { skip: chromiumSkipReason() }, () => {
  let context: BrowserContext;
  let profileDir: string;
  const errors: string[] = [];
  /** Paths the pages asked the server for, outside the store. */
  const assets = new Set<string>();

  before(async () => {
    profileDir = await mkdtemp(join(tmpdir(), "zs-viewer-chromium-"));
    context = await chromium.launchPersistentContext(profileDir, {
      executablePath: CHROMIUM,
      headless: true,
      viewport: { width: 1200, height: 640 },
      args: [
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
      ],
    });
  });
  after(async () => {
    await context?.close();
    await rm(profileDir, { recursive: true, force: true });
  });

  async function open(server: ViewerServer): Promise<Page> {
    const page = await context.newPage();
    page.on("pageerror", (e) => errors.push(e.message));
    page.on("request", (r) => {
      const path = new URL(r.url()).pathname;
      if (!path.startsWith("/store/")) assets.add(path);
    });
    // The URL the server prints carries the token once; the page trades it for a cookie (a redirect to
    // "/"), and every later request of the page (bundle, wasm, store) carries the cookie.
    const first = await page.goto(server.pageUrl);
    assert.equal(new URL(page.url()).search, "", "the token left the address bar");
    assert.equal(first?.status(), 200);
    return page;
  }

  it("§7 committed data: slider changes the heatmap, hover equals readRecord, a new commit appears by polling", async () => {
    const demo = await writeDemo("v2", "diagnostic", 2);
    const server = await serveViewer(demo.dir);
    try {
      const page = await open(server);
      await shownRecord(page, "1"); // the newest committed record is shown first
      assert.equal(await field(page, "commit_seq"), "2");
      assert.equal(await field(page, "records committed"), "2");
      assert.equal(await field(page, "writers"), "2");
      assert.equal(await field(page, "statics"), "1 of 1 committed");
      assert.equal(await field(page, "blobs"), "3");
      assert.deepEqual(
        await page.$eval("#heatmap", (c) => [
          (c as HTMLCanvasElement).width,
          (c as HTMLCanvasElement).height,
        ]),
        [NLON, LAT.length],
      );
      const at1 = await pixels(page);

      await page.focus("#record");
      await page.keyboard.press("ArrowLeft");
      await shownRecord(page, "0");
      const at0 = await pixels(page);
      assert.notDeepEqual(at0, at1, "record 0 and record 1 must draw differently");
      assert.match(await page.$eval("#time-label", (e) => e.textContent ?? ""), /t = 2026-01-01T00:00:00Z/);

      const m0 = await readRecord(demo.store, "temperature", 0);
      // Latitude increases, so the page draws row 0 at the bottom.
      const got = await hover(page, 5, 7, LAT.length, NLON, true);
      assert.equal(got.value, String((m0.data as Float64Array)[5 * NLON + 7]));
      assert.match(got.text, /lat = -5 degrees_north \[5\], lon = 157\.5 degrees_east \[7\]/);
      assert.match(got.text, / K at /);

      const committedAt = Date.now();
      await demo.commitNext();
      await page.waitForFunction(
        () => document.querySelector('dd[data-field="commit_seq"]')?.textContent === "3",
        null,
        { timeout: 10_000 },
      );
      const seenAfterMs = Date.now() - committedAt;
      assert.equal(await page.$eval("#record", (e) => (e as HTMLInputElement).max), "2");
      await shownRecord(page, "0"); // the user moved the slider: the view stays where it was
      await page.focus("#record");
      await page.keyboard.press("End");
      await shownRecord(page, "2");
      const m2 = await readRecord(demo.store, "temperature", 2);
      // The pointer never left cell (5, 7): the readout follows the new record without a mouse move.
      assert.equal(
        await page.$eval("#readout", (e) => (e as HTMLElement).dataset.value),
        String((m2.data as Float64Array)[5 * NLON + 7]),
      );
      const got2 = await hover(page, 11, 0, LAT.length, NLON, true);
      assert.equal(got2.value, String((m2.data as Float64Array)[11 * NLON]));
      assert.match(await page.$eval("#time-label", (e) => e.textContent ?? ""), /record 2 \(3 of 3\)/);

      await mkdir(OUTPUT, { recursive: true });
      await page.screenshot({ path: join(OUTPUT, "viewer-v2.png") });
      process.stdout.write(`# commit seen by the page ${seenAfterMs} ms after it was written\n`);
      assert.ok(seenAfterMs < 10_000);
      assert.deepEqual(errors, []);
      await page.close();
    } finally {
      await server.close();
    }
  });

  it("§1 profiles in the browser: plain-zstd (wasm) and checkpoint stores decode to readRecord's values", async () => {
    assets.clear();
    for (const [kind, profile] of [
      ["indexed", "wasm"],
      ["v1", "checkpoint"],
    ] as const) {
      const demo = await writeDemo(kind, profile, 2);
      const server = await serveViewer(demo.dir);
      try {
        const page = await open(server);
        const newest = kind === "indexed" ? "2" : "1"; // indexed demo commits records 0 and 2
        await shownRecord(page, newest);
        const direct = await readRecord(demo.store, "temperature", Number(newest));
        const got = await hover(page, 2, 9, LAT.length, NLON, true);
        assert.equal(got.value, String((direct.data as Float64Array)[2 * NLON + 9]), `${kind}/${profile}`);
        await page.selectOption("#variable", "wind");
        await page.waitForFunction(
          () => (document.getElementById("heatmap") as HTMLCanvasElement).dataset.variable === "wind",
          null,
          { timeout: 10_000 },
        );
        const wind = await readRecord(demo.store, "wind", Number(newest));
        const w = await hover(page, 0, 4, 1, NLON, false);
        assert.equal(w.value, String((wind.data as Float32Array)[4]));
        if (profile === "wasm") await page.screenshot({ path: join(OUTPUT, "viewer-wasm-wind.png") });
        await page.close();
      } finally {
        await server.close();
      }
    }
    assert.deepEqual(errors, []);
    // Our SIMD wasm decoded every Blosc and zstd chunk: numcodecs' modules were never fetched.
    assert.ok(assets.has("/__viewer/zstream_codecs.wasm"), [...assets].join(", "));
    assert.deepEqual(
      [...assets].filter((p) => p.includes("numcodecs")),
      [],
    );
  });

  it(
    "plain Zarr from zarr-python (no manifest): listed from the server's index, values as written",
    {
      skip: pythonSkipReason(),
    },
    async () => {
      const dir = writeZarrPythonStore();
      const server = await serveViewer(dir);
      try {
        const page = await open(server);
        await page.waitForFunction(() => document.body.dataset.status === "ready", null, { timeout: 20_000 });
        assert.equal(await field(page, "mode"), "plain Zarr (no manifest)");
        await page.selectOption("#variable", "precip");
        await shownRecord(page, "2");
        const got = await hover(page, 1, 3, 4, 5, true);
        assert.equal(got.value, String(precipAt(2, 1, 3)));
        assert.match(await page.$eval("#time-label", (e) => e.textContent ?? ""), /t = 2000-01-01T12:00:00Z/);
        await page.screenshot({ path: join(OUTPUT, "viewer-zarr-python.png") });
        await page.close();
      } finally {
        await server.close();
      }
      assert.deepEqual(errors, []);
    },
  );
});
