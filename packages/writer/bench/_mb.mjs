import { encodeInto, maxEncodedLength, profileCodec } from "@zarr-stream/codecs";
import { encodeShardChunks } from "@zarr-stream/shard";

const [ch, cw] = [Number(process.argv[2]), Number(process.argv[3])];
const shard = [4, 256, 512];
const n = (4 * 256 * 512) / (ch * cw);
const chunks = Array.from({ length: n }, (_, k) => {
  const c = new Float32Array(ch * cw);
  for (let i = 0; i < c.length; i++)
    c[i] = 280 + 25 * Math.sin(i * 0.001 + k) + ((i * 2654435761) % 1000) / 1e4;
  return c;
});
const spec = profileCodec("diagnostic", "float32");
const layout = {
  shape: [8, 1024, 1024],
  shardShape: shard,
  chunkShape: [1, ch, cw],
  dtype: "float32",
  codec: spec,
  dimensionNames: ["t", "y", "x"],
  attributes: {},
};
const bytes = chunks.map((c) => new Uint8Array(c.buffer));
const bound = bytes.reduce((s, b) => s + maxEncodedLength(spec, b.length), 0) + 16 * n + 4;
const out = new Uint8Array(bound);
const sizes = new Uint32Array(n);
const take = () => out;
const a = async () => encodeShardChunks(layout, [0, 0, 0], chunks, { take });
const b = async () => encodeInto(spec, bytes, out, 0, sizes);
const ta = [],
  tb = [];
const cpu = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};
for (let r = 0; r < 60; r++) {
  const first = r % 2 ? [a, ta] : [b, tb];
  const second = r % 2 ? [b, tb] : [a, ta];
  for (const [f, arr] of [first, second]) {
    const t = cpu();
    for (let k = 0; k < 5; k++) await f();
    arr.push((cpu() - t) / 5);
  }
}
const med = (x) => x.sort((p, q) => p - q)[x.length >> 1];
console.log(
  `chunk ${ch}x${cw} (${n} per shard): shard ${med(ta).toFixed(2)} ms, encodeInto ${med(tb).toFixed(2)} ms, diff per chunk ${(((med(ta) - med(tb)) / n) * 1000).toFixed(1)} us`,
);
