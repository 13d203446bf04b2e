import { HttpStore } from "../http-store.js";
import { colorAt, finiteRange, niceTicks, paintGrid } from "./colormap.js";
import { formatTime, formatValue, withUnits } from "./format.js";
import { type Slice, StoreView, type Variable } from "./model.js";
import { cellAt, isIncreasing } from "./slice.js";

const POLL_MS = 2000;

function el<T extends HTMLElement>(id: string): T {
  const e = document.getElementById(id);
  if (!e) throw new Error(`page is missing #${id}`);
  return e as T;
}

const ui = {
  variable: el<HTMLSelectElement>("variable"),
  record: el<HTMLInputElement>("record"),
  timeLabel: el<HTMLSpanElement>("time-label"),
  fixedDims: el<HTMLSpanElement>("fixed-dims"),
  lockRange: el<HTMLInputElement>("lock-range"),
  status: el<HTMLSpanElement>("status"),
  heatmap: el<HTMLCanvasElement>("heatmap"),
  colorbar: el<HTMLCanvasElement>("colorbar"),
  ticks: el<HTMLDivElement>("ticks"),
  colorbarUnits: el<HTMLDivElement>("colorbar-units"),
  axes: el<HTMLDivElement>("axes"),
  readout: el<HTMLDivElement>("readout"),
  error: el<HTMLDivElement>("error"),
  commitFields: el<HTMLElement>("commit-fields"),
  commitLists: el<HTMLDivElement>("commit-lists"),
};

interface Shown {
  variable: Variable;
  record: number | undefined;
  slice: Slice;
  min: number;
  max: number;
  flipY: boolean;
}

let view: StoreView;
let shown: Shown | undefined;
const fixed: Record<string, number> = {};
let renderSeq = 0;
let lockedRange: { min: number; max: number } | undefined;
let lastPointer: MouseEvent | undefined;

function setStatus(status: "loading" | "ready" | "error", text: string): void {
  document.body.dataset.status = status;
  ui.status.textContent = text;
}

function showError(err: unknown): void {
  const e = err instanceof Error ? err : new Error(String(err));
  ui.error.textContent = `${e.name}: ${e.message}`;
  setStatus("error", "error");
}

function currentVariable(): Variable | undefined {
  return view.variables.find((v) => v.name === ui.variable.value);
}

/** The committed record the slider points at (its position indexes view.records, which may have holes). */
function currentRecord(v: Variable): number | undefined {
  if (v.timeAxis < 0) return undefined;
  return view.records[Number(ui.record.value)]?.index;
}

function fillVariables(): void {
  const keep = ui.variable.value;
  ui.variable.replaceChildren(
    ...view.variables.map((v) => {
      const o = document.createElement("option");
      o.value = v.name;
      o.textContent =
        v.kind === "static" ? `${v.name} (static${v.committed ? "" : ", not committed"})` : v.name;
      o.disabled = !v.committed;
      return o;
    }),
  );
  const first = view.variables.find((v) => v.committed);
  ui.variable.value = view.variables.some((v) => v.name === keep) ? keep : (first?.name ?? "");
}

function updateSlider(): void {
  const n = view.records.length;
  const atEnd = Number(ui.record.value) >= Number(ui.record.max);
  ui.record.max = String(Math.max(0, n - 1));
  // Following the newest record while it is shown is what a live run wants; otherwise stay put.
  if (atEnd && ui.record.dataset.touched !== "1") ui.record.value = String(Math.max(0, n - 1));
  if (Number(ui.record.value) > n - 1) ui.record.value = String(Math.max(0, n - 1));
  const v = currentVariable();
  ui.record.disabled = v === undefined || v.timeAxis < 0 || n === 0;
}

function fillFixedDims(v: Variable): void {
  const rest = v.dims.filter((_, i) => i !== v.timeAxis);
  const fixedDims = rest.slice(0, -2);
  ui.fixedDims.replaceChildren(
    ...fixedDims.map((d) => {
      const n = v.shape[v.dims.indexOf(d)]!;
      const label = document.createElement("label");
      const input = document.createElement("input");
      input.type = "number";
      input.min = "0";
      input.max = String(n - 1);
      input.value = String(Math.min(fixed[d] ?? 0, n - 1));
      fixed[d] = Number(input.value);
      input.addEventListener("change", () => {
        fixed[d] = Math.max(0, Math.min(n - 1, Math.trunc(Number(input.value)) || 0));
        void render();
      });
      label.append(`${d} `, input);
      return label;
    }),
  );
}

