/**
 * Dim, variable and static names become the first segment of store keys (`<name>/zarr.json`,
 * `<name>/c/...`) on every backend: a local file system (case-insensitive on macOS and Windows), S3, HTTP.
 * A name that some backend cannot hold as one path segment, or that lands on a key the layout itself
 * uses, is refused by the schema, before any I/O, instead of by the store halfway through a create.
 */

/** Keys and folders the layout writes at the store root besides the arrays. */
const LAYOUT_NAMES = ["zarr.json", "output_manifest.json", "blobs", "_tokens"];

/** File names Windows reserves in every folder, whatever the extension. */
const WINDOWS_DEVICES = /^(con|prn|aux|nul|com[0-9¹²³]|lpt[0-9¹²³])(\..*)?$/i;

/** The longest file name most file systems hold: 255 bytes of UTF-8. */
const MAX_NAME_BYTES = 255;

/** Why `name` cannot be a node name, or undefined when it can. */
export function nodeNameProblem(name: string): string | undefined {
  if (name === "") return "is empty";
  if (name === "." || name === "..") return `is "${name}"`;
  if (name.includes("/")) return 'contains "/": a node name is one path segment';
  if (name.includes("\\")) return "contains a backslash (a separator on Windows)";
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is refused
  const control = /[\u0000-\u001f\u007f]/.exec(name);
  if (control)
    return `contains the control character U+${control[0].charCodeAt(0).toString(16).padStart(4, "0").toUpperCase()}`;
  if (name.startsWith("."))
    return 'starts with ".", reserved for the store\'s own folders (.zarr-stream, .firecube) and staging files (.zs-tmp-)';
  if (name.startsWith("__")) return 'starts with "__", which Zarr v3 reserves';
  if (/[ .]$/.test(name)) return "ends with a space or a dot, which Windows file systems drop";
  if (WINDOWS_DEVICES.test(name)) return "is a device name on Windows";
  if (LAYOUT_NAMES.some((l) => l.toLowerCase() === name.toLowerCase()))
    return "is a name the store layout itself uses at the root";
  if (new TextEncoder().encode(name).length > MAX_NAME_BYTES)
    return `is longer than ${MAX_NAME_BYTES} bytes of UTF-8`;
  return undefined;
}

/** The case-folded form two names share when a case-insensitive file system cannot tell them apart. */
export function caseFolded(name: string): string {
  return name.normalize("NFC").toLowerCase();
}
