#!/usr/bin/python3
"""Writes ONNX models in the style of PyTorch's exporter, with Debian's
python3-onnx (test tooling only: the library has no Python anywhere).

Usage: make_onnx_models.py OUT_DIR

For each model NAME it writes OUT_DIR/NAME.onnx and one input,
OUT_DIR/NAME.input.bin (float32, little-endian, C order), with its shape in
OUT_DIR/manifest.json: {"NAME": {"input": INPUT_NAME, "shape": [...],
"output": OUTPUT_NAME}}. Weights are random with a fixed seed, so every run
writes the same files.
"""
import json
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

RNG = np.random.default_rng(20261124)


class Builder:
    """A graph under construction: initializers, nodes and fresh names."""

    def __init__(self):
        self.nodes, self.inits, self.count = [], [], 0

    def name(self, base):
        self.count += 1
        return "%s_%d" % (base, self.count)

    def weight(self, shape, scale=None):
        fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else int(shape[0])
        scale = scale if scale is not None else 1.0 / np.sqrt(max(fan_in, 1))
        name = self.name("onnx::W")
        self.inits.append(numpy_helper.from_array((RNG.standard_normal(shape) * scale).astype(np.float32), name))
        return name

    def const(self, array, base="onnx::Const"):
        name = self.name(base)
        self.inits.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    def op(self, op_type, inputs, n_out=1, **attrs):
        outs = [self.name(op_type) for _ in range(n_out)]
        self.nodes.append(helper.make_node(op_type, inputs, outs, name=self.name("/" + op_type), **attrs))
        return outs[0] if n_out == 1 else outs

    def conv(self, x, cin, cout, k, stride=1, pads=None, group=1, dilation=1, bias=True, auto_pad=None):
        w = self.weight([cout, cin // group, k, k])
        ins = [x, w] + ([self.const(RNG.standard_normal(cout).astype(np.float32) * 0.1)] if bias else [])
        attrs = dict(kernel_shape=[k, k], strides=[stride, stride], group=group, dilations=[dilation, dilation])
        if auto_pad:
            attrs["auto_pad"] = auto_pad
        else:
            attrs["pads"] = pads if pads is not None else [k // 2] * 4
        return self.op("Conv", ins, **attrs)

    def bn(self, x, c):
        scale = self.const((1 + 0.1 * RNG.standard_normal(c)).astype(np.float32))
        bias = self.const((0.1 * RNG.standard_normal(c)).astype(np.float32))
        mean = self.const((0.1 * RNG.standard_normal(c)).astype(np.float32))
        var = self.const((1 + 0.2 * RNG.random(c)).astype(np.float32))
        return self.op("BatchNormalization", [x, scale, bias, mean, var], epsilon=1e-5)

    def model(self, inp, shape, out, opset=13, batch_param=True, out_dims=None):
        dims = ["N"] + list(shape[1:]) if batch_param else list(shape)
        x = helper.make_tensor_value_info(inp, TensorProto.FLOAT, dims)
        # The output's shape comes from ONNX's own shape inference.
        probe = helper.make_model(helper.make_graph(self.nodes, "g", [x], [], self.inits),
                                  opset_imports=[helper.make_opsetid("", opset)])
        inferred = onnx.shape_inference.infer_shapes(probe, data_prop=True)
        y = next(v for v in inferred.graph.value_info if v.name == out)
        if not y.type.tensor_type.HasField("shape"):
            y = helper.make_tensor_value_info(out, TensorProto.FLOAT, out_dims)
        graph = helper.make_graph(self.nodes, "g", [x], [y], self.inits)
        m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], producer_name="hub-tests")
        m.ir_version = 7
        onnx.checker.check_model(m)
        return m


def cnn():
    """Conv/BN/ReLU, max pool, grouped conv with asymmetric pads, Clip 0..6,
    depthwise, HardSwish, ceil_mode average pool counting pads, global pool,
    flatten, Gemm, softmax."""
    b = Builder()
    x = b.conv("input.1", 3, 8, 3)
    x = b.op("Relu", [b.bn(x, 8)])
    x = b.op("MaxPool", [x], kernel_shape=[2, 2], strides=[2, 2])
    x = b.conv(x, 8, 8, 3, pads=[0, 1, 2, 1], group=2)
    x = b.op("Clip", [x, b.const(np.float32(0)), b.const(np.float32(6))])
    x = b.conv(x, 8, 16, 3, stride=2, group=8)
    x = b.op("HardSwish", [b.bn(x, 16)])
    x = b.op("AveragePool", [x], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], ceil_mode=1,
             count_include_pad=1)
    x = b.op("GlobalAveragePool", [x])
    x = b.op("Flatten", [x], axis=1)
    x = b.op("Gemm", [x, b.weight([10, 16]), b.const(np.zeros(10, np.float32) + 0.05)], transB=1)
    out = b.op("Softmax", [x], axis=1)
    return b.model("input.1", [2, 3, 32, 32], out, opset=14), "input.1", [2, 3, 32, 32], out


