// The ONNX Runtime side of bench/run_ort_bench.sh: loads MODEL.onnx (CPU,
// two intra-op threads as hub uses, ORT's full graph optimisation), runs one
// warm-up call on a batch of BATCH images and then calls for SECONDS,
// printing `ort IMAGES_PER_SECOND`.
//
//   node ort_bench.js MODEL.onnx INPUT_NAME BATCH HEIGHT WIDTH SECONDS
const ort = require('onnxruntime-node');

async function main() {
  const [model, input, batch, height, width, seconds] = process.argv.slice(2);
  const dims = [Number(batch), Number(height), Number(width), 3];
  const data = new Float32Array(dims.reduce((a, b) => a * b));
  for (let i = 0; i < data.length; ++i) data[i] = (i % 251) / 251;
  const session = await ort.InferenceSession.create(model, {
    intraOpNumThreads: 2, interOpNumThreads: 1, graphOptimizationLevel: 'all', logSeverityLevel: 3});
  const feeds = {[input]: new ort.Tensor('float32', data, dims)};
  await session.run(feeds);
  let calls = 0;
  const start = process.hrtime.bigint();
  let elapsed = 0;
  while (elapsed < Number(seconds)) {
    await session.run(feeds);
    ++calls;
    elapsed = Number(process.hrtime.bigint() - start) / 1e9;
  }
  console.log(`ort ${(calls * dims[0] / elapsed).toFixed(2)}`);
}

main().catch((e) => {
  console.error(`ort_bench: ${e.message || e}`);
  process.exit(1);
});
