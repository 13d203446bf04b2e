export { HttpStore } from "./http-store.js";
export { servableKey } from "./servable.js";
export {
  DEFAULT_TIMEOUTS,
  serveViewer,
  TOKEN_HEADER,
  type ViewerServer,
  type ViewerServerOptions,
  type ViewerTimeouts,
} from "./server.js";
