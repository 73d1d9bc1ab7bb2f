// Writes a TensorFlow.js graph model that uses the TensorFlow ops hub maps
// (model.json with the GraphDef as JSON, weights in sharded .bin files, some
// quantized to uint8, uint16 and float16), runs it with TensorFlow.js's own
// GraphModel on a fixed input, and writes what TF.js computed — the
// independent reference hub's importer is checked against.
//
//   node tfjs_graph_model.js OUT_DIR
//
// Writes OUT_DIR/model/{model.json, group1-shard1of2.bin,
// group1-shard2of2.bin, group2-shard1of1.bin}, OUT_DIR/input.bin (float32,
// [2, 10, 10, 3]), OUT_DIR/tokens.bin (float32, [2, 5, 4]) and, per output, OUT_DIR/<name>.bin (float32) with
// OUT_DIR/outputs.json: {name: shape}. The CPU backend, so results do not
// depend on the machine's GPU.
const fs = require('fs');
const path = require('path');
const tf = require('@tensorflow/tfjs');

// Deterministic values in [lo, hi).
let seed = 12345;
function random() {
  seed = (seed * 1103515245 + 12345) % 2147483648;
  return seed / 2147483648;
}
function values(n, lo = -1, hi = 1) {
  return Float32Array.from({length: n}, () => lo + (hi - lo) * random());
}

// float32 -> IEEE half bits (round to nearest even; normal and subnormal).
function toHalf(v) {
  const f = new Float32Array([v]);
  const u = new Uint32Array(f.buffer)[0];
  const sign = (u >>> 16) & 0x8000;
  const exp = ((u >>> 23) & 0xff) - 127 + 15;
  let mant = u & 0x7fffff;
  if (exp >= 31) return sign | 0x7c00;
  if (exp <= 0) {
    if (exp < -10) return sign;
    mant |= 0x800000;
    const shift = 14 - exp;
    let h = mant >>> shift;
    const rest = mant & ((1 << shift) - 1), halfway = 1 << (shift - 1);
    if (rest > halfway || (rest === halfway && (h & 1))) h += 1;
    return sign | h;
  }
  let h = (exp << 10) | (mant >>> 13);
  const rest = mant & 0x1fff;
  if (rest > 0x1000 || (rest === 0x1000 && (h & 1))) h += 1;
  return sign | h;
}

const b64 = (s) => Buffer.from(s).toString('base64');
const T = {type: 'DT_FLOAT'};
const ints = (v) => ({list: {i: v.map(String)}});
const str = (s) => ({s: b64(s)});
const shapeOf = (dims) => ({dim: dims.map((d) => ({size: String(d)}))});

const nodes = [];
const weights = [[], []];  // per group: {spec, bytes}
function node(name, op, input, attr = {}) {
  nodes.push({name, op, input, attr});
  return name;
}
// A Const whose value is a weight of group `group`, stored as `quant`
// (undefined, 'uint8', 'uint16' or 'float16').
function constant(name, shape, data, {dtype = 'float32', quant, group = 0} = {}) {
  const tfDtype = dtype === 'int32' ? 'DT_INT32' : 'DT_FLOAT';
  node(name, 'Const', [], {dtype: {type: tfDtype}, value: {tensor: {dtype: tfDtype, tensorShape: shapeOf(shape)}}});
  const spec = {name, shape, dtype};
  let bytes;
  if (!quant) {
    bytes = Buffer.from((dtype === 'int32' ? Int32Array.from(data) : Float32Array.from(data)).buffer);
  } else if (quant === 'float16') {
    bytes = Buffer.from(Uint16Array.from(Array.from(data, toHalf)).buffer);
    spec.quantization = {dtype: 'float16'};
  } else {
    const levels = quant === 'uint8' ? 255 : 65535;
    let min = Math.min(...data), max = Math.max(...data);
    if (dtype === 'int32') {
      min = 1;  // a scale and offset the int32 values are exactly on
      max = min + levels * 0.5;
    }
    const scale = (max - min) / levels;
    const q = Array.from(data, (v) => Math.round((v - min) / scale));
    bytes = Buffer.from((quant === 'uint8' ? Uint8Array.from(q) : Uint16Array.from(q)).buffer);
    spec.quantization = {dtype: quant, min, scale};
  }
  weights[group].push({spec, bytes});
  return name;
}
const scalar = (name, v) => constant(name, [], [v], {group: 1});
const intScalar = (name, v) => constant(name, [], [v], {dtype: 'int32', group: 1});
const vec = (name, v, dtype = 'int32') => constant(name, [v.length], v, {dtype, group: 1});
// x as float32 (outputs are read back as float32).
const cast = (name, from, src) => node(name, 'Cast', [from], {SrcT: {type: src}, DstT: T, Truncate: {b: false}});

// ---- The network: input [N, 10, 10, 3] -> probs [N, 5], features [N, 12] ----
node('images', 'Placeholder', [], {dtype: T, shape: {shape: shapeOf([-1, 10, 10, 3])}});
constant('w1', [3, 3, 3, 8], values(216), {quant: 'uint8'});
constant('b1', [8], values(8), {quant: 'float16'});
node('conv1', '_FusedConv2D', ['images', 'w1', 'b1'],
     {T, strides: ints([1, 2, 2, 1]), padding: str('SAME'), data_format: str('NHWC'), dilations: ints([1, 1, 1, 1]),
      use_cudnn_on_gpu: {b: true}, explicit_paddings: {list: {}}, num_args: {i: '1'},
      fused_ops: {list: {s: [b64('BiasAdd'), b64('LeakyRelu')]}}, epsilon: {f: 0}, leakyrelu_alpha: {f: 0.1}});
constant('bn/gamma', [8], values(8, 0.5, 1.5));
constant('bn/beta', [8], values(8));
constant('bn/mean', [8], values(8, -0.2, 0.2));
constant('bn/variance', [8], values(8, 0.5, 2));
node('bn', 'FusedBatchNormV3', ['conv1', 'bn/gamma', 'bn/beta', 'bn/mean', 'bn/variance'],
     {T, U: T, epsilon: {f: 0.001}, is_training: {b: false}, data_format: str('NHWC')});
node('relu6', 'Relu6', ['bn'], {T});
constant('w2', [3, 3, 8, 1], values(72));
node('dw', 'DepthwiseConv2dNative', ['relu6', 'w2'],
     {T, strides: ints([1, 1, 1, 1]), padding: str('SAME'), dilations: ints([1, 2, 2, 1]), data_format: str('NHWC')});
constant('b2', [8], values(8));
node('dw/bias', 'BiasAdd', ['dw', 'b2'], {T, data_format: str('NHWC')});
node('leaky', 'LeakyRelu', ['dw/bias'], {T, alpha: {f: 0.3}});
node('elu', 'Elu', ['leaky'], {T});
constant('w3', [2, 2, 8, 6], values(192), {quant: 'uint16'});
node('conv3', 'Conv2D', ['elu', 'w3'],
     {T, strides: ints([1, 1, 1, 1]), padding: str('EXPLICIT'), explicit_paddings: ints([0, 0, 1, 0, 0, 1, 0, 0]),
      data_format: str('NHWC'), dilations: ints([1, 1, 1, 1])});
// Batch norm in its two older forms.
for (const v of ['bn1', 'bn2']) {
  constant(`${v}/gamma`, [6], values(6, 0.5, 1.5));
  constant(`${v}/beta`, [6], values(6));
  constant(`${v}/mean`, [6], values(6, -0.2, 0.2));
  constant(`${v}/variance`, [6], values(6, 0.5, 2));
}
node('bn1', 'FusedBatchNorm', ['conv3', 'bn1/gamma', 'bn1/beta', 'bn1/mean', 'bn1/variance'],
     {T, epsilon: {f: 0.01}, is_training: {b: false}, data_format: str('NHWC')});
node('bn2', 'FusedBatchNormV2', ['bn1', 'bn2/gamma', 'bn2/beta', 'bn2/mean', 'bn2/variance'],
     {T, U: T, epsilon: {f: 0.001}, is_training: {b: false}, data_format: str('NHWC')});