def reshape_chain():
    """PyTorch's x.view(x.size(0), -1): Shape -> Gather -> Unsqueeze ->
    Concat -> Reshape, with a batch dimension known only at run time."""
    b = Builder()
    x = b.op("LeakyRelu", [b.conv("x", 3, 4, 3, stride=2, auto_pad="SAME_LOWER")], alpha=0.2)
    shape = b.op("Shape", [x])
    n = b.op("Gather", [shape, b.const(np.int64(0))], axis=0)
    n1 = b.op("Unsqueeze", [n, b.const(np.array([0], np.int64))])
    target = b.op("Concat", [n1, b.const(np.array([-1], np.int64))], axis=0)
    flat = b.op("Reshape", [x, target])
    out = b.op("MatMul", [flat, b.weight([4 * 8 * 8, 5])])
    return b.model("x", [3, 3, 16, 16], out, opset=13, out_dims=["N", 5]), "x", [3, 3, 16, 16], out


def resize():
    """Upsampling as PyTorch exports it: nearest (asymmetric, floor) and
    bilinear (half_pixel and align_corners), padding with reflection."""
    b = Builder()
    x = b.conv("img", 3, 4, 3)
    scales = b.const(np.array([1, 1, 2, 2], np.float32))
    x = b.op("Resize", [x, "", scales], mode="nearest", coordinate_transformation_mode="asymmetric",
             nearest_mode="floor")
    x = b.op("Resize", [x, "", b.const(np.array([1, 1, 0.75, 0.75], np.float32))], mode="linear",
             coordinate_transformation_mode="pytorch_half_pixel")
    x = b.op("Resize", [x, "", "", b.const(np.array([2, 4, 9, 11], np.int64))], mode="linear",
             coordinate_transformation_mode="align_corners")
    x = b.op("Pad", [x, b.const(np.array([0, 0, 1, 2, 0, 0, 2, 1], np.int64))], mode="reflect")
    out = b.conv(x, 4, 2, 3, pads=[0, 0, 0, 0])
    return b.model("img", [2, 3, 6, 7], out, opset=13, batch_param=False), "img", [2, 3, 6, 7], out


def mobilenet():
    """A small MobileNet v1 in PyTorch's export style (conv-BN-ReLU6,
    depthwise/pointwise pairs, global average pool, flatten, Gemm): the
    pretrained network of the import -> retrain -> convert example."""
    b = Builder()
    x = b.op("Clip", [b.bn(b.conv("input", 3, 16, 3, stride=2, bias=False), 16), b.const(np.float32(0)),
                      b.const(np.float32(6))])
    cin = 16
    for cout, stride in [(32, 1), (64, 2), (64, 1), (128, 2)]:
        x = b.op("Clip", [b.bn(b.conv(x, cin, cin, 3, stride=stride, group=cin, bias=False), cin),
                          b.const(np.float32(0)), b.const(np.float32(6))])
        x = b.op("Clip", [b.bn(b.conv(x, cin, cout, 1, bias=False), cout), b.const(np.float32(0)),
                          b.const(np.float32(6))])
        cin = cout
    x = b.op("Flatten", [b.op("GlobalAveragePool", [x])], axis=1)
    out = b.op("Gemm", [x, b.weight([1000, cin]), b.const(np.zeros(1000, np.float32))], transB=1)
    return b.model("input", [1, 3, 64, 64], out, opset=11), "input", [1, 3, 64, 64], out


