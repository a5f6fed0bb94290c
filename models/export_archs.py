#!/usr/bin/python3
"""Export the architectures measured on the H200 beyond the zoo (structure-only ONNX, opset 17).

Run with Debian's interpreter, as models/export_zoo.py (python3-torch 1.13,
python3-torchvision 0.14, python3-onnx 1.12):

    /usr/bin/python3 models/export_archs.py [--out models/archs] [--only NAME ...]

The architectures are those of data/gpu-truth/h200_pytorch_eager_more_models.json
(data/gpu-truth/architectures.py names their builders): torchvision's models
with weights=None and the zoo's GPT-2 / BERT classes with other
configurations. Every file follows the zoo's conventions (models/zoo/README.md:
seeded weight noise so no Identity node carries a merged weight, batch
pinned to 1 in the interface, shapes fully inferable at batch 1 and 8,
initializers >= 1 KiB moved out and deleted) and is checked by the zoo's own
checks; the ViTs get the zoo ViT-B/16's static-size forward.

`--plain` exports the same builders *without* the weight noise into
OUT/plain/, as a user's freshly initialised model comes out of the exporter:
equal weight tensors are merged behind `Identity` nodes. tessera must price
those exactly as the noised export (tests/estimator/noop_nodes_test.cc).

Writes OUT/figures.json and exits 1 if any check failed.
"""

import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import export_zoo as ez  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
import torchvision  # noqa: E402


class GPT2Six(ez.GPT2Config):
    n_layer = 6


class BertSmall(ez.BertConfig):
    hidden_size = 512
    num_hidden_layers = 4
    num_attention_heads = 8
    intermediate_size = 2048


def _vit(ctor):
    def build():
        model = ctor(weights=None)
        model.forward = ez._vit_forward.__get__(model)
        for m in model.modules():
            if isinstance(m, torch.nn.MultiheadAttention):
                m.forward = ez._mha_forward.__get__(m)
        return model

    return build