constant('w4', [3, 3, 6, 1], values(54));
constant('b4', [6], values(6));
node('dw4', 'FusedDepthwiseConv2dNative', ['bn2', 'w4', 'b4'],
     {T, strides: ints([1, 1, 1, 1]), padding: str('SAME'), dilations: ints([1, 1, 1, 1]), data_format: str('NHWC'),
      num_args: {i: '1'}, fused_ops: {list: {s: [b64('BiasAdd'), b64('Relu6')]}}});
node('maxpool', 'MaxPool', ['dw4'], {T, ksize: ints([1, 3, 3, 1]), strides: ints([1, 2, 2, 1]), padding: str('SAME'),
                                     data_format: str('NHWC')});
node('avgpool', 'AvgPool', ['conv3'], {T, ksize: ints([1, 2, 2, 1]), strides: ints([1, 2, 2, 1]), padding: str('VALID'),
                                       data_format: str('NHWC')});
node('lrn', 'LRN', ['maxpool'], {T, depth_radius: {i: '2'}, bias: {f: 1}, alpha: {f: 0.1}, beta: {f: 0.75}});
// Element-wise arithmetic on [N, 3, 3, 6].
node('sigmoid', 'Sigmoid', ['lrn'], {T});
node('tanh', 'Tanh', ['lrn'], {T});
node('mul', 'Mul', ['sigmoid', 'tanh'], {T});
node('addv2', 'AddV2', ['mul', 'lrn'], {T});
node('sub', 'Sub', ['addv2', scalar('quarter', 0.25)], {T});
node('maximum', 'Maximum', ['sub', scalar('lo', 0.1)], {T});
node('minimum', 'Minimum', ['maximum', scalar('hi', 2)], {T});
node('square', 'Square', ['minimum'], {T});
node('add1', 'Add', ['square', scalar('one', 1)], {T});
node('rsqrt', 'Rsqrt', ['add1'], {T});
node('realdiv', 'RealDiv', ['minimum', 'add1'], {T});
node('neg', 'Neg', ['realdiv'], {T});
node('abs', 'Abs', ['neg'], {T});
node('sqrt', 'Sqrt', ['abs'], {T});
node('exp', 'Exp', ['sqrt'], {T});
node('log', 'Log', ['exp'], {T});
node('reciprocal', 'Reciprocal', ['add1'], {T});
// A placeholder not fed takes its default; Snapshot and Div (of floats).
node('pwd', 'PlaceholderWithDefault', [scalar('pwd/default', 1.5)], {dtype: T, shape: {shape: {}}});
node('snapshot', 'Snapshot', ['pwd'], {T});
node('div', 'Div', ['minimum', 'snapshot'], {T});
node('z1', 'AddN', ['rsqrt', 'log', 'reciprocal', 'div'], {T, N: {i: '4'}});
// Layout: pads, concatenation, splits, slices, transpose.
node('pad', 'Pad', ['z1', constant('pad/paddings', [4, 2], [0, 0, 1, 0, 0, 1, 0, 0], {dtype: 'int32', group: 1})],
     {T, Tpaddings: {type: 'DT_INT32'}});
node('pad2', 'PadV2', ['avgpool', constant('pad2/paddings', [4, 2], [0, 0, 1, 1, 1, 1, 0, 0], {dtype: 'int32', group: 1}),
                       scalar('pad2/value', 0.5)], {T, Tpaddings: {type: 'DT_INT32'}});
node('concat', 'ConcatV2', ['pad', 'pad2', intScalar('concat/axis', 3)], {T, N: {i: '2'}, Tidx: {type: 'DT_INT32'}});
node('split', 'Split', [intScalar('split/dim', 3), 'concat'], {T, num_split: {i: '2'}});
node('splitv', 'SplitV', ['concat', vec('splitv/sizes', [4, -1]), vec('splitv/dim', [-1])],
     {T, num_split: {i: '2'}, Tlen: {type: 'DT_INT32'}});
node('slice', 'Slice', ['split', vec('slice/begin', [0, 1, 0, 0]), vec('slice/size', [-1, 3, 3, 6])],
     {T, Index: {type: 'DT_INT32'}});
node('strided', 'StridedSlice', ['split:1', vec('strided/begin', [0, 0, 1, 0]), vec('strided/end', [0, 3, 4, 6]),
                                 vec('strided/strides', [1, 1, 1, 1])],
     {T, Index: {type: 'DT_INT32'}, begin_mask: {i: '1'}, end_mask: {i: '1'}, ellipsis_mask: {i: '0'},
      new_axis_mask: {i: '0'}, shrink_axis_mask: {i: '0'}});
node('transpose', 'Transpose', ['strided', vec('transpose/perm', [0, 2, 1, 3])], {T, Tperm: {type: 'DT_INT32'}});
node('splitv/first', 'Slice', ['splitv', vec('splitv/begin', [0, 1, 1, 0]), vec('splitv/size', [-1, 3, 3, 4])],
     {T, Index: {type: 'DT_INT32'}});
node('sum4', 'AddN', ['slice', 'transpose'], {T, N: {i: '2'}});
// Resizing with each of TensorFlow's coordinate modes, pooled to [N, 6] each.
const resized = [['ResizeBilinear', [5, 4], false, true], ['ResizeBilinear', [6, 7], false, false],
                 ['ResizeBilinear', [5, 5], true, false], ['ResizeNearestNeighbor', [7, 5], false, true],
                 ['ResizeNearestNeighbor', [4, 5], true, false], ['ResizeNearestNeighbor', [8, 7], false, false]];
resized.forEach(([op, size, align, half], k) => {
  node(`resize${k}`, op, ['lrn', vec(`resize${k}/size`, size)],
       {T, align_corners: {b: align}, half_pixel_centers: {b: half}});
  node(`resize${k}/mean`, 'Mean', [`resize${k}`, vec(`resize${k}/axes`, [1, 2])],
       {T, keep_dims: {b: false}, Tidx: {type: 'DT_INT32'}});
});
// Mirror padding both ways and a strided slice (negative and non-unit
// strides) of [N, 3, 3, 6], pooled to [N, 6] each beside them.
const pooled = resized.map((r, k) => `resize${k}/mean`);
[['REFLECT', [0, 0, 1, 1, 2, 0, 0, 0]], ['SYMMETRIC', [0, 0, 0, 3, 1, 2, 0, 0]]].forEach(([mode, p]) => {
  const name = `mirror_${mode.toLowerCase()}`;
  node(name, 'MirrorPad', ['sum4', constant(`${name}/paddings`, [4, 2], p, {dtype: 'int32', group: 1})],
       {T, Tpaddings: {type: 'DT_INT32'}, mode: str(mode)});
  pooled.push(node(`${name}/mean`, 'Mean', [name, vec(`${name}/axes`, [1, 2])],
                   {T, keep_dims: {b: false}, Tidx: {type: 'DT_INT32'}}));
});
node('strided2', 'StridedSlice', ['sum4', vec('strided2/begin', [0, -1, 0, 0]), vec('strided2/end', [0, 0, 3, 6]),
                                  vec('strided2/strides', [1, -1, 2, 1])],
     {T, Index: {type: 'DT_INT32'}, begin_mask: {i: '1'}, end_mask: {i: '1'}, ellipsis_mask: {i: '0'},
      new_axis_mask: {i: '0'}, shrink_axis_mask: {i: '0'}});
pooled.push(node('strided2/mean', 'Mean', ['strided2', vec('strided2/axes', [1, 2])],
                 {T, keep_dims: {b: false}, Tidx: {type: 'DT_INT32'}}));
node('resized', 'ConcatV2', [...pooled, intScalar('resized/axis', 1)],
     {T, N: {i: String(pooled.length)}, Tidx: {type: 'DT_INT32'}});
