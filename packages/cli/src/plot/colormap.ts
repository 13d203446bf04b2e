import { colorAt } from "@zarr-stream/viewer/colormap";
import type { Rgb } from "./canvas.js";

/** The viewer's viridis, so a PNG quicklook and the browser viewer show a field in the same colours. */
export function viridis(u: number): Rgb {
  return colorAt(u);
}

export const COLORMAP_ENDS = { low: viridis(0), high: viridis(1) };
