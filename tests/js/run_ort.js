// Runs an ONNX model with ONNX Runtime (CPU) — the independent reference the
// ONNX tests compare hub against.
//
//   node run_ort.js MODEL.onnx OUT_PREFIX NAME=FILE.bin:D0,D1,... [NAME=...]
//
// Inputs are raw float32 (little-endian, C order). Writes every output as
// OUT_PREFIX.<i>.bin (float32) and OUT_PREFIX.json: [{"name", "shape"}, ...]
// in the session's output order. Two intra-op threads, as hub uses.
const fs = require('fs');
const ort = require('onnxruntime-node');

async function main() {
  const [model, prefix, ...specs] = process.argv.slice(2);
  const feeds = {};
  for (const spec of specs) {
    const eq = spec.indexOf('='), colon = spec.lastIndexOf(':');
    const name = spec.slice(0, eq), file = spec.slice(eq + 1, colon);
    const dims = spec.slice(colon + 1).split(',').filter((d) => d.length).map(Number);
    const buf = fs.readFileSync(file);
    const data = new Float32Array(buf.buffer, buf.byteOffset, buf.byteLength / 4);
    feeds[name] = new ort.Tensor('float32', Float32Array.from(data), dims);
  }
  const session = await ort.InferenceSession.create(model, {intraOpNumThreads: 2, interOpNumThreads: 1});
  const results = await session.run(feeds);
  const manifest = [];
  session.outputNames.forEach((name, i) => {
    const t = results[name];
    fs.writeFileSync(`${prefix}.${i}.bin`, Buffer.from(Float32Array.from(t.data).buffer));
    manifest.push({name, shape: t.dims.map(Number)});
  });
  fs.writeFileSync(`${prefix}.json`, JSON.stringify(manifest));
}

main().catch((e) => {
  console.error(`run_ort: ${e.message || e}`);
  process.exit(1);
});
