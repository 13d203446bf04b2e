/** Names and units as a reader expects them on a figure, from CF attributes. */

const SUPERSCRIPT = "⁰¹²³⁴⁵⁶⁷⁸⁹";

const NAMED_UNITS: Record<string, string> = {
  degrees_north: "°N",
  degree_north: "°N",
  degrees_n: "°N",
  degreen: "°N",
  degrees_east: "°E",
  degree_east: "°E",
  degrees_e: "°E",
  degreee: "°E",
  degc: "°C",
  deg_c: "°C",
  celsius: "°C",
  degrees: "°",
  degree: "°",
  percent: "%",
};

/**
 * CF/UDUNITS units in figure typography: "degrees_north" as "°N", "degC" as "°C", exponents raised
 * ("W m-2" as "W m⁻²", "m2 s-1" as "m² s⁻¹"). "1" (dimensionless) and "" give "".
 */
export function prettyUnits(units: string | undefined): string {
  const u = (units ?? "").trim();
  if (u === "" || u === "1") return "";
  const named = NAMED_UNITS[u.toLowerCase()];
  if (named !== undefined) return named;
  return u
    .split(/\s+/)
    .map((token) => {
      const m = /^([A-Za-zµ%°]+)(\^|\*\*)?(-?\d+)$/.exec(token);
      if (!m) return token;
      const exp = m[3]!.replace("-", "⁻").replace(/\d/g, (d) => SUPERSCRIPT[Number(d)]!);
      return `${m[1]}${exp}`;
    })
    .join(" ");
}

/** "name (units)", or the name alone when there are no units to show. */
export function withUnits(name: string, units: string | undefined): string {
  const u = prettyUnits(units);
  return u === "" ? name : `${name} (${u})`;
}

/** Dim names that are a latitude axis even without a coordinate array saying so. */
const LATITUDE_NAMES = new Set(["lat", "latitude", "y", "nav_lat", "rlat"]);
const LATITUDE_UNITS = new Set([
  "degrees_north",
  "degree_north",
  "degrees_n",
  "degree_n",
  "degreen",
  "degreesn",
]);

/**
 * Whether a dim is the latitude (north-south) axis: by its coordinate's CF attributes (standard_name
 * latitude, units degrees_north, axis Y) or, without them, by its name (lat, latitude, y, …).
 */
export function isLatitude(dim: string, attrs: Record<string, unknown> = {}): boolean {
  const str = (k: string) => (typeof attrs[k] === "string" ? (attrs[k] as string).toLowerCase() : "");
  if (str("standard_name") === "latitude" || str("standard_name") === "grid_latitude") return true;
  if (LATITUDE_UNITS.has(str("units")) || str("axis") === "y") return true;
  return LATITUDE_NAMES.has(dim.toLowerCase());
}
