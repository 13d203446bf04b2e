import { escapeXml, FONT_FAMILY } from "./resvg.js";

export type Rgb = readonly [number, number, number];

export function css([r, g, b]: Rgb): string {
  return `#${[r, g, b].map((c) => c.toString(16).padStart(2, "0")).join("")}`;
}

/** Two decimals: sub-pixel placement survives, the document stays small. */
function n(v: number): string {
  return String(Math.round(v * 100) / 100);
}

export interface TextStyle {
  size: number;
  anchor?: "start" | "middle" | "end";
  /** Degrees, about the anchor point (-90: reads bottom to top). */
  rotate?: number;
  fill?: string;
  weight?: "normal" | "bold";
}

/** A small SVG writer: the few elements a plot needs, in paint order. */
export class Svg {
  private readonly parts: string[] = [];

  constructor(
    readonly width: number,
    readonly height: number,
  ) {}

  rect(x: number, y: number, w: number, h: number, attrs: { fill?: string; stroke?: string } = {}): void {
    const fill = attrs.fill ?? "none";
    const stroke = attrs.stroke === undefined ? "" : ` stroke="${attrs.stroke}" stroke-width="1"`;
    this.parts.push(
      `<rect x="${n(x)}" y="${n(y)}" width="${n(w)}" height="${n(h)}" fill="${fill}"${stroke}/>`,
    );
  }

  /** Axis lines and ticks: crisp, one device pixel wide at integer + 0.5 coordinates. */
  line(x1: number, y1: number, x2: number, y2: number, stroke = "#000", width = 1): void {
    this.parts.push(
      `<line x1="${n(x1)}" y1="${n(y1)}" x2="${n(x2)}" y2="${n(y2)}" stroke="${stroke}" stroke-width="${n(width)}" shape-rendering="crispEdges"/>`,
    );
  }

  /** An open polyline (a data line), antialiased. */
  polyline(points: [number, number][], stroke: string, width: number): void {
    if (points.length === 0) return;
    const d = points.map(([x, y], i) => `${i === 0 ? "M" : "L"}${n(x)} ${n(y)}`).join("");
    this.parts.push(
      `<path d="${d}" fill="none" stroke="${stroke}" stroke-width="${n(width)}" stroke-linejoin="round" stroke-linecap="round"/>`,
    );
  }

  polygon(points: [number, number][], attrs: { fill: string; stroke?: string }): void {
    const d = `${points.map(([x, y], i) => `${i === 0 ? "M" : "L"}${n(x)} ${n(y)}`).join("")}Z`;
    const stroke = attrs.stroke === undefined ? "" : ` stroke="${attrs.stroke}" stroke-width="1"`;
    this.parts.push(`<path d="${d}" fill="${attrs.fill}"${stroke}/>`);
  }

  circle(x: number, y: number, r: number, fill: string): void {
    this.parts.push(`<circle cx="${n(x)}" cy="${n(y)}" r="${n(r)}" fill="${fill}"/>`);
  }

  /** One line of text; its baseline at y. */
  text(x: number, y: number, text: string, style: TextStyle): void {
    const anchor = style.anchor && style.anchor !== "start" ? ` text-anchor="${style.anchor}"` : "";
    const rotate = style.rotate ? ` transform="rotate(${style.rotate} ${n(x)} ${n(y)})"` : "";
    const fill = style.fill ? ` fill="${style.fill}"` : "";
    const weight = style.weight === "bold" ? ` font-weight="bold"` : "";
    this.parts.push(
      `<text x="${n(x)}" y="${n(y)}" font-size="${n(style.size)}"${anchor}${rotate}${fill}${weight}>${escapeXml(text)}</text>`,
    );
  }

  /**
   * A PNG stretched over a box. `pixelated` keeps data cells as sharp blocks when the picture enlarges
   * them (CSS Images treats optimizeSpeed as pixelated in browsers too); a picture smaller than the data
   * smooths instead, so no cell is silently dropped.
   */
  image(x: number, y: number, w: number, h: number, png: Buffer, pixelated: boolean): void {
    const rendering = pixelated ? ` image-rendering="optimizeSpeed"` : "";
    this.parts.push(
      `<image x="${n(x)}" y="${n(y)}" width="${n(w)}" height="${n(h)}" preserveAspectRatio="none"${rendering} href="data:image/png;base64,${png.toString("base64")}"/>`,
    );
  }

  toString(): string {
    return [
      `<svg xmlns="http://www.w3.org/2000/svg" width="${this.width}" height="${this.height}" viewBox="0 0 ${this.width} ${this.height}" font-family="${FONT_FAMILY}, sans-serif">`,
      `<rect width="100%" height="100%" fill="#fff"/>`,
      ...this.parts,
      "</svg>",
      "",
    ].join("\n");
  }
}
