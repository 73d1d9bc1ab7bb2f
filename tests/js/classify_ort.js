// label_image with ONNX Runtime: classifies PNG images with an ONNX model
// that takes float32 NHWC images in [0, 1] (what `hub convert --to onnx`
// writes for an image module), preprocessing them independently of hub:
// PNG decoded here with Node's zlib, resized with TensorFlow.js's
// resizeBilinear (TensorFlow's semantics, as hub's classify uses).
//
//   node classify_ort.js MODEL.onnx HEIGHT WIDTH LABELS.txt IMAGE.png...
//
// Prints one line per image: "IMAGE<TAB>LABEL" (the top-1 class).
const fs = require('fs');
const zlib = require('zlib');
const ort = require('onnxruntime-node');
const tf = require('@tensorflow/tfjs');

// 8-bit, non-interlaced grayscale, gray+alpha, RGB or RGBA PNG -> {h, w, rgb}.
function decodePng(file) {
  const buf = fs.readFileSync(file);
  if (buf.readUInt32BE(0) !== 0x89504e47) throw new Error(`${file}: not a PNG`);
  let pos = 8, width = 0, height = 0, channels = 0;
  const idat = [];
  while (pos < buf.length) {
    const len = buf.readUInt32BE(pos), type = buf.toString('latin1', pos + 4, pos + 8);
    const data = buf.subarray(pos + 8, pos + 8 + len);
    if (type === 'IHDR') {
      width = data.readUInt32BE(0);
      height = data.readUInt32BE(4);
      const depth = data[8], color = data[9], interlace = data[12];
      if (depth !== 8 || interlace !== 0) throw new Error(`${file}: only 8-bit non-interlaced PNGs`);
      channels = {0: 1, 2: 3, 4: 2, 6: 4}[color];
      if (!channels) throw new Error(`${file}: unsupported color type ${color}`);
    } else if (type === 'IDAT') {
      idat.push(data);
    }
    pos += 12 + len;
  }
  const raw = zlib.inflateSync(Buffer.concat(idat));
  const stride = width * channels, out = new Uint8Array(height * stride);
  for (let y = 0; y < height; ++y) {
    const filter = raw[y * (stride + 1)], line = raw.subarray(y * (stride + 1) + 1, (y + 1) * (stride + 1));
    for (let x = 0; x < stride; ++x) {
      const a = x >= channels ? out[y * stride + x - channels] : 0;
      const b = y > 0 ? out[(y - 1) * stride + x] : 0;
      const c = x >= channels && y > 0 ? out[(y - 1) * stride + x - channels] : 0;
      let v = line[x];
      if (filter === 1) v += a;
      else if (filter === 2) v += b;
      else if (filter === 3) v += (a + b) >> 1;
      else if (filter === 4) {
        const p = a + b - c, pa = Math.abs(p - a), pb = Math.abs(p - b), pc = Math.abs(p - c);
        v += pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
      }
      out[y * stride + x] = v & 255;
    }
  }
  const rgb = new Float32Array(height * width * 3);
  for (let i = 0; i < height * width; ++i)
    for (let k = 0; k < 3; ++k) rgb[i * 3 + k] = out[i * channels + (channels >= 3 ? k : 0)] / 255;
  return {h: height, w: width, rgb};
}

async function main() {
  const [model, height, width, labelsFile, ...images] = process.argv.slice(2);
  const labels = fs.readFileSync(labelsFile, 'utf8').split('\n').filter((l) => l.length);
  const h = Number(height), w = Number(width);
  const batch = new Float32Array(images.length * h * w * 3);
  images.forEach((file, i) => {
    const img = decodePng(file);
    const resized = tf.tidy(() => tf.image.resizeBilinear(tf.tensor3d(img.rgb, [img.h, img.w, 3]), [h, w]));
    batch.set(resized.dataSync(), i * h * w * 3);
    resized.dispose();
  });
  const session = await ort.InferenceSession.create(model, {intraOpNumThreads: 2});
  const feeds = {[session.inputNames[0]]: new ort.Tensor('float32', batch, [images.length, h, w, 3])};
  const probs = (await session.run(feeds))[session.outputNames[0]];
  const k = probs.dims[1];
  images.forEach((file, i) => {
    let best = 0;
    for (let j = 1; j < k; ++j) if (probs.data[i * k + j] > probs.data[i * k + best]) best = j;
    console.log(`${file}\t${labels[best] ?? best}`);
  });
}

main().catch((e) => {
  console.error(`classify_ort: ${e.message || e}`);
  process.exit(1);
});