function timeText(v: Variable): string {
  if (v.timeAxis < 0) return v.kind === "static" ? "static (no time axis)" : "no record axis";
  const n = view.records.length;
  if (n === 0) return "no committed records";
  const pos = Number(ui.record.value);
  const r = view.records[pos]!;
  return `record ${r.index} (${pos + 1} of ${n}) · t = ${formatTime(r.t, view.timeUnits)}`;
}

async function render(): Promise<void> {
  const seq = ++renderSeq;
  const v = currentVariable();
  updateSlider();
  if (v === undefined) {
    ui.timeLabel.textContent = "no variables";
    setStatus("ready", "empty store");
    return;
  }
  ui.timeLabel.textContent = timeText(v);
  const record = currentRecord(v);
  if (v.timeAxis >= 0 && record === undefined) {
    shown = undefined;
    clearPlot("nothing committed yet");
    setStatus("ready", "waiting for a commit");
    return;
  }
  setStatus("loading", "reading…");
  try {
    const slice = await view.readSlice(v.name, record, fixed);
    if (seq !== renderSeq) return; // a newer render superseded this one
    const auto = finiteRange(slice.values) ?? { min: 0, max: 0 };
    if (!ui.lockRange.checked || lockedRange === undefined) lockedRange = auto;
    const { min, max } = ui.lockRange.checked ? lockedRange : auto;
    const flipY = isIncreasing(slice.yCoord);
    shown = { variable: v, record, slice, min, max, flipY };
    draw(shown);
    // The pointer may rest on the plot while the data under it changes: keep the readout true.
    if (lastPointer) onHover(lastPointer);
    ui.error.textContent = "";
    ui.heatmap.dataset.variable = v.name;
    ui.heatmap.dataset.record = record === undefined ? "" : String(record);
    ui.heatmap.dataset.renderSeq = String(seq);
    setStatus("ready", `${view.mode === "plain" ? "plain Zarr" : "committed"} · ${v.name}`);
  } catch (err) {
    if (seq === renderSeq) showError(err);
  }
}

function clearPlot(text: string): void {
  ui.heatmap.width = 1;
  ui.heatmap.height = 1;
  ui.axes.textContent = text;
  ui.readout.textContent = "";
  ui.ticks.replaceChildren();
}

function draw(s: Shown): void {
  const { slice } = s;
  ui.heatmap.width = slice.nx;
  ui.heatmap.height = slice.ny;
  const ctx = ui.heatmap.getContext("2d")!;
  const pixels = paintGrid(slice.values, slice.ny, slice.nx, s.min, s.max, s.flipY);
  ctx.putImageData(new ImageData(pixels, slice.nx, slice.ny), 0, 0);

  const bar = ui.colorbar.getContext("2d")!;
  const h = ui.colorbar.height;
  for (let y = 0; y < h; y++) {
    const [r, g, b] = colorAt(1 - y / (h - 1));
    bar.fillStyle = `rgb(${r},${g},${b})`;
    bar.fillRect(0, y, 1, 1);
  }
  const units = s.variable.units;
  ui.ticks.replaceChildren(
    ...niceTicks(s.min, s.max, 6).map((t) => {
      const span = document.createElement("span");
      const f = s.max > s.min ? (t - s.min) / (s.max - s.min) : 0.5;
      span.style.top = `${(1 - f) * 100}%`;
      span.textContent = formatValue(t);
      return span;
    }),
  );
  ui.colorbarUnits.textContent = units ?? "(no units)";
  const p = slice.plane;
  const name = s.variable.longName ? `${s.variable.longName} (${s.variable.name})` : s.variable.name;
  ui.axes.textContent =
    `${name}${units ? ` [${units}]` : ""} · rows: ${p.yDim ?? "—"} · columns: ${p.xDim ?? "—"}` +
    ` · range ${formatValue(s.min)} … ${formatValue(s.max)}`;
}

function coordText(dim: string | undefined, coord: Float64Array | undefined, i: number, units?: string) {
  if (dim === undefined) return "";
  return coord ? `${dim} = ${withUnits(formatValue(coord[i]!), units)} [${i}]` : `${dim} = ${i}`;
}

