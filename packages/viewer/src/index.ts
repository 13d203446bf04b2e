export { HttpStore } from "./http-store.js";
export { serveViewer, type ViewerServer, type ViewerServerOptions } from "./server.js";