// Reductions and shape ops: [N, 3, 3, 6] -> [N, 6] several ways.
constant('axes12', [2], [1, 2], {dtype: 'int32', quant: 'uint8', group: 1});
node('mean', 'Mean', ['sum4', 'axes12'], {T, keep_dims: {b: true}, Tidx: {type: 'DT_INT32'}});
node('squeeze', 'Squeeze', ['mean'], {T, squeeze_dims: ints([1, 2])});
node('expand', 'ExpandDims', ['squeeze', intScalar('expand/dim', 1)], {T, Tdim: {type: 'DT_INT32'}});
node('max', 'Max', ['expand', vec('max/axis', [1])], {T, keep_dims: {b: false}, Tidx: {type: 'DT_INT32'}});
node('sum', 'Sum', ['sum4', 'axes12'], {T, keep_dims: {b: false}, Tidx: {type: 'DT_INT32'}});
node('splitv/mean', 'Mean', ['splitv/first', vec('splitv/axes', [1, 2])], {T, keep_dims: {b: false}, Tidx: {type: 'DT_INT32'}});
node('features/concat', 'Concat', [intScalar('features/axis', 1), 'max', 'sum'], {T, N: {i: '2'}});
node('features', 'Relu', ['features/concat'], {T});
// Element-wise math, comparisons, logic and SelectV2 on [N, 12]: unit is in
// (-0.9, 0.9), inside the inverse functions' domains.
const f = 'features/concat';
node('math/x3', 'Mul', [f, scalar('math/three', 3)], {T});
node('math/unit', 'Mul', [node('math/tanh', 'Tanh', [f], {T}), scalar('math/nine_tenths', 0.9)], {T});
const unary = [['Erf', f], ['Floor', 'math/x3'], ['Ceil', 'math/x3'], ['Round', 'math/x3'], ['Sin', 'math/x3'],
               ['Cos', 'math/x3'], ['Tan', 'math/unit'], ['Asin', 'math/unit'], ['Acos', 'math/unit'],
               ['Atan', 'math/x3'], ['Sinh', 'math/unit'], ['Cosh', 'math/unit'], ['Asinh', 'math/x3'],
               ['Atanh', 'math/unit']];
const terms = unary.map(([op, x]) => node(`math/${op.toLowerCase()}`, op, [x], {T}));
node('math/cosh1', 'Add', ['math/cosh', scalar('math/one', 1)], {T});
terms.push(node('math/acosh', 'Acosh', ['math/cosh1'], {T}));
node('math/gt', 'Greater', [f, scalar('math/lo', 0.1)], {T});
node('math/lt', 'Less', [f, scalar('math/hi', 1)], {T});
node('math/ge', 'GreaterEqual', ['math/floor', 'math/ceil'], {T});  // true where 3x is an integer
node('math/le', 'LessEqual', ['math/round', 'math/x3'], {T});
node('math/ne', 'NotEqual', ['math/floor', scalar('math/zero', 0)], {T, incompatible_shape_error: {b: true}});
node('math/eq', 'Equal', ['math/ceil', 'math/one'], {T, incompatible_shape_error: {b: true}});
node('math/and', 'LogicalAnd', ['math/gt', 'math/lt']);
node('math/or', 'LogicalOr', ['math/and', 'math/ge']);
node('math/not', 'LogicalNot', ['math/le']);
node('math/either', 'LogicalOr', [node('math/both', 'LogicalAnd', ['math/or', 'math/not']), 'math/eq']);
node('math/cond', 'LogicalAnd', ['math/either', 'math/ne']);
terms.push(node('math/select', 'SelectV2', ['math/cond', 'math/erf', 'math/x3'], {T}));
node('math', 'AddN', terms, {T, N: {i: String(terms.length)}});
// Flatten as Keras writes it: Reshape(x, Pack(StridedSlice(Shape(x), 0), -1)).
node('flat/shape', 'Shape', ['lrn'], {T, out_type: {type: 'DT_INT32'}});
node('flat/batch', 'StridedSlice', ['flat/shape', vec('flat/begin', [0]), vec('flat/end', [1]), vec('flat/strides', [1])],
     {T: {type: 'DT_INT32'}, Index: {type: 'DT_INT32'}, begin_mask: {i: '0'}, end_mask: {i: '0'},
      ellipsis_mask: {i: '0'}, new_axis_mask: {i: '0'}, shrink_axis_mask: {i: '1'}});
intScalar('flat/minus_one', -1);
node('flat/target', 'Pack', ['flat/batch', 'flat/minus_one'], {T: {type: 'DT_INT32'}, N: {i: '2'}, axis: {i: '0'}});
node('flat', 'Reshape', ['lrn', 'flat/target'], {T, Tshape: {type: 'DT_INT32'}});
constant('w5', [54, 5], values(270, -0.1, 0.1), {group: 1});
node('fc', 'MatMul', ['flat', 'w5'], {T, transpose_a: {b: false}, transpose_b: {b: false}});
constant('b5', [5], values(5), {group: 1});
node('fc/bias', 'BiasAdd', ['fc', 'b5'], {T});
constant('w6', [5, 12], values(60, -0.15, 0.15), {group: 1});
constant('b6', [5], values(5), {group: 1});
node('fm', '_FusedMatMul', ['features', 'w6', 'b6'],
     {T, transpose_a: {b: false}, transpose_b: {b: true}, num_args: {i: '1'},
      fused_ops: {list: {s: [b64('BiasAdd'), b64('Relu')]}}, epsilon: {f: 0}});
node('splitv/fc', 'MatMul', ['splitv/mean', constant('w7', [4, 5], values(20), {group: 1})], {T});
node('logits/sum', 'AddN', ['fc/bias', 'fm', 'splitv/fc'], {T, N: {i: '3'}});
node('logits', 'Identity', ['logits/sum'], {T});
node('logits/stop', 'StopGradient', ['logits'], {T});
node('probs', 'Softmax', ['logits/stop'], {T});
node('log_probs', 'LogSoftmax', ['logits/stop'], {T});
node('log_probs/cast', 'Cast', ['log_probs'], {SrcT: T, DstT: T, Truncate: {b: false}});

// Attention as Keras writes it (Einsum projections, BatchMatMulV2 scores, a
// layer norm of Mean and SquaredDifference) on [N, 3, 4] tokens of
// `features`, then more reductions, indexing and arithmetic on the result;
// all summed into 'attention' [N, 12].
const IT = {type: 'DT_INT32'};
node('att/tokens', 'Reshape', ['features', vec('att/shape', [-1, 3, 4])], {T, Tshape: IT});
const project = (name) => node(`att/${name}`, 'Einsum',
    ['att/tokens', constant(`att/w_${name}`, [4, 4], values(16, -0.5, 0.5), {group: 1})],
    {T, N: {i: '2'}, equation: str('btd,de->bte')});
const [q, k, v] = ['q', 'k', 'v'].map(project);
node('att/scores', 'BatchMatMulV2', [q, k], {T, adj_x: {b: false}, adj_y: {b: true}});
node('att/weights', 'Softmax', ['att/scores'], {T});
node('att/mixed', 'BatchMatMulV2', ['att/weights', v], {T, adj_x: {b: false}, adj_y: {b: false}});
node('att/mean', 'Mean', ['att/mixed', vec('att/last', [-1])], {T, keep_dims: {b: true}, Tidx: IT});
node('att/sqdiff', 'SquaredDifference', ['att/mixed', 'att/mean'], {T});
node('att/var', 'Mean', ['att/sqdiff', 'att/last'], {T, keep_dims: {b: true}, Tidx: IT});
node('att/rstd', 'Rsqrt', [node('att/var_eps', 'AddV2', ['att/var', scalar('att/eps', 1e-3)], {T})], {T});
node('att/norm', 'Mul', [node('att/centered', 'Sub', ['att/mixed', 'att/mean'], {T}), 'att/rstd'], {T});
node('att/sig', 'Sigmoid', ['att/norm'], {T});
node('att/min', 'Min', ['att/norm', vec('att/axis2', [2])], {T, keep_dims: {b: true}, Tidx: IT});  // [N, 3, 1]
node('att/prod', 'Prod', ['att/sig', 'att/axis2'], {T, keep_dims: {b: true}, Tidx: IT});          // [N, 3, 1]
node('att/argmax', 'ArgMax', ['att/norm', intScalar('att/dim', 2)], {T, Tidx: IT, output_type: IT});
node('att/argmax_f', 'ExpandDims', [node('att/argmax_cast', 'Cast', ['att/argmax'], {SrcT: IT, DstT: T, Truncate: {b: false}}),
                                    intScalar('att/expand', 2)], {T, Tdim: IT});                 // [N, 3, 1]