function onHover(ev: MouseEvent): void {
  if (!shown) return;
  const rect = ui.heatmap.getBoundingClientRect();
  const { slice } = shown;
  const cell = cellAt(
    ev.clientX - rect.left,
    ev.clientY - rect.top,
    rect.width,
    rect.height,
    slice.ny,
    slice.nx,
    shown.flipY,
  );
  if (!cell) {
    ui.readout.textContent = "";
    return;
  }
  const value = slice.values[cell.row * slice.nx + cell.col]!;
  const where = [
    coordText(slice.plane.yDim, slice.yCoord, cell.row, slice.yUnits),
    coordText(slice.plane.xDim, slice.xCoord, cell.col, slice.xUnits),
  ].filter((x) => x !== "");
  ui.readout.textContent = `${shown.variable.name} = ${withUnits(formatValue(value), shown.variable.units)}${where.length ? ` at ${where.join(", ")}` : ""}`;
  // The exact value (shortest round-trip form) for anyone checking the page against the store.
  ui.readout.dataset.value = String(value);
  ui.readout.dataset.row = String(cell.row);
  ui.readout.dataset.col = String(cell.col);
}

function fillCommitPanel(): void {
  const s = view.summary();
  const fields: [string, string][] = [
    ["mode", s.mode === "plain" ? "plain Zarr (no manifest)" : `output-manifest/${s.mode}`],
    ["commit_seq", s.commitSeq === undefined ? "—" : String(s.commitSeq)],
    [s.mode === "plain" ? "records" : "records committed", String(s.nRecords)],
    ["writers", s.nWriters === undefined ? "—" : String(s.nWriters)],
    ["time mode", s.timeMode ?? "—"],
    ["profile", s.profile ?? "—"],
    ["last t", s.lastT === undefined || s.lastT === null ? "—" : formatTime(s.lastT, view.timeUnits)],
    [
      "statics",
      s.mode === "v2"
        ? `${s.statics.filter((x) => x.committed).length} of ${s.statics.length} committed`
        : "—",
    ],
    ["blobs", s.mode === "v2" ? String(s.blobs.length) : "—"],
  ];
  ui.commitFields.replaceChildren(
    ...fields.flatMap(([k, v]) => {
      const dt = document.createElement("dt");
      dt.textContent = k;
      const dd = document.createElement("dd");
      dd.textContent = v;
      dd.dataset.field = k;
      return [dt, dd];
    }),
  );
  const list = (title: string, items: string[]) => {
    if (items.length === 0) return [];
    const h = document.createElement("h2");
    h.textContent = title;
    const ul = document.createElement("ul");
    ul.replaceChildren(
      ...items.map((t) => {
        const li = document.createElement("li");
        li.textContent = t;
        return li;
      }),
    );
    return [h, ul];
  };
  ui.commitLists.replaceChildren(
    ...list(
      "Statics",
      s.statics.map((x) => `${x.name}: ${x.committed ? "committed" : "declared"}`),
    ),
    ...list(
      "Blobs",
      s.blobs.map(
        (b) => `${b.scope === "static" ? "static" : `record ${b.record}`} · writer ${b.writer} · ${b.key}`,
      ),
    ),
  );
  document.body.dataset.version = view.version;
}

async function poll(): Promise<void> {
  try {
    if (await view.refresh()) {
      fillVariables();
      fillCommitPanel();
      await render();
    }
  } catch (err) {
    showError(err);
  } finally {
    setTimeout(() => void poll(), POLL_MS);
  }
}

async function start(): Promise<void> {
  try {
    const store = new HttpStore(new URL("store/", location.href).href);
    view = await StoreView.open(store, () => store.listMetadata());
    fillVariables();
    fillCommitPanel();
    const v = currentVariable();
    if (v) fillFixedDims(v);
    ui.record.value = "0";
    await render();
  } catch (err) {
    showError(err);
  }
  ui.variable.addEventListener("change", () => {
    const v = currentVariable();
    if (v) fillFixedDims(v);
    lockedRange = undefined;
    void render();
  });
  ui.record.addEventListener("input", () => {
    ui.record.dataset.touched = "1";
    void render();
  });
  ui.lockRange.addEventListener("change", () => void render());
  ui.heatmap.addEventListener("mousemove", (ev) => {
    lastPointer = ev;
    onHover(ev);
  });
  ui.heatmap.addEventListener("mouseleave", () => {
    lastPointer = undefined;
    ui.readout.textContent = "";
  });
  setTimeout(() => void poll(), POLL_MS);
}

void start();
