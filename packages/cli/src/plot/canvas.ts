import { PNG } from "pngjs";
import { ADVANCE, GLYPH_HEIGHT, glyph, textWidth } from "./font.js";

export type Rgb = readonly [number, number, number];

export const WHITE: Rgb = [255, 255, 255];
export const BLACK: Rgb = [0, 0, 0];
export const GREY: Rgb = [128, 128, 128];

/** An RGBA raster with just the drawing a quicklook needs: pixels, boxes, lines and bitmap text. */
export class Canvas {
  readonly data: Uint8Array;

  constructor(
    readonly width: number,
    readonly height: number,
    background: Rgb = WHITE,
  ) {
    this.data = new Uint8Array(width * height * 4);
    this.fillRect(0, 0, width, height, background);
  }

  setPixel(x: number, y: number, [r, g, b]: Rgb): void {
    if (x < 0 || y < 0 || x >= this.width || y >= this.height) return;
    const o = (y * this.width + x) * 4;
    this.data[o] = r;
    this.data[o + 1] = g;
    this.data[o + 2] = b;
    this.data[o + 3] = 255;
  }

  fillRect(x: number, y: number, w: number, h: number, color: Rgb): void {
    for (let j = Math.max(0, y); j < Math.min(this.height, y + h); j++) {
      for (let i = Math.max(0, x); i < Math.min(this.width, x + w); i++) this.setPixel(i, j, color);
    }
  }

  strokeRect(x: number, y: number, w: number, h: number, color: Rgb): void {
    this.line(x, y, x + w - 1, y, color);
    this.line(x, y + h - 1, x + w - 1, y + h - 1, color);
    this.line(x, y, x, y + h - 1, color);
    this.line(x + w - 1, y, x + w - 1, y + h - 1, color);
  }

  /** Bresenham: integer end points, every pixel on the segment. */
  line(x0: number, y0: number, x1: number, y1: number, color: Rgb): void {
    x0 = Math.round(x0);
    y0 = Math.round(y0);
    x1 = Math.round(x1);
    y1 = Math.round(y1);
    const dx = Math.abs(x1 - x0);
    const dy = -Math.abs(y1 - y0);
    const sx = x0 < x1 ? 1 : -1;
    const sy = y0 < y1 ? 1 : -1;
    let err = dx + dy;
    for (;;) {
      this.setPixel(x0, y0, color);
      if (x0 === x1 && y0 === y1) return;
      const e2 = 2 * err;
      if (e2 >= dy) {
        err += dy;
        x0 += sx;
      }
      if (e2 <= dx) {
        err += dx;
        y0 += sy;
      }
    }
  }

  /** Draws `text` with its top-left corner at (x, y); returns the width drawn. */
  text(x: number, y: number, text: string, color: Rgb = BLACK, scale = 2): number {
    let cx = x;
    for (const ch of text) {
      glyph(ch).forEach((row, gy) => {
        row.forEach((ink, gx) => {
          if (ink) this.fillRect(cx + gx * scale, y + gy * scale, scale, scale, color);
        });
      });
      cx += ADVANCE * scale;
    }
    return textWidth(text, scale);
  }

  textHeight(scale = 2): number {
    return GLYPH_HEIGHT * scale;
  }

  toPng(): Buffer {
    const png = new PNG({ width: this.width, height: this.height });
    png.data = Buffer.from(this.data.buffer, this.data.byteOffset, this.data.byteLength);
    return PNG.sync.write(png, { colorType: 6 });
  }
}