node('att/gather_nd', 'GatherNd', ['att/norm', constant('att/first', [1, 1], [0], {dtype: 'int32', group: 1})],
     {Tparams: T, Tindices: IT});                                                                  // [1, 3, 4]
const full = [
  'att/norm',
  node('att/pow', 'Pow', ['att/sig', scalar('att/exponent', 1.5)], {T}),
  node('att/top', 'TopKV2', ['att/norm', intScalar('att/top_k', 4)], {T, sorted: {b: true}}),
  node('att/tiled', 'Tile', ['att/min', vec('att/multiples', [1, 1, 4])], {T, Tmultiples: IT}),
  node('att/ones', 'OnesLike', ['att/pow'], {T}),
  node('att/zeros', 'ZerosLike', ['att/pow'], {T}),
  node('att/cumsum', 'Cumsum', ['att/norm', intScalar('att/cum_axis', 1)],
       {T, Tidx: IT, exclusive: {b: true}, reverse: {b: false}}),
  node('att/mod', 'FloorMod', ['att/norm', scalar('att/modulus', 0.7)], {T}),
  node('att/gather', 'GatherV2', ['att/norm', vec('att/columns', [3, 0, 1, 2]), intScalar('att/gather_axis', 2)],
       {Tparams: T, Tindices: IT, Taxis: IT, batch_dims: {i: '0'}}),
  // Batch row 1 (N >= 2) replaced. Into a tensor of its own: TF.js 4.22's
  // CPU TensorScatterUpdate also overwrote its input's buffer.
  node('att/scatter', 'TensorScatterUpdate',
       [node('att/norm_copy', 'Mul', ['att/norm', scalar('att/unit', 1)], {T}),
        constant('att/row', [1, 1], [1], {dtype: 'int32', group: 1}),
        constant('att/fill', [1, 3, 4], values(12), {group: 1})], {T, Tindices: IT}),
];
let total = node('att/full', 'AddN', full, {T, N: {i: String(full.length)}});
for (const part of ['att/prod', 'att/argmax_f', 'att/gather_nd'])  // broadcast onto [N, 3, 4]
  total = node(`${part}/added`, 'AddV2', [total, part], {T});
node('att/flat_total', 'Reshape', [total, vec('att/flat', [-1, 12])], {T, Tshape: IT});
// Constants TensorFlow computes in the graph: Range, Fill, Rank, Size.
const asFloat = (name, x) => node(name, 'Cast', [x], {SrcT: IT, DstT: T, Truncate: {b: false}});
const extras = [
  asFloat('att/range_f', node('att/range', 'Range', [intScalar('att/start', 0), intScalar('att/limit', 12),
                                                     intScalar('att/delta', 1)], {Tidx: IT})),
  node('att/filled', 'Fill', [vec('att/fill_dims', [1, 12]), scalar('att/fill_value', 0.25)], {T, index_type: IT}),
  asFloat('att/rank_f', node('att/rank', 'Rank', ['att/tokens'], {T})),
  asFloat('att/size_f', node('att/size', 'Size', ['att/w_q'], {T, out_type: IT})),
];
total = 'att/flat_total';
for (const part of extras) total = node(`${part}/added`, 'AddV2', [total, part], {T});
node('attention', 'Identity', [total], {T});

// Run-time batch and sequence lengths, as a transformer exported from
// TensorFlow has them: tokens [N, L, 4] split into 2 heads by a Reshape to
// Pack(batch, length, 2, 2) of tf.shape's elements, attention within each
// head, merged back by Reshape(Pack(batch, length, 4)), plus position
// embeddings cut to the length (StridedSlice with a run-time end): 'dynamic'.
node('tokens', 'Placeholder', [], {dtype: T, shape: {shape: shapeOf([-1, -1, 4])}});
node('dyn/shape', 'Shape', ['tokens'], {T, out_type: IT});
const element = (name, i) => node(name, 'StridedSlice',
    ['dyn/shape', vec(`${name}/begin`, [i]), vec(`${name}/end`, [i + 1]), vec(`${name}/strides`, [1])],
    {T: IT, Index: IT, begin_mask: {i: '0'}, end_mask: {i: '0'}, ellipsis_mask: {i: '0'}, new_axis_mask: {i: '0'},
     shrink_axis_mask: {i: '1'}});
const pack = (name, parts) => node(name, 'Pack', parts, {T: IT, N: {i: String(parts.length)}, axis: {i: '0'}});
element('dyn/batch', 0);
element('dyn/length', 1);
node('dyn/split', 'Reshape', ['tokens', pack('dyn/heads', ['dyn/batch', 'dyn/length', intScalar('dyn/two', 2), 'dyn/two'])],
     {T, Tshape: IT});
node('dyn/by_head', 'Transpose', ['dyn/split', vec('dyn/perm', [0, 2, 1, 3])], {T, Tperm: IT});  // [N, 2, L, 2]
node('dyn/scores', 'BatchMatMulV2', ['dyn/by_head', 'dyn/by_head'], {T, adj_x: {b: false}, adj_y: {b: true}});
node('dyn/weights', 'Softmax', ['dyn/scores'], {T});
node('dyn/mixed', 'BatchMatMulV2', ['dyn/weights', 'dyn/by_head'], {T, adj_x: {b: false}, adj_y: {b: false}});
node('dyn/by_token', 'Transpose', ['dyn/mixed', 'dyn/perm'], {T, Tperm: IT});
node('dyn/merged', 'Reshape', ['dyn/by_token', pack('dyn/width', ['dyn/batch', 'dyn/length', intScalar('dyn/four', 4)])],
     {T, Tshape: IT});
constant('dyn/table', [16, 4], values(64), {group: 1});
node('dyn/positions', 'StridedSlice',
     ['dyn/table', vec('dyn/zeros', [0, 0]), pack('dyn/cut', ['dyn/length', 'dyn/four']), vec('dyn/ones', [1, 1])],
     {T, Index: IT, begin_mask: {i: '0'}, end_mask: {i: '0'}, ellipsis_mask: {i: '0'}, new_axis_mask: {i: '0'},
      shrink_axis_mask: {i: '0'}});
node('dynamic', 'AddV2', ['dyn/merged', 'dyn/positions'], {T});
// The last two tokens, from a begin computed at run time (tokens[:, L - 2:]): 'dyn_tail'.
node('dyn/start', 'Sub', ['dyn/length', 'dyn/two'], {T: IT});
node('dyn_tail', 'StridedSlice',
     ['tokens', pack('dyn/tail_begin', [intScalar('dyn/zero', 0), 'dyn/start', 'dyn/zero']),
      vec('dyn/tail_end', [0, 0, 0]), vec('dyn/tail_strides', [1, 1, 1])],
     {T, Index: IT, begin_mask: {i: '0'}, end_mask: {i: '7'}, ellipsis_mask: {i: '0'}, new_axis_mask: {i: '0'},
      shrink_axis_mask: {i: '0'}});
// Positions L - 2 .. L - 1 (tf.range of a start and limit from tf.shape): 'dyn_positions'.
cast('dyn_positions', node('dyn/range', 'Range', ['dyn/start', 'dyn/length', intScalar('dyn/one', 1)], {Tidx: IT}),
     'DT_INT32');
// The largest min(L, 3) token values, k computed at run time (TopKV2 of a tf.minimum): 'dyn_top'.
node('dyn/flat', 'Reshape', ['tokens', vec('dyn/flat_shape', [-1])], {T, Tshape: IT});
node('dyn/k', 'Minimum', ['dyn/length', intScalar('dyn/three', 3)], {T: IT});
node('dyn/top', 'TopKV2', ['dyn/flat', 'dyn/k'], {T, sorted: {b: true}});
node('dyn_top', 'Identity', ['dyn/top'], {T});
// A row broadcast to the tokens' run-time [N, L, 4] (tf.broadcast_to(row, tf.shape(tokens))): 'dyn_broadcast'.
node('dyn_broadcast', 'BroadcastTo',
     [vec('dyn/row', [1, 2, 3, 4], 'float32'), pack('dyn/tokens_shape', ['dyn/batch', 'dyn/length', 'dyn/four'])],
     {T, Tidx: IT});
