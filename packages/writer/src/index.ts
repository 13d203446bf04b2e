export { serializeManifest } from "./manifest-doc.js";
export { type WriterOptions, ZarrStreamWriter } from "./writer.js";
