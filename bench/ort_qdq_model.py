#!/usr/bin/python3
"""ONNX Runtime's int8 reference model, made with Debian's python3-onnx from
the float model: the QDQ form ONNX Runtime's own quantizer writes and its CPU
provider fuses into integer kernels (QLinearConv, QGemm, quantized pooling).

Usage: ort_qdq_model.py FLOAT.onnx QUANTIZATION.json OUT.onnx

FLOAT.onnx is a float model as `hub convert --to onnx` writes it (NCHW Conv,
BatchNormalization, Clip/Relu, Gemm, bias Adds). QUANTIZATION.json is
`hub info --json` of the module `hub quantize` made from the same float
module; only its activation scales and zero points are read, so both int8
models see the same calibration. Everything else is done here, from the
float weights: batch norms and bias Adds are folded into their layer, weights
are quantized symmetrically per output channel (int8, scale max|w| / 127),
biases to int32 with scale input_scale * weight_scale, and a Clip/Relu that
the uint8 range after it already implies is dropped.

An activation named T in the JSON is the float tensor T, or, when T is
LAYER/NAME, the activation that ends LAYER's chain Conv|Gemm [-> batch norm |
bias Add] [-> Clip | Relu] (hub names an activation after the node that makes
it). An activation that feeds only a Transpose is quantized after it, where
the layers read it.
"""
import json
import sys

import numpy as np
import onnx
from onnx import helper, numpy_helper


def fail(message):
    sys.exit("ort_qdq_model: " + message)


class Model:
    def __init__(self, model):
        self.model = model
        self.graph = model.graph
        self.inits = {t.name: numpy_helper.to_array(t) for t in self.graph.initializer}
        self.count = 0

    def fresh(self, base):
        self.count += 1
        return "%s/qdq_%d" % (base, self.count)

    def producer(self, name):
        for n in self.graph.node:
            if name in n.output:
                return n
        return None

    def consumers(self, name):
        return [n for n in self.graph.node if name in n.input]

    def is_graph_output(self, name):
        return any(o.name == name for o in self.graph.output)

    def constant(self, name):
        if name in self.inits:
            return self.inits[name]
        p = self.producer(name)
        if p is not None and p.op_type == "Constant":
            return numpy_helper.to_array(p.attribute[0].t)
        return None

    def add_init(self, base, array):
        name = self.fresh(base)
        self.graph.initializer.append(numpy_helper.from_array(array, name))
        self.inits[name] = array
        return name

    def set_init(self, name, array):
        for i, t in enumerate(self.graph.initializer):
            if t.name == name:
                self.graph.initializer[i].CopyFrom(numpy_helper.from_array(array, name))
        self.inits[name] = array

    def single_consumer(self, name, op_types):
        c = self.consumers(name)
        if len(c) == 1 and c[0].op_type in op_types and not self.is_graph_output(name):
            return c[0]
        return None


def rename(graph, old, new):
    for n in graph.node:
        for i, x in enumerate(n.input):
            if x == old:
                n.input[i] = new


def attr(node, name, default):
    for a in node.attribute:
        if a.name == name:
            return helper.get_attribute_value(a)
    return default


def layer_output_channels(m, layer):
    w = m.inits[layer.input[1]]
    if layer.op_type == "Conv":
        return w.shape[0]
    return w.shape[0] if attr(layer, "transB", 0) else w.shape[1]


def bias_of(m, layer):
    if len(layer.input) > 2 and layer.input[2]:
        return m.inits[layer.input[2]].astype(np.float64)
    return np.zeros(layer_output_channels(m, layer))


def set_bias(m, layer, bias):
    bias = bias.astype(np.float32)
    if len(layer.input) > 2 and layer.input[2]:
        m.set_init(layer.input[2], bias)
    else:
        while len(layer.input) < 3:
            layer.input.append("")
        layer.input[2] = m.add_init(layer.output[0] + "/bias", bias)