// The images resized to the tokens' run-time length squared (tf.image.resize(images, [L, L])): 'dyn_resized'.
node('dyn_resized', 'ResizeBilinear', ['images', pack('dyn/square', ['dyn/length', 'dyn/length'])],
     {T, align_corners: {b: false}, half_pixel_centers: {b: true}});

// Post-processing whose output sizes follow from the values: the image's
// values as 150 boxes [y1, x1, y2, x2] scored by their mean, kept by
// NonMaxSuppressionV3, V4 (padded to its maximum) and V5 (with scores), and
// Where of a test: 'nms', 'nms4/indices', 'nms4/valid', 'nms5/scores', 'where'; Unique: 'unique/values',
// 'unique/idx'.
node('det/boxes', 'Reshape', ['images', vec('det/box_shape', [-1, 4])], {T, Tshape: IT});
node('det/scores', 'Mean', ['det/boxes', intScalar('det/axis', 1)], {T, keep_dims: {b: false}, Tidx: IT});
node('det/nms3', 'NonMaxSuppressionV3',
     ['det/boxes', 'det/scores', intScalar('det/max3', 150), scalar('det/iou3', 0.3), scalar('det/score3', 0.45)],
     {T, T_threshold: T});
cast('nms', 'det/nms3', 'DT_INT32');
node('det/nms4', 'NonMaxSuppressionV4',
     ['det/boxes', 'det/scores', intScalar('det/max4', 100), scalar('det/iou4', 0.5), scalar('det/score4', 0.5)],
     {T, T_threshold: T, pad_to_max_output_size: {b: true}});
cast('nms4/indices', 'det/nms4', 'DT_INT32');
cast('nms4/valid', 'det/nms4:1', 'DT_INT32');
node('det/nms5', 'NonMaxSuppressionV5',
     ['det/boxes', 'det/scores', intScalar('det/max5', 150), scalar('det/iou5', 0.4), scalar('det/score5', 0.4),
      scalar('det/sigma', 0)],
     {T, pad_to_max_output_size: {b: false}});
node('nms5/scores', 'Identity', ['det/nms5:1'], {T});
node('det/high', 'Greater', ['det/scores', scalar('det/cut', 0.55)], {T});
node('det/where', 'Where', ['det/high'], {T: {type: 'DT_BOOL'}});
cast('where', 'det/where', 'DT_INT64');
// Unique of the scores rounded to tenths: the values in first-occurrence order and each score's place.
node('det/tenths', 'Round', [node('det/x10', 'Mul', ['det/scores', scalar('det/ten', 10)], {T})], {T});
node('det/unique', 'Unique', ['det/tenths'], {T, out_idx: IT});
node('unique/values', 'Identity', ['det/unique'], {T});
cast('unique/idx', 'det/unique:1', 'DT_INT32');

// ---- Control flow: StatelessWhile and StatelessIf calling library functions ----
// (No Consts inside the functions: the constants they need come in as loop
// variables the body passes through.)
const functions = [];
const FT = 'DT_FLOAT', I32 = 'DT_INT32';
function fn(name, inputs, outputs, body, ret) {
  functions.push({
    signature: {name, inputArg: inputs.map(([n, t]) => ({name: n, type: t})),
                outputArg: outputs.map(([n, t]) => ({name: n, type: t}))},
    nodeDef: body.map(([n, op, input, attr]) => ({name: n, op, input, attr})),
    ret,
  });
}
const types = (list) => ({list: {type: list}});
// loop: while i < limit: i += one, acc = tanh(acc * w + w); w, one, limit pass through.
const loopArgs = [['i', I32], ['acc', FT], ['w', FT], ['one', I32], ['limit', I32]];
fn('loop_cond', loopArgs, [['go', 'DT_BOOL']], [['less', 'Less', ['i', 'limit'], {T: IT}]], {go: 'less:z:0'});
fn('loop_body', loopArgs, loopArgs.map(([n, t]) => [n + '_out', t]),
   [['next_i', 'AddV2', ['i', 'one'], {T: IT}], ['scaled', 'Mul', ['acc', 'w'], {T}],
    ['shifted', 'AddV2', ['scaled:z:0', 'w'], {T}], ['act', 'Tanh', ['shifted:z:0'], {T}],
    ['w_id', 'Identity', ['w'], {T}], ['one_id', 'Identity', ['one'], {T: IT}],
    ['limit_id', 'Identity', ['limit'], {T: IT}]],
   {i_out: 'next_i:z:0', acc_out: 'act:y:0', w_out: 'w_id:output:0', one_out: 'one_id:output:0',
    limit_out: 'limit_id:output:0'});
node('loop/while', 'StatelessWhile',
     [intScalar('loop/i0', 0), 'features', constant('loop/w', [12], values(12), {group: 1}), intScalar('loop/one', 1),
      intScalar('loop/limit', 3)],
     {T: types([I32, FT, FT, I32, I32]), cond: {func: {name: 'loop_cond'}}, body: {func: {name: 'loop_body'}},
      parallel_iterations: {i: '10'}, output_shapes: {list: {}}});
node('loop', 'Identity', ['loop/while:1'], {T});
// grow: a sequence one element longer each step: seq = concat(seq, [float(i)]) while i < limit.
const growArgs = [['i', I32], ['seq', FT], ['one', I32], ['limit', I32], ['zero', I32]];
fn('grow_cond', growArgs, [['go', 'DT_BOOL']], [['less', 'Less', ['i', 'limit'], {T: IT}]], {go: 'less:z:0'});
fn('grow_body', growArgs, growArgs.map(([n, t]) => [n + '_out', t]),
   [['next_i', 'AddV2', ['i', 'one'], {T: IT}], ['fi', 'Cast', ['i'], {SrcT: IT, DstT: T, Truncate: {b: false}}],
    ['one_elem', 'ExpandDims', ['fi:y:0', 'zero'], {T, Tdim: IT}],
    ['longer', 'ConcatV2', ['seq', 'one_elem:output:0', 'zero'], {T, N: {i: '2'}, Tidx: IT}],
    ['one_id', 'Identity', ['one'], {T: IT}], ['limit_id', 'Identity', ['limit'], {T: IT}],
    ['zero_id', 'Identity', ['zero'], {T: IT}]],
   {i_out: 'next_i:z:0', seq_out: 'longer:output:0', one_out: 'one_id:output:0', limit_out: 'limit_id:output:0',
    zero_out: 'zero_id:output:0'});
node('grow/while', 'StatelessWhile',
     ['loop/i0', constant('grow/empty', [0], [], {group: 1}), 'loop/one', intScalar('grow/limit', 4),
      intScalar('grow/zero', 0)],
     {T: types([I32, FT, I32, I32, I32]), cond: {func: {name: 'grow_cond'}}, body: {func: {name: 'grow_body'}},
      parallel_iterations: {i: '10'}, output_shapes: {list: {}}});
node('grow', 'Identity', ['grow/while:1'], {T});
// rnn: a Keras-style recurrent loop over the tokens' time steps: read step t from a TensorList made from
// the sequence, h = tanh((x_t + h) w), write h at t into a reserved TensorList, stack it: [L, N, 4].
const VT = 'DT_VARIANT';
const rnnArgs = [['t', I32], ['steps', I32], ['h', FT], ['outs', VT], ['ins', VT], ['w', FT], ['one', I32],
                 ['shape', I32]];
fn('rnn_cond', rnnArgs, [['go', 'DT_BOOL']], [['less', 'Less', ['t', 'steps'], {T: IT}]], {go: 'less:z:0'});
fn('rnn_body', rnnArgs, rnnArgs.map(([n, t]) => [n + '_out', t]),
   [['x_t', 'TensorListGetItem', ['ins', 't', 'shape'], {element_dtype: T}],
    ['sum', 'AddV2', ['x_t:item:0', 'h'], {T}],
    ['mm', 'MatMul', ['sum:z:0', 'w'], {T, transpose_a: {b: false}, transpose_b: {b: false}}],
    ['act', 'Tanh', ['mm:product:0'], {T}],
    ['write', 'TensorListSetItem', ['outs', 't', 'act:y:0'], {element_dtype: T}],
    ['next_t', 'AddV2', ['t', 'one'], {T: IT}],
    ['steps_id', 'Identity', ['steps'], {T: IT}], ['ins_id', 'Identity', ['ins'], {T: {type: VT}}],
    ['w_id', 'Identity', ['w'], {T}], ['one_id', 'Identity', ['one'], {T: IT}],
    ['shape_id', 'Identity', ['shape'], {T: IT}]],
   {t_out: 'next_t:z:0', steps_out: 'steps_id:output:0', h_out: 'act:y:0', outs_out: 'write:output_handle:0',
    ins_out: 'ins_id:output:0', w_out: 'w_id:output:0', one_out: 'one_id:output:0', shape_out: 'shape_id:output:0'});
