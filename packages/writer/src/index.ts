export { type WriterOptions, ZarrStreamWriter } from "./writer.js";
export { serializeManifest } from "./manifest-doc.js";