def _static_channel_shuffle(x, groups):
    """torchvision's channel_shuffle with the sizes as Python ints (the
    batch as -1): the original reads them with x.size(), which ONNX shape
    inference cannot follow through the Reshape."""
    _, c, h, w = (int(d) for d in x.shape)
    x = x.reshape(-1, groups, c // groups, h, w).transpose(1, 2)
    return x.reshape(-1, c, h, w)


def _static_inverted_residual_forward(self, x):
    """torchvision's InvertedResidual.forward with chunk's split point as a
    Python int (chunk exports as Slices of computed sizes)."""
    import torchvision.models.shufflenetv2 as sv2

    if self.stride == 1:
        c = int(x.shape[1]) // 2
        out = torch.cat((x[:, :c], self.branch2(x[:, c:])), dim=1)
    else:
        out = torch.cat((self.branch1(x), self.branch2(x)), dim=1)
    return sv2.channel_shuffle(out, 2)


def _shufflenet(name):
    def build():
        import torchvision.models.shufflenetv2 as sv2

        sv2.channel_shuffle = _static_channel_shuffle
        sv2.InvertedResidual.forward = _static_inverted_residual_forward
        return getattr(torchvision.models, name)(weights=None)

    return build


def _static_patch_merging_pad(x):
    """torchvision's _patch_merging_pad with H and W as Python ints."""
    h, w = int(x.shape[-3]), int(x.shape[-2])
    if h % 2 or w % 2:
        x = F.pad(x, (0, 0, 0, w % 2, 0, h % 2))
    x0 = x[..., 0::2, 0::2, :]
    x1 = x[..., 1::2, 0::2, :]
    x2 = x[..., 0::2, 1::2, :]
    x3 = x[..., 1::2, 1::2, :]
    return torch.cat([x0, x1, x2, x3], -1)


def _shift_mask(ph, pw, wh, ww, shift):
    """torchvision's attention mask of shifted windows, [windows, n, n],
    computed in Python so that the export holds it as one constant (the
    slice assignments that build it export as ops of unknown shape)."""
    region = [[0] * pw for _ in range(ph)]
    count = 0
    for r0, r1 in ((0, ph - wh), (ph - wh, ph - shift[0]), (ph - shift[0], ph)):
        for c0, c1 in ((0, pw - ww), (pw - ww, pw - shift[1]), (pw - shift[1], pw)):
            for r in range(r0, r1):
                for c in range(c0, c1):
                    region[r][c] = count
            count += 1
    windows = []
    for i in range(ph // wh):
        for j in range(pw // ww):
            ids = [region[i * wh + a][j * ww + b] for a in range(wh) for b in range(ww)]
            windows.append([[0.0 if p == q else -100.0 for p in ids] for q in ids])
    return torch.tensor(windows)


def _static_shifted_window_attention(
    input, qkv_weight, proj_weight, relative_position_bias, window_size, num_heads,
    shift_size, attention_dropout=0.0, dropout=0.0, qkv_bias=None, proj_bias=None,
    logit_scale=None,
):
    """torchvision 0.14's shifted_window_attention (Swin V1, eval) with every
    size but the batch a Python int and the batch as -1, so that ONNX shape
    inference follows it; it computes the same function. The attention
    dropout keeps torchvision's call (F.dropout without `training`: an
    inference-form Dropout node, which tessera prices as a no-op)."""
    assert logit_scale is None
    h, w, c = (int(d) for d in input.shape[1:])
    wh, ww = window_size
    pad_r = (ww - w % ww) % ww
    pad_b = (wh - h % wh) % wh
    x = F.pad(input, (0, 0, 0, pad_r, 0, pad_b)) if pad_r or pad_b else input
    ph, pw = h + pad_b, w + pad_r
    shift = list(shift_size)
    if wh >= ph:
        shift[0] = 0
    if ww >= pw:
        shift[1] = 0
    if sum(shift) > 0:
        x = torch.roll(x, shifts=(-shift[0], -shift[1]), dims=(1, 2))
    nw = (ph // wh) * (pw // ww)
    n = wh * ww
    x = x.reshape(-1, ph // wh, wh, pw // ww, ww, c)
    x = x.permute(0, 1, 3, 2, 4, 5).reshape(-1, n, c)
    qkv = F.linear(x, qkv_weight, qkv_bias)
    qkv = qkv.reshape(-1, n, 3, num_heads, c // num_heads).permute(2, 0, 3, 1, 4)
    q, k, v = qkv[0], qkv[1], qkv[2]
    q = q * (c // num_heads) ** -0.5
    attn = q.matmul(k.transpose(-2, -1))
    attn = attn + relative_position_bias
    if sum(shift) > 0:
        mask = _shift_mask(ph, pw, wh, ww, shift)  # a constant of the graph
        attn = attn.view(-1, nw, num_heads, n, n) + mask.unsqueeze(1).unsqueeze(0)
        attn = attn.view(-1, num_heads, n, n)
    attn = F.softmax(attn, dim=-1)
    attn = F.dropout(attn, p=attention_dropout)
    x = attn.matmul(v).transpose(1, 2).reshape(-1, n, c)
    x = F.linear(x, proj_weight, proj_bias)
    x = F.dropout(x, p=dropout)
    x = x.view(-1, ph // wh, pw // ww, wh, ww, c)
    x = x.permute(0, 1, 3, 2, 4, 5).reshape(-1, ph, pw, c)
    if sum(shift) > 0:
        x = torch.roll(x, shifts=(shift[0], shift[1]), dims=(1, 2))
    if pad_r or pad_b:
        x = x[:, :h, :w, :].contiguous()
    return x


def _swin(name):
    def build():
        import torchvision.models.swin_transformer as st

        st.shifted_window_attention = _static_shifted_window_attention
        st._patch_merging_pad = _static_patch_merging_pad
        return getattr(torchvision.models, name)(weights=None)

    return build


def check_swin_equivalence():
    """The static-size Swin-T computes what torchvision's does (eval)."""
    import torchvision.models.swin_transformer as st

    orig = (st.shifted_window_attention, st._patch_merging_pad)
    torch.manual_seed(ez.SEED)
    ref = torchvision.models.swin_t(weights=None).eval()
    x = torch.randn(2, 3, 224, 224, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        want = ref(x)
        st.shifted_window_attention, st._patch_merging_pad = (
            _static_shifted_window_attention, _static_patch_merging_pad)
        got = ref(x)
    st.shifted_window_attention, st._patch_merging_pad = orig
    return (want - got).abs().max().item()


def _tv(name, **kw):
    return lambda: getattr(torchvision.models, name)(weights=None, **kw)


TORCHVISION = [
    "resnet18", "resnet152", "wide_resnet50_2", "resnext50_32x4d", "densenet169",
    "mobilenet_v3_large", "shufflenet_v2_x1_0", "efficientnet_b3", "regnet_y_1_6gf",
    "convnext_small", "googlenet", "vgg19", "vit_b_32", "vit_l_16", "swin_t",
]


def specs():
    out = []
    for name in TORCHVISION:
        build = _tv(name)
        note = ""
        if name == "googlenet":
            build = _tv(name, aux_logits=False, init_weights=False)
            note = "aux_logits=False, init_weights=False (as measured)"
        if name.startswith("shufflenet"):
            build = _shufflenet(name)
            note = ("channel_shuffle and InvertedResidual.forward with static sizes "
                    "(the same functions)")
        if name.startswith("swin"):
            build = _swin(name)
            note = ("shifted_window_attention and _patch_merging_pad with static sizes "
                    "(the same function; attention dropout stays an inference-form "
                    "Dropout, as torchvision calls it)")
        if name.startswith("vit_"):
            build = _vit(getattr(torchvision.models, name))
            note = "the zoo ViT-B/16's static-size forward (models/export_zoo.py)"
        spec = ez._image(name, None, 224, note=note, build=build)
        spec["source"] = f"torchvision.models.{name}(weights=None), torchvision 0.14"
        out.append(spec)
    out.append(dict(
        name="gpt2_6layer", build=lambda: ez.GPT2LMHead(GPT2Six()),
        inputs=[("input_ids", torch.int64, (1, 1024))], outputs=["logits"],
        source="the zoo's GPT-2 small with 6 layers (export_zoo.GPT2LMHead)", note=""))
    out.append(dict(
        name="bert_small", build=lambda: ez.BertModel(BertSmall()),
        inputs=[("input_ids", torch.int64, (1, 128)),
                ("attention_mask", torch.int64, (1, 128)),
                ("token_type_ids", torch.int64, (1, 128))],
        outputs=["last_hidden_state", "pooler_output"],
        source="the zoo's BERT with hidden 512, 4 layers, 8 heads, intermediate 2048",
        note=""))
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.path.join(HERE, "archs"))
    ap.add_argument("--only", nargs="+", metavar="NAME")
    ap.add_argument("--plain", action="store_true",
                    help="no weight noise (Identity nodes behind merged weights), into OUT/plain")
    args = ap.parse_args(argv)
    out_dir = os.path.join(args.out, "plain") if args.plain else args.out
    os.makedirs(out_dir, exist_ok=True)
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    if args.plain:
        ez.add_noise = lambda model, gen: None
    fig_path = os.path.join(out_dir, "figures.json")
    figs = {}
    if os.path.exists(fig_path):
        with open(fig_path) as fh:
            figs = json.load(fh)
    failed = False
    if not args.only or "swin_t" in args.only:
        diff = check_swin_equivalence()
        print(f"swin_t static-size forward vs torchvision: max |diff| = {diff:.3g}", flush=True)
        failed |= diff > 1e-4
    for spec in specs():
        name = spec["name"]
        if args.only and name not in args.only:
            continue
        ez.PUBLISHED.setdefault(name, dict(params=None, params_text="", gmacs=None, ref=""))
        try:
            f = ez.export_one(spec, out_dir)
        except Exception as e:  # noqa: BLE001 - report and go on to the next
            print(f"{name:<20} FAILED: {e}", flush=True)
            failed = True
            continue
        problems = f["problems"]
        if name == "swin_t":  # torchvision's own eval-mode Dropout calls
            problems = [p for p in problems if "Dropout node" not in p]
        if args.plain:  # merged weights are the point of the plain export
            problems = [p for p in problems if "Identity node" not in p and "accounting" not in p]
            f["identity_nodes"] = f["op_counts"].get("Identity", 0)
        f["problems"] = problems
        figs[name] = f
        macs = f"{f['macs'] / 1e9:.3f}" if f["macs"] is not None else "?"
        print(f"{name:<20} nodes={f['nodes']:<5} GMACs={macs:<8} bytes={f['bytes']:<9,} "
              f"{'OK' if not problems else 'PROBLEMS'}", flush=True)
        for p in problems:
            print(f"    ! {p}", flush=True)
            failed = True
    with open(fig_path, "w") as fh:
        json.dump(dict(sorted(figs.items())), fh, indent=1)
        fh.write("\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