node('rnn/seq', 'Transpose', ['tokens', vec('rnn/perm', [1, 0, 2])], {T, Tperm: IT});
node('rnn/shape', 'Shape', ['rnn/seq'], {T, out_type: IT});
node('rnn/steps', 'StridedSlice', ['rnn/shape', vec('rnn/b', [0]), vec('rnn/e', [1]), vec('rnn/s', [1])],
     {T: IT, Index: IT, begin_mask: {i: '0'}, end_mask: {i: '0'}, ellipsis_mask: {i: '0'}, new_axis_mask: {i: '0'},
      shrink_axis_mask: {i: '1'}});
vec('rnn/element', [-1, 4]);
node('rnn/ins', 'TensorListFromTensor', ['rnn/seq', 'rnn/element'], {element_dtype: T, shape_type: IT});
node('rnn/outs', 'TensorListReserve', ['rnn/element', 'rnn/steps'], {element_dtype: T, shape_type: IT});
node('rnn/h0', 'Mul', [node('rnn/first', 'Sum', ['tokens', intScalar('rnn/axis', 1)],
                            {T, Tidx: IT, keep_dims: {b: false}}), scalar('rnn/zero', 0)], {T});
node('rnn/while', 'StatelessWhile',
     ['loop/i0', 'rnn/steps', 'rnn/h0', 'rnn/outs', 'rnn/ins', constant('rnn/w', [4, 4], values(16), {group: 1}),
      'loop/one', 'rnn/element'],
     {T: types([I32, I32, FT, VT, VT, FT, I32, I32]), cond: {func: {name: 'rnn_cond'}},
      body: {func: {name: 'rnn_body'}}, parallel_iterations: {i: '10'}, output_shapes: {list: {}}});
node('rnn', 'TensorListStack', ['rnn/while:3', 'rnn/element'], {element_dtype: T, num_elements: {i: '-1'}});
// learning: TensorFlow 1's cond on a learning phase left at its default (false): features + 1, not * 0.5.
node('lp/default', 'Const', [], {dtype: {type: 'DT_BOOL'}, value: {tensor: {dtype: 'DT_BOOL', tensorShape: shapeOf([])}}});
weights[1].push({spec: {name: 'lp/default', shape: [], dtype: 'bool'}, bytes: Buffer.from([0])});
node('lp', 'PlaceholderWithDefault', ['lp/default'], {dtype: {type: 'DT_BOOL'}, shape: {shape: shapeOf([])}});
node('lp/switch', 'Switch', ['lp', 'lp'], {T: {type: 'DT_BOOL'}});
node('lp/switch_t', 'Identity', ['lp/switch:1'], {T: {type: 'DT_BOOL'}});
node('lp/switch_f', 'Identity', ['lp/switch'], {T: {type: 'DT_BOOL'}});
node('lp/x', 'Switch', ['features', 'lp'], {T});
nodes.push({name: 'lp/half', op: 'Const', input: ['^lp/switch_t'],
            attr: {dtype: T, value: {tensor: {dtype: 'DT_FLOAT', tensorShape: shapeOf([])}}}});
weights[1].push({spec: {name: 'lp/half', shape: [], dtype: 'float32'}, bytes: Buffer.from(Float32Array.from([0.5]).buffer)});
nodes.push({name: 'lp/one', op: 'Const', input: ['^lp/switch_f'],
            attr: {dtype: T, value: {tensor: {dtype: 'DT_FLOAT', tensorShape: shapeOf([])}}}});
weights[1].push({spec: {name: 'lp/one', shape: [], dtype: 'float32'}, bytes: Buffer.from(Float32Array.from([1]).buffer)});
node('lp/mul', 'Mul', ['lp/x:1', 'lp/half'], {T});
node('lp/add', 'AddV2', ['lp/x', 'lp/one'], {T});
node('learning', 'Merge', ['lp/add', 'lp/mul'], {T, N: {i: '2'}});
// branch: features doubled where the tokens sum above 0, else negated; branch2 the other way round.
fn('double_it', [['x', FT]], [['y', FT]], [['sum', 'AddV2', ['x', 'x'], {T}]], {y: 'sum:z:0'});
fn('negate', [['x', FT]], [['y', FT]], [['neg', 'Neg', ['x'], {T}]], {y: 'neg:y:0'});
node('cond/total', 'Sum', ['tokens', vec('cond/axes', [0, 1, 2])], {T, Tidx: IT, keep_dims: {b: false}});
node('cond/positive', 'Greater', ['cond/total', scalar('cond/zero', 0)], {T});
node('cond/negative', 'LogicalNot', ['cond/positive']);
const ifAttrs = {Tcond: {type: 'DT_BOOL'}, Tin: types([FT]), Tout: types([FT]), then_branch: {func: {name: 'double_it'}},
                 else_branch: {func: {name: 'negate'}}, output_shapes: {list: {}}};
node('branch', 'Identity', [node('cond/if', 'StatelessIf', ['cond/positive', 'features'], ifAttrs)], {T});
node('branch2', 'Identity', [node('cond/if2', 'StatelessIf', ['cond/negative', 'features'], ifAttrs)], {T});

// ---- TensorFlow 1 while loops: frames of Enter, Merge, Switch, LoopCond, NextIteration, Exit ----
// A Const inside a loop: its control input from the loop's pivot puts it in the frame.
function framedConst(name, pivot, shape, data, dtype = 'float32') {
  const tfDtype = dtype === 'int32' ? 'DT_INT32' : 'DT_FLOAT';
  nodes.push({name, op: 'Const', input: ['^' + pivot],
              attr: {dtype: {type: tfDtype}, value: {tensor: {dtype: tfDtype, tensorShape: shapeOf(shape)}}}});
  weights[1].push({spec: {name, shape, dtype},
                   bytes: Buffer.from((dtype === 'int32' ? Int32Array.from(data) : Float32Array.from(data)).buffer)});
  return name;
}
const RT = {type: 'DT_RESOURCE'};
const enter = (name, from, frame, constant, t) =>
  node(name, 'Enter', [from], {T: t, frame_name: str(frame), is_constant: {b: constant},
                               parallel_iterations: {i: '32'}});
// The loop variables' Enter, Merge, Switch, Identity (the body's view) and Exit around `cond`; `next`
// gives each variable's next value from the Identities and the frame's pivot.
function tf1Loop(scope, frame, initial, types, cond, next) {
  const merges = initial.map((x, k) => {
    const sfx = k ? '_' + k : '';
    enter(`${scope}/Enter${sfx}`, x, frame, false, types[k]);
    return node(`${scope}/Merge${sfx}`, 'Merge', [`${scope}/Enter${sfx}`, `${scope}/NextIteration${sfx}`],
                {T: types[k], N: {i: '2'}});
  });
  node(`${scope}/LoopCond`, 'LoopCond', [cond(merges)]);
  const ids = merges.map((m, k) => {
    const sfx = k ? '_' + k : '';
    node(`${scope}/Switch${sfx}`, 'Switch', [m, `${scope}/LoopCond`], {T: types[k]});
    node(`${scope}/Exit${sfx}`, 'Exit', [`${scope}/Switch${sfx}`], {T: types[k]});
    return node(`${scope}/Identity${sfx}`, 'Identity', [`${scope}/Switch${sfx}:1`], {T: types[k]});
  });
  next(ids).forEach((x, k) => node(`${scope}/NextIteration${k ? '_' + k : ''}`, 'NextIteration', [x], {T: types[k]}));
}
// v1rnn: dynamic_rnn's loop over the tokens' time steps: the input unstacked into a TensorArray (a
// scatter of range(steps)), h = tanh((x_t + h) w) written into an output TensorArray of unknown element
// shape (its gather states it), stacked: [L, N, 4]; v1h is the last h.
const taAttrs = (shape, clear = true) => ({dtype: T, element_shape: {shape: shape ? shapeOf(shape) : {unknownRank: true}},
                             dynamic_size: {b: false}, clear_after_read: {b: clear},
                             identical_element_shapes: {b: true}, tensor_array_name: str('')});
