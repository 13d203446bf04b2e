/** Where the server puts the page's own files; the store's objects live under STORE_PREFIX. */
export const ASSET_PREFIX = "/__viewer/";
export const STORE_PREFIX = "/store/";
/** Our SIMD wasm codecs module, under ASSET_PREFIX. */
export const CODEC_WASM = "zstream_codecs.wasm";

/**
 * The page. The import map tells the codecs' browser entry where its wasm module is (it asks
 * import.meta.resolve for the package's "./zstream_codecs.wasm" export, which a bundle cannot answer)
 * and where numcodecs is: Blosc frames of an inner codec we do not implement are decoded with
 * import(import.meta.resolve("numcodecs/blosc") + "?instance=N"), which only an import map can resolve
 * there.
 */
export function viewerHtml(title: string): string {
  const importMap = {
    imports: {
      "@zarr-stream/codecs/zstream_codecs.wasm": `${ASSET_PREFIX}${CODEC_WASM}`,
      "numcodecs/blosc": `${ASSET_PREFIX}numcodecs/blosc.js`,
      "numcodecs/zstd": `${ASSET_PREFIX}numcodecs/zstd.js`,
    },
  };
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>${escapeHtml(title)} · zarr-stream viewer</title>
<script type="importmap">${JSON.stringify(importMap)}</script>
<style>
  body { font: 14px system-ui, sans-serif; margin: 0; color: #222; background: #fafafa; }
  header { display: flex; flex-wrap: wrap; gap: 12px; align-items: center; padding: 8px 16px; background: #fff; border-bottom: 1px solid #ddd; }
  header h1 { font-size: 16px; margin: 0 12px 0 0; }
  main { display: flex; gap: 16px; padding: 16px; align-items: flex-start; }
  #plot { display: grid; grid-template-columns: auto auto; gap: 4px 12px; }
  #heatmap { width: 560px; height: 420px; image-rendering: pixelated; border: 1px solid #999; cursor: crosshair; }
  #colorbar-box { display: flex; flex-direction: column; gap: 4px; }
  #colorbar-box .row { display: flex; gap: 4px; }
  #colorbar-units { font-size: 12px; color: #333; height: 1.2em; }
  #colorbar { width: 20px; height: 400px; border: 1px solid #999; }
  #ticks { position: relative; width: 90px; height: 402px; font-size: 12px; }
  #ticks span { position: absolute; left: 0; transform: translateY(-50%); white-space: nowrap; }
  #readout { grid-column: 1 / span 2; min-height: 1.4em; font-family: ui-monospace, monospace; }
  #axes { grid-column: 1 / span 2; color: #555; }
  aside { background: #fff; border: 1px solid #ddd; padding: 8px 12px; min-width: 240px; }
  aside h2 { font-size: 14px; margin: 4px 0 8px; }
  aside dl { display: grid; grid-template-columns: auto auto; gap: 2px 12px; margin: 0; }
  aside dt { color: #555; }
  aside dd { margin: 0; font-family: ui-monospace, monospace; }
  aside ul { margin: 4px 0; padding-left: 18px; font-family: ui-monospace, monospace; font-size: 12px; }
  #error { color: #b00020; white-space: pre-wrap; }
  #record { width: 260px; }
</style>
</head>
<body data-status="loading">
<header>
  <h1>${escapeHtml(title)}</h1>
  <label>variable <select id="variable"></select></label>
  <label>record <input id="record" type="range" min="0" max="0" step="1" value="0"></label>
  <span id="time-label"></span>
  <span id="fixed-dims"></span>
  <label><input id="lock-range" type="checkbox"> lock colour range</label>
  <span id="status">loading…</span>
</header>
<main>
  <section id="plot">
    <canvas id="heatmap" width="1" height="1"></canvas>
    <div id="colorbar-box"><div id="colorbar-units"></div><div class="row"><canvas id="colorbar" width="1" height="256"></canvas><div id="ticks"></div></div></div>
    <div id="axes"></div>
    <div id="readout"></div>
    <div id="error"></div>
  </section>
  <aside id="commit"><h2>Commit state</h2><dl id="commit-fields"></dl><div id="commit-lists"></div></aside>
</main>
<script type="module" src="${ASSET_PREFIX}viewer.js"></script>
</body>
</html>
`;
}

export function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}
