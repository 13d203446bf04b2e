/**
 * The one module that talks to the renderer. Pictures are written as SVG and rasterized by resvg
 * (@resvg/resvg-js): a Rust SVG renderer with real font shaping (rustybuzz) shipped as prebuilt
 * Node-API binaries for Linux (glibc and musl), macOS and Windows on x64 and arm64, so `npm ci` compiles
 * nothing and downloads nothing outside the npm registry. It adds about 4 MB to an install, where a canvas
 * (@napi-rs/canvas, Skia) adds 35 MB and skia-canvas fetches its binary from outside the registry at
 * install time; SVG also gives a vector `--out plot.svg` for free. Its rasterizer is pure Rust, so the
 * same SVG and font give the same pixels on every machine, which the reference-picture tests rely on.
 */
import { fileURLToPath } from "node:url";
import { Resvg, type ResvgRenderOptions } from "@resvg/resvg-js";

/**
 * DejaVu Sans, bundled: its Latin, Greek, Cyrillic, symbol and superscript coverage draws CF names and
 * units ("°C", "µg m⁻³", "ΔT") without boxes, and a bundled file renders the same on a machine with no
 * fonts installed (a container) as on a desktop. System fonts are not loaded: they would make the
 * pictures depend on the machine, and scanning them costs more than the rendering.
 */
export const FONT_FILE = fileURLToPath(new URL("../../../fonts/DejaVuSans.ttf", import.meta.url));
export const FONT_FAMILY = "DejaVu Sans";

const OPTIONS: ResvgRenderOptions = {
  font: {
    loadSystemFonts: false,
    fontFiles: [FONT_FILE],
    defaultFontFamily: FONT_FAMILY,
    sansSerifFamily: FONT_FAMILY,
  },
  logLevel: "off",
};

/** An SVG document as a PNG. */
export function rasterize(svg: string): Buffer {
  return new Resvg(svg, OPTIONS).render().asPng();
}

/** An SVG document as RGBA pixels, for tests that compare regions. */
export function rasterizePixels(svg: string): { width: number; height: number; pixels: Buffer } {
  const image = new Resvg(svg, OPTIONS).render();
  return { width: image.width, height: image.height, pixels: image.pixels };
}

export interface TextBox {
  /** Ink extent from the text's anchor (its start, on the baseline): left, width, top (negative: above). */
  x: number;
  width: number;
  y: number;
  height: number;
}

const measured = new Map<string, TextBox>();

/**
 * The ink box of `text` at `size` px, as resvg lays it out. Layout needs label widths before it places
 * anything (margins, colour-bar room, whether a title fits), and only the renderer knows them: shaping,
 * kerning and glyph widths come from the font. About a millisecond a string; cached per process.
 */
export function measureText(text: string, size: number): TextBox {
  const key = `${size}\u0000${text}`;
  const hit = measured.get(key);
  if (hit !== undefined) return hit;
  const origin = 4 * size;
  const svg =
    `<svg xmlns="http://www.w3.org/2000/svg" width="${(text.length + 8) * size}" height="${8 * size}">` +
    `<text x="${origin}" y="${origin}" font-family="${FONT_FAMILY}" font-size="${size}">${escapeXml(text)}</text></svg>`;
  const b = new Resvg(svg, OPTIONS).getBBox();
  const box =
    b === undefined
      ? { x: 0, width: 0, y: 0, height: 0 }
      : { x: b.x - origin, width: b.width, y: b.y - origin, height: b.height };
  measured.set(key, box);
  return box;
}

/** Text for an SVG text node or attribute value. */
export function escapeXml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}