node('v1/in_ta', 'TensorArrayV3', ['rnn/steps'], taAttrs([-1, 4]));
node('v1/in_range', 'Range', ['loop/i0', 'rnn/steps', 'loop/one'], {Tidx: IT});
node('v1/unstack', 'TensorArrayScatterV3', ['v1/in_ta', 'v1/in_range', 'rnn/seq', 'v1/in_ta:1'], {T});
node('v1/out_ta', 'TensorArrayV3', ['rnn/steps'], taAttrs(null, false));  // read twice: stacked and concatenated
const v1Frame = 'v1/while/while_context';
tf1Loop('v1/while', v1Frame, ['loop/i0', 'rnn/h0', 'v1/out_ta:1'], [IT, T, T],
        ([t]) => node('v1/while/Less', 'Less', [t, enter('v1/while/Less/Enter', 'rnn/steps', v1Frame, true, IT)],
                      {T: IT}),
        ([t, h, flow]) => {
          const x = node('v1/while/read', 'TensorArrayReadV3',
                         [enter('v1/while/read/Enter', 'v1/in_ta', v1Frame, true, RT), t,
                          enter('v1/while/read/Enter_1', 'v1/unstack', v1Frame, true, T)], {dtype: T});
          node('v1/while/add', 'AddV2', [x, h], {T});
          node('v1/while/MatMul', 'MatMul', ['v1/while/add', enter('v1/while/MatMul/Enter', 'rnn/w', v1Frame, true, T)],
               {T, transpose_a: {b: false}, transpose_b: {b: false}});
          node('v1/while/Tanh', 'Tanh', ['v1/while/MatMul'], {T});
          node('v1/while/write', 'TensorArrayWriteV3',
               [enter('v1/while/write/Enter', 'v1/out_ta', v1Frame, true, RT), t, 'v1/while/Tanh', flow], {T});
          const one = framedConst('v1/while/add_1/y', 'v1/while/Identity', [], [1], 'int32');
          return [node('v1/while/add_1', 'AddV2', [t, one], {T: IT}), 'v1/while/Tanh', 'v1/while/write'];
        });
node('v1/size', 'TensorArraySizeV3', ['v1/out_ta', 'v1/while/Exit_2']);
node('v1/range', 'Range', ['loop/i0', 'v1/size', 'loop/one'], {Tidx: IT});
node('v1rnn', 'TensorArrayGatherV3', ['v1/out_ta', 'v1/range', 'v1/while/Exit_2'],
     {dtype: T, element_shape: {shape: shapeOf([-1, 4])}});
node('v1h', 'Identity', ['v1/while/Exit_1'], {T});
// v1concat: the states joined along the batch: [L * N, 4]; v1split: the 4x4 weight split into two 2x4
// elements, gathered in reverse.
node('v1concat', 'TensorArrayConcatV3', ['v1/out_ta', 'v1/while/Exit_2'],
     {dtype: T, element_shape_except0: {shape: shapeOf([4])}});
node('v1/split_ta', 'TensorArrayV3', [intScalar('v1/two', 2)], taAttrs([2, 4]));
node('v1/split', 'TensorArraySplitV3', ['v1/split_ta', 'rnn/w', vec('v1/lengths', [2, 2]), 'v1/split_ta:1'], {T});
node('v1split', 'TensorArrayGatherV3', ['v1/split_ta', vec('v1/reversed', [1, 0]), 'v1/split'],
     {dtype: T, element_shape: {shape: shapeOf([2, 4])}});
// v1nest: nested loops: for i < 3: acc = 0.5 * (inner loop, i + 1 times: s = tanh(s + w) from s = acc).
// The inner loop enters w straight from outside (TensorFlow.js cannot run it entered through the outer
// loop's Enter, as TensorFlow 1 writes it; tfjs_test.cc checks that form against this one's result).
const outer = 'v1n/while/while_context', inner = 'v1n/while/inner/while_context';
tf1Loop('v1n/while', outer, ['loop/i0', 'features'], [IT, T],
        ([i]) => node('v1n/while/Less', 'Less', [i, enter('v1n/while/Less/Enter', 'loop/limit', outer, true, IT)],
                      {T: IT}),
        ([i, acc]) => {
          const one = framedConst('v1n/while/one', 'v1n/while/Identity', [], [1], 'int32');
          const bound = node('v1n/while/bound', 'AddV2', [i, one], {T: IT});
          enter('v1n/while/w/Enter', 'loop/w', outer, true, T);
          tf1Loop('v1n/while/inner', inner, [node('v1n/while/zero', 'Sub', [i, i], {T: IT}), acc],
                  [IT, T],
                  ([j]) => node('v1n/while/inner/Less', 'Less',
                                [j, enter('v1n/while/inner/Less/Enter', bound, inner, true, IT)], {T: IT}),
                  ([j, s]) => {
                    node('v1n/while/inner/add', 'AddV2', [s, enter('v1n/while/inner/w', 'loop/w', inner, true, T)], {T});
                    const step = framedConst('v1n/while/inner/one', 'v1n/while/inner/Identity', [], [1], 'int32');
                    return [node('v1n/while/inner/next', 'AddV2', [j, step], {T: IT}),
                            node('v1n/while/inner/tanh', 'Tanh', ['v1n/while/inner/add'], {T})];
                  });
          const half = framedConst('v1n/while/half', 'v1n/while/Identity', [], [0.5]);
          return [node('v1n/while/next', 'AddV2', [i, one], {T: IT}),
                  node('v1n/while/scaled', 'Mul', ['v1n/while/inner/Exit_1', half], {T})];
        });
node('v1nest', 'Identity', ['v1n/while/Exit_1'], {T});

// ---- TensorFlow 1 conds on a predicate known only at run time ----
// tf1Cond(scope, pred): on the true side features * 2 + 1, on the false side -features (<scope>); and a
// second output: on the true side a nested cond (tanh(features * 2) where the features sum above 0, else
// sigmoid), on the false side |features| (<scope>_nested). Constants hang on the branch markers.
function tf1Cond(scope, pred, nestedPred) {
  const marker = (s, p) => {
    node(`${s}/Switch`, 'Switch', [p, p], {T: {type: 'DT_BOOL'}});
    node(`${s}/switch_t`, 'Identity', [`${s}/Switch:1`], {T: {type: 'DT_BOOL'}});
    node(`${s}/switch_f`, 'Identity', [`${s}/Switch`], {T: {type: 'DT_BOOL'}});
    return node(`${s}/pred_id`, 'Identity', [p], {T: {type: 'DT_BOOL'}});
  };
  const predId = marker(scope, pred);
  node(`${scope}/Switch_1`, 'Switch', ['features', predId], {T});
  const two = framedConst(`${scope}/two`, `${scope}/switch_t`, [], [2]);
  const one = framedConst(`${scope}/one`, `${scope}/switch_t`, [], [1]);
  node(`${scope}/mul`, 'Mul', [`${scope}/Switch_1:1`, two], {T});
  node(`${scope}/add`, 'AddV2', [`${scope}/mul`, one], {T});
  node(`${scope}/neg`, 'Neg', [`${scope}/Switch_1`], {T});
  node(`${scope}/Merge`, 'Merge', [`${scope}/neg`, `${scope}/add`], {T, N: {i: '2'}});
  node(scope.replace('/cond', ''), 'Identity', [`${scope}/Merge`], {T});
  // The nested cond, inside the true branch; its predicate computed there.
  const inner = `${scope}/inner`;
  const axes = framedConst(`${inner}/axes`, `${scope}/switch_t`, [2], [0, 1], 'int32');
  node(`${inner}/total`, 'Sum', [`${scope}/mul`, axes], {T, Tidx: IT, keep_dims: {b: false}});
  const zero = framedConst(`${inner}/zero`, `${scope}/switch_t`, [], [0]);
  node(`${inner}/pred`, nestedPred, [`${inner}/total`, zero], {T});
  const innerId = marker(inner, `${inner}/pred`);
  node(`${inner}/Switch_1`, 'Switch', [`${scope}/mul`, innerId], {T});
  node(`${inner}/tanh`, 'Tanh', [`${inner}/Switch_1:1`], {T});
  node(`${inner}/sigmoid`, 'Sigmoid', [`${inner}/Switch_1`], {T});
  node(`${inner}/Merge`, 'Merge', [`${inner}/sigmoid`, `${inner}/tanh`], {T, N: {i: '2'}});
  node(`${scope}/abs`, 'Abs', [`${scope}/Switch_1`], {T});
  node(`${scope}/Merge_1`, 'Merge', [`${scope}/abs`, `${inner}/Merge`], {T, N: {i: '2'}});
  node(scope.replace('/cond', '') + '_nested', 'Identity', [`${scope}/Merge_1`], {T});
}
tf1Cond('v1cond/cond', 'cond/positive', 'Greater');
tf1Cond('v1cond2/cond', 'cond/negative', 'Less');