def fold(m, layer):
    """Folds the batch norm or bias Add after a Conv/Gemm into its weights and bias."""
    channels = layer_output_channels(m, layer)
    while True:
        nxt = m.single_consumer(layer.output[0], ("BatchNormalization", "Add"))
        if nxt is None:
            return
        if nxt.op_type == "BatchNormalization":
            gamma, beta, mean, var = (m.inits[i].astype(np.float64) for i in nxt.input[1:5])
            scale = gamma / np.sqrt(var + attr(nxt, "epsilon", 1e-5))
            w = m.inits[layer.input[1]].astype(np.float64)
            if layer.op_type == "Conv":
                w = w * scale.reshape(-1, *([1] * (w.ndim - 1)))
            elif attr(layer, "transB", 0):
                w = w * scale[:, None]
            else:
                w = w * scale[None, :]
            m.set_init(layer.input[1], w.astype(np.float32))
            set_bias(m, layer, (bias_of(m, layer) - mean) * scale + beta)
        else:
            other = nxt.input[1] if nxt.input[0] == layer.output[0] else nxt.input[0]
            b = m.constant(other)
            if b is None or b.size != channels:
                return
            set_bias(m, layer, bias_of(m, layer) + b.reshape(-1))
        out = nxt.output[0]
        m.graph.node.remove(nxt)
        rename(m.graph, out, layer.output[0])
        for o in m.graph.output:
            if o.name == out:
                o.name = layer.output[0]


def activation_of(m, name, layers):
    """The float tensor an activation record of hub names (see the module doc)."""
    if m.producer(name) is not None or any(i.name == name for i in m.graph.input):
        t = name
    else:
        layer = layers.get(name.rsplit("/", 1)[0])
        if layer is None:
            fail("activation '%s': no such tensor or layer in the float model" % name)
        t = layer.output[0]
        act = m.single_consumer(t, ("Clip", "Relu"))
        if act is not None:
            t = act.output[0]
    transpose = m.single_consumer(t, ("Transpose",))
    return transpose.output[0] if transpose is not None else t


def clip_range(m, node):
    if node.op_type == "Relu":
        return 0.0, np.inf
    lo = m.constant(node.input[1]) if len(node.input) > 1 and node.input[1] else None
    hi = m.constant(node.input[2]) if len(node.input) > 2 and node.input[2] else None
    return (-np.inf if lo is None else float(lo)), (np.inf if hi is None else float(hi))


def quantize_activation(m, tensor, scale, zero_point, params):
    """Q -> DQ on tensor (uint8); every reader reads the DQ output. A Clip/Relu
    producing tensor is dropped when [scale * (0 - zp), scale * (255 - zp)]
    lies inside its range."""
    p = m.producer(tensor)
    source = tensor
    if p is not None and p.op_type in ("Clip", "Relu"):
        lo, hi = clip_range(m, p)
        if scale * (0 - zero_point) >= lo - 1e-6 and scale * (255 - zero_point) <= hi + 1e-6:
            source = p.input[0]
    s = m.add_init(tensor + "/scale", np.array(scale, dtype=np.float32))
    z = m.add_init(tensor + "/zero_point", np.array(zero_point, dtype=np.uint8))
    q, dq = m.fresh(tensor + "/quantized"), m.fresh(tensor + "/dequantized")
    readers = m.consumers(tensor)
    m.graph.node.extend([helper.make_node("QuantizeLinear", [source, s, z], [q]),
                         helper.make_node("DequantizeLinear", [q, s, z], [dq])])
    for n in readers:
        for i, x in enumerate(n.input):
            if x == tensor:
                n.input[i] = dq
    if source != tensor and not m.is_graph_output(tensor):
        m.graph.node.remove(p)
    params[dq] = scale


PASS_THROUGH = ("AveragePool", "MaxPool", "GlobalAveragePool", "Transpose", "Reshape", "Squeeze", "Flatten")


def share_downstream_params(m, layer, params):
    """A layer whose output reaches a quantized activation only through pooling
    and reshaping gets that activation's parameters, and so does each tensor
    on the way (as hub's int8 pools share them), so the layer's output is
    quantized too and the runtime can fuse it."""
    t = layer.output[0]
    act = m.single_consumer(t, ("Clip", "Relu"))
    if act is not None:
        t = act.output[0]
    chain = [t]
    while not any(c.op_type == "QuantizeLinear" for c in m.consumers(chain[-1])):
        nxt = m.single_consumer(chain[-1], PASS_THROUGH)
        if nxt is None:
            return
        chain.append(nxt.output[0])
    q = next(c for c in m.consumers(chain[-1]) if c.op_type == "QuantizeLinear")
    for tensor in chain[:-1]:
        quantize_activation(m, tensor, float(m.inits[q.input[1]]), int(m.inits[q.input[2]]), params)


