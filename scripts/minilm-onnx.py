"""Write all-MiniLM-L6-v2 as an ONNX graph from the safetensors weights that
fetch-model.sh installs, for memd's ONNX Runtime embedder (src/embed/onnx.rs).

The graph is BERT as candle's implementation runs it: embeddings and their
LayerNorm, then per layer self-attention with an additive mask, LayerNorm, a
feed-forward with exact (erf) GELU, LayerNorm. Its one output is
`last_hidden_state` [batch, seq, hidden]; memd mean-pools and normalises it
itself (src/embed/minilm.rs). A test holds its vectors to ones recorded from
candle (tests/it/fixtures/minilm-reference.json). No torch and no network:
it needs the PyPI packages onnx, numpy and safetensors.

usage: python3 minilm-onnx.py MODEL_DIR   (writes MODEL_DIR/model.onnx)
"""
import json
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from safetensors.numpy import load_file


class Graph:
    """Nodes and initialisers, with fresh names for intermediate values."""

    def __init__(self):
        self.nodes, self.inits, self.count = [], [], 0

    def const(self, name, value):
        self.inits.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    def op(self, kind, inputs, **attrs):
        self.count += 1
        out = f"{kind.lower()}_{self.count}"
        self.nodes.append(helper.make_node(kind, inputs, [out], **attrs))
        return out


def build(model_dir):
    cfg = json.load(open(os.path.join(model_dir, "config.json")))
    hidden, heads = cfg["hidden_size"], cfg["num_attention_heads"]
    head_dim = hidden // heads
    weights = load_file(os.path.join(model_dir, "model.safetensors"))
    weights = {k.removeprefix("bert."): v for k, v in weights.items()}
    g = Graph()

    def dense(x, name):
        w = g.const(name + ".w_t", np.ascontiguousarray(weights[name + ".weight"].T))
        return g.op("Add", [g.op("MatMul", [x, w]), g.const(name + ".b", weights[name + ".bias"])])

    def norm(x, name):
        gamma = g.const(name + ".g", weights[name + ".weight"])
        beta = g.const(name + ".b", weights[name + ".bias"])
        return g.op("LayerNormalization", [x, gamma, beta], axis=-1, epsilon=cfg["layer_norm_eps"])

    i64 = lambda v: np.array(v, dtype=np.int64)
    f32 = lambda v: np.array(v, dtype=np.float32)

    # Embeddings: word + position (0..seq) + token type.
    seq_len = g.op("Gather", [g.op("Shape", ["input_ids"]), g.const("dim1", i64(1))], axis=0)
    positions = g.op("Range", [g.const("zero", i64(0)), seq_len, g.const("step", i64(1))])
    x = g.op("Add", [
        g.op("Add", [
            g.op("Gather", [g.const("word", weights["embeddings.word_embeddings.weight"]), "input_ids"]),
            g.op("Gather", [g.const("pos", weights["embeddings.position_embeddings.weight"]), positions]),
        ]),
        g.op("Gather", [g.const("type", weights["embeddings.token_type_embeddings.weight"]), "token_type_ids"]),
    ])
    x = norm(x, "embeddings.LayerNorm")

    # Additive mask [batch, 1, 1, seq]: 0 on tokens, a large negative on padding.
    keep = g.op("Cast", ["attention_mask"], to=TensorProto.FLOAT)
    mask = g.op("Mul", [g.op("Sub", [g.const("one", f32(1.0)), keep]), g.const("neg", f32(-10000.0))])
    mask = g.op("Unsqueeze", [mask, g.const("axes", i64([1, 2]))])

    split = g.const("split_heads", i64([0, 0, heads, head_dim]))
    merge = g.const("merge_heads", i64([0, 0, hidden]))
    scale = g.const("scale", f32(1.0 / np.sqrt(head_dim)))
    for layer in range(cfg["num_hidden_layers"]):
        p = f"encoder.layer.{layer}"
        per_head = lambda name, perm: g.op("Transpose", [g.op("Reshape", [dense(x, name), split])], perm=perm)
        q = per_head(p + ".attention.self.query", [0, 2, 1, 3])
        k = per_head(p + ".attention.self.key", [0, 2, 3, 1])
        v = per_head(p + ".attention.self.value", [0, 2, 1, 3])
        scores = g.op("Add", [g.op("Mul", [g.op("MatMul", [q, k]), scale]), mask])
        context = g.op("MatMul", [g.op("Softmax", [scores], axis=-1), v])
        context = g.op("Reshape", [g.op("Transpose", [context], perm=[0, 2, 1, 3]), merge])
        x = norm(g.op("Add", [dense(context, p + ".attention.output.dense"), x]), p + ".attention.output.LayerNorm")
        h = dense(x, p + ".intermediate.dense")
        erf = g.op("Erf", [g.op("Div", [h, g.const(f"sqrt2_{layer}", f32(np.sqrt(2.0)))])])
        gelu = g.op("Mul", [g.op("Mul", [h, g.const(f"half_{layer}", f32(0.5))]), g.op("Add", [erf, "one"])])
        x = norm(g.op("Add", [dense(gelu, p + ".output.dense"), x]), p + ".output.LayerNorm")

    g.nodes.append(helper.make_node("Identity", [x], ["last_hidden_state"]))
    inputs = [helper.make_tensor_value_info(n, TensorProto.INT64, ["batch", "seq"])
              for n in ("input_ids", "attention_mask", "token_type_ids")]
    output = helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, ["batch", "seq", hidden])
    model = helper.make_model(helper.make_graph(g.nodes, "all-MiniLM-L6-v2", inputs, [output], g.inits),
                              opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def main():
    model_dir = sys.argv[1]
    out = os.path.join(model_dir, "model.onnx")
    onnx.save(build(model_dir), out + ".part")
    os.replace(out + ".part", out)
    print("wrote", out)


if __name__ == "__main__":
    main()