// ---- Files -------------------------------------------------------------------
async function main() {
  const out = process.argv[2];
  const dir = path.join(out, 'model');
  fs.mkdirSync(dir, {recursive: true});
  // Group 1 in two shards split mid-weight; group 2 in one.
  const g0 = Buffer.concat(weights[0].map((w) => w.bytes)), g1 = Buffer.concat(weights[1].map((w) => w.bytes));
  const cut = Math.floor(g0.length / 2) + 1;
  fs.writeFileSync(path.join(dir, 'group1-shard1of2.bin'), g0.subarray(0, cut));
  fs.writeFileSync(path.join(dir, 'group1-shard2of2.bin'), g0.subarray(cut));
  fs.writeFileSync(path.join(dir, 'group2-shard1of1.bin'), g1);
  const tensorInfo = (name, dims) => ({name, dtype: 'DT_FLOAT', tensorShape: shapeOf(dims)});
  const modelJson = {
    format: 'graph-model',
    generatedBy: 'hub tests/js/tfjs_graph_model.js',
    convertedBy: 'hub tests/js/tfjs_graph_model.js',
    signature: {
      inputs: {'images:0': tensorInfo('images:0', [-1, 10, 10, 3]), 'tokens:0': tensorInfo('tokens:0', [-1, -1, 4])},
      outputs: {'probs:0': tensorInfo('probs:0', [-1, 5]), 'features:0': tensorInfo('features:0', [-1, 12]),
                'log_probs/cast:0': tensorInfo('log_probs/cast:0', [-1, 5]), 'resized:0': tensorInfo('resized:0', [-1, 54]),
                'math:0': tensorInfo('math:0', [-1, 12]), 'attention:0': tensorInfo('attention:0', [-1, 12]),
                'dynamic:0': tensorInfo('dynamic:0', [-1, -1, 4]),
                'dyn_resized:0': tensorInfo('dyn_resized:0', [-1, -1, -1, 3]),
                'dyn_tail:0': tensorInfo('dyn_tail:0', [-1, 2, 4]),
                'dyn_broadcast:0': tensorInfo('dyn_broadcast:0', [-1, -1, 4]),
                'dyn_positions:0': tensorInfo('dyn_positions:0', [-1]), 'dyn_top:0': tensorInfo('dyn_top:0', [-1]),
                'nms:0': tensorInfo('nms:0', [-1]),
                'nms4/indices:0': tensorInfo('nms4/indices:0', [100]), 'nms4/valid:0': tensorInfo('nms4/valid:0', []),
                'nms5/scores:0': tensorInfo('nms5/scores:0', [-1]), 'where:0': tensorInfo('where:0', [-1, 1]),
                'unique/values:0': tensorInfo('unique/values:0', [-1]), 'unique/idx:0': tensorInfo('unique/idx:0', [-1]),
                'loop:0': tensorInfo('loop:0', [-1, 12]), 'grow:0': tensorInfo('grow:0', [-1]),
                'branch:0': tensorInfo('branch:0', [-1, 12]), 'branch2:0': tensorInfo('branch2:0', [-1, 12]),
                'rnn:0': tensorInfo('rnn:0', [-1, -1, 4]), 'learning:0': tensorInfo('learning:0', [-1, 12]),
                'v1rnn:0': tensorInfo('v1rnn:0', [-1, -1, 4]), 'v1h:0': tensorInfo('v1h:0', [-1, 4]),
                'v1nest:0': tensorInfo('v1nest:0', [-1, 12]), 'v1concat:0': tensorInfo('v1concat:0', [-1, 4]),
                'v1split:0': tensorInfo('v1split:0', [2, 2, 4]), 'v1cond:0': tensorInfo('v1cond:0', [-1, 12]),
                'v1cond_nested:0': tensorInfo('v1cond_nested:0', [-1, 12]),
                'v1cond2:0': tensorInfo('v1cond2:0', [-1, 12]),
                'v1cond2_nested:0': tensorInfo('v1cond2_nested:0', [-1, 12])},
    },
    modelTopology: {node: nodes, library: {function: functions}, versions: {producer: 1395}},
    weightsManifest: [
      {paths: ['group1-shard1of2.bin', 'group1-shard2of2.bin'], weights: weights[0].map((w) => w.spec)},
      {paths: ['group2-shard1of1.bin'], weights: weights[1].map((w) => w.spec)},
    ],
  };
  fs.writeFileSync(path.join(dir, 'model.json'), JSON.stringify(modelJson, null, 1));

  // TF.js reads the files back through its own model.json parsing.
  await tf.setBackend('cpu');
  const json = JSON.parse(fs.readFileSync(path.join(dir, 'model.json'), 'utf8'));
  const handler = {
    load: async () => tf.io.getModelArtifactsForJSON(json, async (manifest) => {
      const specs = [], buffers = [];
      for (const group of manifest) {
        specs.push(...group.weights);
        for (const p of group.paths) buffers.push(fs.readFileSync(path.join(dir, p)));
      }
      const all = Buffer.concat(buffers);
      return [specs, all.buffer.slice(all.byteOffset, all.byteOffset + all.byteLength)];
    }),
  };
  const model = await tf.loadGraphModel(handler);
  const input = tf.tensor(values(2 * 10 * 10 * 3, 0, 1), [2, 10, 10, 3]);
  fs.writeFileSync(path.join(out, 'input.bin'), Buffer.from(input.dataSync().buffer));
  const tokens = tf.tensor(values(2 * 5 * 4), [2, 5, 4]);
  fs.writeFileSync(path.join(out, 'tokens.bin'), Buffer.from(tokens.dataSync().buffer));
  const names = ['probs', 'features', 'log_probs/cast', 'resized', 'math', 'attention', 'dynamic', 'dyn_resized', 'dyn_tail', 'dyn_broadcast', 'dyn_positions', 'dyn_top',
                 'nms',
                 'nms4/indices', 'nms4/valid', 'nms5/scores', 'where', 'unique/values', 'unique/idx', 'loop', 'grow',
                 'branch', 'branch2', 'rnn', 'learning', 'v1rnn', 'v1h', 'v1nest', 'v1concat', 'v1split', 'v1cond',
                 'v1cond_nested', 'v1cond2', 'v1cond2_nested'];
  // executeAsync: NonMaxSuppression, Where and control flow are asynchronous in TF.js.
  const results = await model.executeAsync({images: input, tokens}, names);
  const shapes = {};
  names.forEach((name, i) => {
    const file = name.replace(/\//g, '_') + '.bin';
    fs.writeFileSync(path.join(out, file), Buffer.from(Float32Array.from(results[i].dataSync()).buffer));
    shapes[name] = {file, shape: results[i].shape};
  });
  fs.writeFileSync(path.join(out, 'outputs.json'), JSON.stringify(shapes));
}

main().catch((e) => {
  console.error(`tfjs_graph_model: ${e.stack || e.message || e}`);
  process.exit(1);
});