def quantize_weights(m, layer, input_scale):
    """int8 weights per output channel and int32 bias, each read through a DequantizeLinear."""
    w = m.inits[layer.input[1]].astype(np.float64)
    bias = bias_of(m, layer)
    axis = 0 if layer.op_type == "Conv" or attr(layer, "transB", 0) else 1
    reduce = tuple(d for d in range(w.ndim) if d != axis)
    scale = np.abs(w).max(axis=reduce) / 127.0
    scale[scale == 0] = 1.0
    shape = [1] * w.ndim
    shape[axis] = -1
    q = np.clip(np.round(w / scale.reshape(shape)), -127, 127).astype(np.int8)
    name = layer.input[1]
    wq = m.add_init(name + "/int8", q)
    ws = m.add_init(name + "/scale", scale.astype(np.float32))
    wz = m.add_init(name + "/zero_point", np.zeros(scale.shape, dtype=np.int8))
    wd = m.fresh(name + "/dequantized")
    nodes = [helper.make_node("DequantizeLinear", [wq, ws, wz], [wd], axis=axis)]
    layer.input[1] = wd
    bias_scale = (input_scale * scale).astype(np.float32)
    bq = m.add_init(name + "/bias_int32", np.round(bias / bias_scale).astype(np.int32))
    bs = m.add_init(name + "/bias_scale", bias_scale)
    bz = m.add_init(name + "/bias_zero_point", np.zeros(scale.shape, dtype=np.int32))
    bd = m.fresh(name + "/bias_dequantized")
    nodes.append(helper.make_node("DequantizeLinear", [bq, bs, bz], [bd], axis=0))
    while len(layer.input) < 3:
        layer.input.append("")
    layer.input[2] = bd
    m.graph.node.extend(nodes)


def main(argv):
    if len(argv) != 4:
        fail("usage: ort_qdq_model.py FLOAT.onnx QUANTIZATION.json OUT.onnx")
    try:
        model = onnx.load(argv[1])
    except Exception as e:  # onnx raises several types for a bad file
        fail("%s: not an ONNX model (%s)" % (argv[1], e))
    try:
        with open(argv[2]) as f:
            activations = json.load(f)["quantization"]["activations"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        fail("%s: no quantization.activations (hub info --json of a quantized module): %s" % (argv[2], e))
    m = Model(model)
    layers = {}
    for n in list(m.graph.node):
        if n.op_type in ("Conv", "Gemm") and n.input[1] in m.inits:
            layers[n.output[0]] = n
            fold(m, n)
    params = {}
    for a in activations:
        quantize_activation(m, activation_of(m, a["tensor"], layers), float(a["scale"]), int(a["zero_point"]),
                            params)
    recorded = len(params)
    for layer in layers.values():
        if layer.input[0] in params:
            share_downstream_params(m, layer, params)
    quantized = 0
    for layer in layers.values():
        if layer.input[0] in params:
            quantize_weights(m, layer, params[layer.input[0]])
            quantized += 1
    if quantized == 0:
        fail("no Conv or Gemm reads a quantized activation: do %s and %s come from the same module?" %
             (argv[1], argv[2]))
    used = {x for n in m.graph.node for x in n.input}
    for t in list(m.graph.initializer):
        if t.name not in used:
            m.graph.initializer.remove(t)
    for o in model.opset_import:
        if o.domain in ("", "ai.onnx") and o.version < 13:
            o.version = 13  # DequantizeLinear's axis
    # Nodes were appended; ONNX wants them in dependency order.
    order, ready = [], {i.name for i in m.graph.input} | {t.name for t in m.graph.initializer} | {""}
    pending = list(m.graph.node)
    while pending:
        progress = [n for n in pending if all(i in ready for i in n.input)]
        if not progress:
            fail("the rewritten graph has a cycle or a dangling input")
        for n in progress:
            order.append(n)
            ready.update(n.output)
        done = {id(n) for n in progress}
        pending = [n for n in pending if id(n) not in done]
    del m.graph.node[:]
    m.graph.node.extend(order)
    onnx.checker.check_model(model)
    onnx.save(model, argv[3])
    print("ort_qdq_model: %d int8 layers, %d activations from %s, %d sharing a later one's parameters -> %s" %
          (quantized, recorded, argv[2], len(params) - recorded, argv[3]))


if __name__ == "__main__":
    main(sys.argv)