def vit():
    """A tiny Vision Transformer as PyTorch exports it (opset 17): patch
    embedding by a strided convolution, flatten and transpose to tokens,
    position embeddings, one pre-norm block (LayerNormalization, multi-head
    attention through Reshape/Transpose/MatMul/Softmax, GELU written with
    Erf), a final LayerNormalization, mean over tokens and a Gemm head; the
    batch is known only at run time."""
    b = Builder()
    d, heads, tokens = 16, 2, 16

    def linear(x, cin, cout):
        return b.op("Add", [b.op("MatMul", [x, b.weight([cin, cout])]),
                            b.const((0.1 * RNG.standard_normal(cout)).astype(np.float32))])

    def layer_norm(x):
        scale = b.const((1 + 0.1 * RNG.standard_normal(d)).astype(np.float32))
        bias = b.const((0.1 * RNG.standard_normal(d)).astype(np.float32))
        return b.op("LayerNormalization", [x, scale, bias], axis=-1, epsilon=1e-6)

    def split_heads(x):  # [N, T, D] -> [N, H, T, D/H]
        x = b.op("Reshape", [x, b.const(np.array([0, tokens, heads, d // heads], np.int64))])
        return b.op("Transpose", [x], perm=[0, 2, 1, 3])

    x = b.conv("pixels", 3, d, 4, stride=4, pads=[0, 0, 0, 0])  # [N, D, 4, 4]
    x = b.op("Reshape", [x, b.const(np.array([0, d, tokens], np.int64))])
    x = b.op("Transpose", [x], perm=[0, 2, 1])  # [N, T, D]
    x = b.op("Add", [x, b.const((0.02 * RNG.standard_normal([1, tokens, d])).astype(np.float32))])
    h = layer_norm(x)
    q, k, v = (split_heads(linear(h, d, d)) for _ in range(3))
    scores = b.op("MatMul", [q, b.op("Transpose", [k], perm=[0, 1, 3, 2])])
    scores = b.op("Mul", [scores, b.const(np.float32(1 / np.sqrt(d // heads)))])
    attn = b.op("MatMul", [b.op("Softmax", [scores], axis=-1), v])
    attn = b.op("Reshape", [b.op("Transpose", [attn], perm=[0, 2, 1, 3]), b.const(np.array([0, tokens, d], np.int64))])
    x = b.op("Add", [x, linear(attn, d, d)])
    h = linear(layer_norm(x), d, 4 * d)
    gelu = b.op("Erf", [b.op("Div", [h, b.const(np.float32(np.sqrt(2)))])])
    gelu = b.op("Mul", [b.op("Mul", [h, b.op("Add", [gelu, b.const(np.float32(1))])]), b.const(np.float32(0.5))])
    x = b.op("Add", [x, linear(gelu, 4 * d, d)])
    x = b.op("ReduceMean", [layer_norm(x)], axes=[1], keepdims=0)
    out = b.op("Gemm", [x, b.weight([10, d]), b.const(np.zeros(10, np.float32) + 0.01)], transB=1)
    return b.model("pixels", [2, 3, 16, 16], out, opset=17, out_dims=["N", 10]), "pixels", [2, 3, 16, 16], out


def half_weights():
    """Weights stored in narrower or wider types than they compute in, as
    exporters write compressed models: a float16 convolution kernel, a
    bfloat16 scale and a double bias, each Cast to float before use."""
    b = Builder()

    def stored(array, onnx_type):
        name = b.name("onnx::Stored")
        if onnx_type == TensorProto.BFLOAT16:
            bits = (np.asarray(array, np.float32).view(np.uint32) >> 16).astype(np.uint16)
            t = helper.make_tensor(name, TensorProto.BFLOAT16, array.shape, bits.tobytes(), raw=True)
        else:
            t = numpy_helper.from_array(array, name)
        b.inits.append(t)
        return b.op("Cast", [name], to=TensorProto.FLOAT)

    kernel = stored((RNG.standard_normal([8, 3, 3, 3]) / np.sqrt(27)).astype(np.float16), TensorProto.FLOAT16)
    bias = stored(0.1 * RNG.standard_normal(8), TensorProto.DOUBLE)
    x = b.op("Conv", ["input", kernel, bias], kernel_shape=[3, 3], pads=[1, 1, 1, 1])
    scale = stored((1 + 0.1 * RNG.standard_normal([1, 8, 1, 1])).astype(np.float32), TensorProto.BFLOAT16)
    out = b.op("Relu", [b.op("Mul", [x, scale])])
    return b.model("input", [1, 3, 8, 8], out, opset=13), "input", [1, 3, 8, 8], out


def detector():
    """A one-stage detector's head and post-processing as exported whole:
    per cell of an 8 x 8 grid, a box and three class scores; boxes scoring
    above 0.3 in any class (NonZero of ReduceMax's test, then Gather), then
    NonMaxSuppression (corner boxes, IoU 0.4, at most 20 per class; score
    threshold 0.35) and the kept boxes gathered with their class as
    [M, 5]. M follows from the values."""
    b = Builder()
    y = b.op("Relu", [b.conv("input", 3, 8, 3, stride=2)])
    y = b.conv(y, 8, 7, 1, pads=[0, 0, 0, 0])                                   # [1, 7, 8, 8]
    y = b.op("Reshape", [y, b.const(np.array([1, 7, 64], np.int64))])
    raw, logits = b.op("Split", [y, b.const(np.array([4, 3], np.int64))], n_out=2, axis=1)
    # Corners [y1, x1, y2, x2] around the cell's own point, unordered (NMS takes either order).
    boxes = b.op("Transpose", [b.op("Mul", [raw, b.const(np.float32(4.0))])], perm=[0, 2, 1])
    scores = b.op("Sigmoid", [logits])                                           # [1, 3, 64]
    best = b.op("ReduceMax", [scores], axes=[1], keepdims=0)                     # [1, 64]
    hit = b.op("NonZero", [b.op("Greater", [best, b.const(np.float32(0.3))])])   # [2, K]
    cells = b.op("Gather", [hit, b.const(np.int64(1))], axis=0)                  # [K]
    boxes = b.op("Gather", [boxes, cells], axis=1)                               # [1, K, 4]
    scores = b.op("Gather", [scores, cells], axis=2)                             # [1, 3, K]
    kept = b.op("NonMaxSuppression", [boxes, scores, b.const(np.array([20], np.int64)),
                                      b.const(np.array([0.4], np.float32)),
                                      b.const(np.array([0.35], np.float32))])     # [M, 3]
    which = b.op("Gather", [kept, b.const(np.int64(2))], axis=1)                 # [M]
    cls = b.op("Cast", [b.op("Gather", [kept, b.const(np.array([1], np.int64))], axis=1)], to=TensorProto.FLOAT)
    picked = b.op("Gather", [b.op("Squeeze", [boxes, b.const(np.array([0], np.int64))]), which], axis=0)
    out = b.op("Concat", [picked, cls], axis=1)                                  # [M, 5]
    return b.model("input", [1, 3, 16, 16], out, opset=13, batch_param=False, out_dims=["M", 5]), \
        "input", [1, 3, 16, 16], out


def recurrent():
    """Control flow as exporters write it: a Loop over time steps (at most 5,
    stopping after the step whose index reaches 3) whose body reads the
    convolution features and a weight from the graph around it, updates a
    state h [1, 8], grows a sequence by one value per step and scans h; inside
    it an If on a run-time condition (the sign of the state's sum) picks how
    the state is updated. One output: the final h, the scanned states and the
    sequence, flattened and concatenated."""
    b = Builder()
    feat = b.op("Relu", [b.conv("input", 3, 8, 3)])                                 # [1, 8, 8, 8]
    w = b.weight([8, 8])
    one = b.const(np.float32(1.0))

    def vi(name, elem, dims):
        return helper.make_tensor_value_info(name, elem, dims)

    # The If's branches (read h_next, feat and one from around them).
    then_node = helper.make_node("Add", ["h_next", "one_step"], ["then_h"])
    then_one = helper.make_node("Constant", [], ["one_step"], value=numpy_helper.from_array(np.float32(0.5)))
    then_g = helper.make_graph([then_one, then_node], "then", [], [vi("then_h", TensorProto.FLOAT, [1, 8])])
    pooled = helper.make_node("ReduceMean", ["feat_in"], ["pooled"], axes=[2, 3], keepdims=0)
    feat_id = helper.make_node("Identity", [feat], ["feat_in"])
    else_node = helper.make_node("Sub", ["pooled", "h_next"], ["else_h"])
    else_g = helper.make_graph([feat_id, pooled, else_node], "else", [], [vi("else_h", TensorProto.FLOAT, [1, 8])])

    body_nodes = [
        helper.make_node("Cast", ["iter"], ["iter_f"], to=TensorProto.FLOAT),
        helper.make_node("MatMul", ["h_in", w], ["hw"]),
        helper.make_node("ReduceMean", [feat], ["feat_mean"], axes=[2, 3], keepdims=0),
        helper.make_node("Mul", ["feat_mean", "iter_f"], ["feat_scaled"]),
        helper.make_node("Add", ["hw", "feat_scaled"], ["pre"]),
        helper.make_node("Tanh", ["pre"], ["h_next"]),
        helper.make_node("ReduceSum", ["h_next"], ["h_sum"], keepdims=0),
        helper.make_node("Greater", ["h_sum", "zero_f"], ["positive"]),
        helper.make_node("Constant", [], ["zero_f"], value=numpy_helper.from_array(np.float32(0.0))),
        helper.make_node("If", ["positive"], ["h_out"], then_branch=then_g, else_branch=else_g),
        helper.make_node("Add", ["h_sum", one], ["h_sum1"]),
        helper.make_node("Reshape", ["h_sum1", "shape_1"], ["h_sum_1"]),
        helper.make_node("Constant", [], ["shape_1"], value=numpy_helper.from_array(np.array([1], np.int64))),
        helper.make_node("Concat", ["seq_in", "h_sum_1"], ["seq_out"], axis=0),
        helper.make_node("Constant", [], ["three"], value=numpy_helper.from_array(np.int64(3))),
        helper.make_node("Less", ["iter", "three"], ["cond_out"]),
        helper.make_node("Identity", ["h_out"], ["h_scan"]),
    ]
    # Nodes in topological order (Constant before use).
    order = ["iter_f", "hw", "feat_mean", "feat_scaled", "pre", "h_next", "h_sum", "zero_f", "positive", "h_out",
             "h_sum1", "shape_1", "h_sum_1", "seq_out", "three", "cond_out", "h_scan"]
    produced = {n.output[0]: n for n in body_nodes}
    ordered, done = [], set()

    def place(name):
        n = produced.get(name)
        if n is None or name in done:
            return
        for i in n.input:
            place(i)
        done.add(name)
        ordered.append(n)
    for name in order:
        place(name)
    body = helper.make_graph(
        ordered, "body",
        [vi("iter", TensorProto.INT64, []), vi("cond_in", TensorProto.BOOL, []),
         vi("h_in", TensorProto.FLOAT, [1, 8]), vi("seq_in", TensorProto.FLOAT, ["S"])],
        [vi("cond_out", TensorProto.BOOL, []), vi("h_out", TensorProto.FLOAT, [1, 8]),
         vi("seq_out", TensorProto.FLOAT, ["S1"]), vi("h_scan", TensorProto.FLOAT, [1, 8])])
    h0 = b.const(np.zeros([1, 8], np.float32))
    seq0 = b.const(np.zeros([0], np.float32))
    h, seq, scans = b.op("Loop", [b.const(np.int64(5)), b.const(np.array(True)), h0, seq0], n_out=3, body=body)
    flat = [b.op("Reshape", [v, b.const(np.array([-1], np.int64))]) for v in (h, scans, seq)]
    out = b.op("Concat", flat, axis=0)
    return b.model("input", [1, 3, 8, 8], out, opset=13, batch_param=False, out_dims=["L"]), \
        "input", [1, 3, 8, 8], out


def main():
    out_dir = sys.argv[1]
    os.makedirs(out_dir, exist_ok=True)
    manifest = {}
    for make in [cnn, reshape_chain, resize, mobilenet, vit, half_weights, detector, recurrent]:
        model, inp, shape, out = make()
        name = make.__name__
        onnx.save(model, os.path.join(out_dir, name + ".onnx"))
        data = RNG.random(shape, dtype=np.float32)
        data.astype("<f4").tofile(os.path.join(out_dir, name + ".input.bin"))
        manifest[name] = {"input": inp, "shape": shape, "output": out}
    with open(os.path.join(out_dir, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)


if __name__ == "__main__":
    main()
