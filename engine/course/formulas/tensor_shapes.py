"""Rows of the tensor-shapes sheet: dimension rules of dense, convolution and attention layers.

Size rules are checked three ways: the NumPy arithmetic, ``engine.shapes`` (or an engine layer
run on zeros), and PyTorch's layer run on zeros, so the formula is checked against what a real
convolution produces. Sizes are drawn at random for each check.
"""

from __future__ import annotations

from .core import N, sheet_row, spec

SHEET = "tensor_shapes"
DENSE = "Dense layers"
CONV = "Convolution arithmetic"
ATT = "Attention"
POS = "Positions"


_row = sheet_row(SHEET)


def _conv_sizes(rng):
    """A random valid convolution: W input size, K kernel, S stride, P padding, D dilation."""
    K = int(rng.choice([1, 2, 3, 5, 7]))
    D = int(rng.integers(1, 4))
    P = int(rng.integers(0, 3))
    W = int(rng.integers(D * (K - 1) + 1, 40))
    S = int(rng.integers(1, 4))
    return {"W": W, "K": K, "S": S, "P": P, "D": D, "P_out": int(rng.integers(0, S))}


def conv_inputs(rng):
    return _conv_sizes(rng)


def _stack(rng):
    """A random stack of 4 convolution layers: kernels k, strides s, paddings p (lists)."""
    return {
        "k": [int(v) for v in rng.choice([1, 3, 5, 7], 4)],
        "s": [int(v) for v in rng.integers(1, 3, 4)],
        "p": [int(v) for v in rng.integers(0, 2, 4)],
    }


def _attention(rng):
    H = int(rng.choice([1, 2, 4]))
    return {"B": 2, "L": int(rng.integers(3, 7)), "H": H, "d_model": H * int(rng.choice([2, 4]))}


def _with_x(make):
    def inputs(rng):
        sizes = make(rng)
        sizes["x"] = rng.standard_normal((sizes["B"], sizes["L"], sizes["d_model"]))
        return sizes

    return inputs


ZEROS = "torch.zeros(1, 1, W, W)"
KERNEL = "torch.zeros(1, 1, K, K)"
QKV = spec(q=N(2, 3, 5, 4), k=N(2, 3, 6, 4), v=N(2, 3, 6, 4))
QKV_SELF = spec(q=N(2, 3, 5, 4), k=N(2, 3, 5, 4), v=N(2, 3, 5, 4))
# The FLOPs of QKᵀ and of AV, counted on the shapes the library's products really have.
ATTENTION_FLOPS = (
    "q = {lib}.zeros(B, H, L, d_model // H); s = q @ q.transpose(-2, -1); "
    "2 * s.numel() * q.shape[-1] + 2 * (s @ q).numel() * s.shape[-1]"
)
SOFTMAX_ATTN = (
    "s = q @ k.swapaxes(-1, -2) / np.sqrt(q.shape[-1]){mask}; "
    "w = np.exp(s - s.max(-1, keepdims=True)); w / w.sum(-1, keepdims=True) @ v"
)

ROWS = [
    # ---------------------------------------------------------------- dense
    _row(
        "shape.linear",
        DENSE,
        "Dense layer shape",
        r"[B, n_{in}] \to [B, n_{out}],\quad W: [n_{out}, n_{in}]",
        "(B, n_out)",
        "nn.Linear(n_in, n_out)(engine.zeros(B, n_in)).shape",
        "nn.Linear(n_in, n_out)(torch.zeros(B, n_in)).shape",
        spec(B=4, n_in=lambda rng: int(rng.integers(1, 20)), n_out=lambda rng: int(rng.integers(1, 20))),
        notes="The weight is stored (n_out, n_in), as in PyTorch: Z = X Wᵀ + b.",
    ),
    _row(
        "shape.linear_params",
        DENSE,
        "Dense layer parameters",
        r"\#\text{params} = n_{in}\,n_{out} + n_{out}",
        "n_in * n_out + n_out",
        "shapes.linear_params(n_in, n_out)",
        "sum(p.numel() for p in nn.Linear(n_in, n_out).parameters())",
        spec(n_in=lambda rng: int(rng.integers(1, 100)), n_out=lambda rng: int(rng.integers(1, 100))),
        notes="Weights plus one bias per output.",
        keywords=("parameter count",),
    ),
    _row(
        "shape.flatten",
        DENSE,
        "Flatten before a dense layer",
        r"[N, C, H, W] \to [N, C\,H\,W]",
        "(N, C * H * W)",
        "nn.Flatten()(engine.zeros(N, C, H, W)).shape",
        "nn.Flatten()(torch.zeros(N, C, H, W)).shape",
        spec(N=2, C=3, H=5, W=4),
    ),
    # ---------------------------------------------------------------- convolution
    _row(
        "shape.conv_out",
        CONV,
        "Convolution output size",
        r"O = \left\lfloor \frac{W - K + 2P}{S} \right\rfloor + 1",
        "(W - K + 2 * P) // S + 1",
        "shapes.conv_output_size(W, K, S, P)",
        f"F.conv2d({ZEROS}, {KERNEL}, stride=S, padding=P).shape[-1]",
        conv_inputs,
        notes="The number of kernel placements along one dimension.",
        keywords=("conv",),
    ),
    _row(
        "shape.conv_out_dilated",
        CONV,
        "Convolution output size with dilation",
        r"O = \left\lfloor \frac{W + 2P - D(K - 1) - 1}{S} \right\rfloor + 1",
        "(W + 2 * P - D * (K - 1) - 1) // S + 1",
        "shapes.conv_output_size(W, K, S, P, D)",
        f"F.conv2d({ZEROS}, {KERNEL}, stride=S, padding=P, dilation=D).shape[-1]",
        conv_inputs,
        keywords=("conv", "atrous"),
    ),
    _row(
        "shape.effective_kernel",
        CONV,
        "Effective kernel size (dilation)",
        r"K_{eff} = K + (K - 1)(D - 1)",
        "K + (K - 1) * (D - 1)",
        "shapes.effective_kernel_size(K, D)",
        f"W + 1 - F.conv2d({ZEROS}, {KERNEL}, dilation=D).shape[-1]",
        conv_inputs,
        notes="A dilated kernel spans K_eff pixels with only K weights.",
        keywords=("atrous",),
    ),
    _row(
        "shape.conv_transpose_out",
        CONV,
        "Transposed convolution output size",
        r"O = (W - 1)\,S - 2P + K + P_{out}",
        "(W - 1) * S - 2 * P + K + P_out",
        "shapes.conv_transpose_output_size(W, K, S, P, P_out)",
        f"F.conv_transpose2d({ZEROS}, {KERNEL}, stride=S, padding=P, output_padding=P_out).shape[-1]",
        lambda rng: {**_conv_sizes(rng), "W": int(rng.integers(3, 20))},
        notes="P_out < S picks one of the S input sizes a stride-S convolution maps to the same O.",
        keywords=("deconvolution", "upsampling"),
    ),
    _row(
        "shape.conv2d",
        CONV,
        "Conv2d output shape",
        r"[N, C_{in}, H, W] \to [N, C_{out}, O_H, O_W]",
        "(N, C_out, (H - K + 2 * P) // S + 1, (W - K + 2 * P) // S + 1)",
        "nn.Conv2d(C_in, C_out, K, stride=S, padding=P)(engine.zeros(N, C_in, H, W)).shape",
        "nn.Conv2d(C_in, C_out, K, stride=S, padding=P)(torch.zeros(N, C_in, H, W)).shape",
        spec(
            N=2,
            C_in=3,
            C_out=4,
            H=lambda rng: int(rng.integers(7, 16)),
            W=lambda rng: int(rng.integers(7, 16)),
            K=3,
            S=lambda rng: int(rng.integers(1, 3)),
            P=lambda rng: int(rng.integers(0, 2)),
        ),
        keywords=("conv",),
    ),
    _row(
        "shape.conv2d_params",
        CONV,
        "Conv2d parameters",
        r"\#\text{params} = C_{out}\,(C_{in} K_h K_w + 1)",
        "C_out * (C_in * K * K + 1)",
        "shapes.conv2d_params(C_in, C_out, K)",
        "sum(p.numel() for p in nn.Conv2d(C_in, C_out, K).parameters())",
        spec(
            C_in=lambda rng: int(rng.integers(1, 16)),
            C_out=lambda rng: int(rng.integers(1, 16)),
            K=lambda rng: int(rng.choice([1, 3, 5])),
        ),
        notes="Weight sharing: independent of the image size.",
        keywords=("parameter count", "conv"),
    ),
    _row(
        "shape.conv1d",
        CONV,
        "1-D convolution",
        r"y[t] = \sum_{c=1}^{C_{in}} \sum_{k=0}^{K-1} W[c, k]\, x_c[t + k] + b",
        "np.einsum('ctk,ck->t', sliding_window_view(x, w.shape[1], axis=1), w) + b",
        "F.conv2d(x.reshape(1, *x.shape[:1], 1, -1), w.reshape(1, *w.shape[:1], 1, -1), b).reshape(-1)",
        "F.conv1d(x[None], w[None], b)[0, 0]",
        spec(x=N(3, 12), w=N(3, 4), b=N(1)),
        notes="One kernel for every position t (weight sharing); the engine runs it as a conv2d of height 1.",
        keywords=("conv", "weight sharing"),
    ),
    _row(
        "shape.max_pool",
        CONV,
        "Pooling output size",
        r"O = \left\lfloor \frac{W - K}{S} \right\rfloor + 1",
        "(W - K) // S + 1",
        "F.max_pool2d(engine.zeros(1, 1, W, W), K, S).shape[-1]",
        "F.max_pool2d(torch.zeros(1, 1, W, W), K, S).shape[-1]",
        spec(W=lambda rng: int(rng.integers(4, 30)), K=2, S=lambda rng: int(rng.integers(1, 3))),
        notes="Pooling has no weights; stride = kernel (the default) halves the size for K = 2.",
    ),
    _row(
        "shape.receptive_field",
        CONV,
        "Receptive field of a stack",
        r"RF_l = RF_{l-1} + (K_l - 1)\prod_{i<l} S_i,\quad RF_0 = 1",
        "1 + np.sum((np.array(k) - 1) * np.cumprod([1] + s[:-1]))",
        "shapes.receptive_field(list(zip(k, s, p)))[-1].size",
        None,
        _stack,
        notes="Each layer adds (K − 1) times the product of the strides before it.",
        keywords=("rf", "conv"),
    ),
    # ---------------------------------------------------------------- attention
    _row(
        "shape.attention.heads",
        ATT,
        "Split into heads",
        r"[B, L, d_{model}] \to [B, H, L, d_k],\quad d_k = d_{model} / H",
        "x.reshape(B, L, H, d_model // H).transpose(0, 2, 1, 3).shape",
        "x.reshape(B, L, H, d_model // H).transpose(1, 2).shape",
        "x.reshape(B, L, H, d_model // H).transpose(1, 2).shape",
        _with_x(_attention),
        keywords=("multi-head", "d_k"),
    ),
    _row(
        "shape.attention.scores",
        ATT,
        "Attention scores shape",
        r"Q K^\top: [B, H, L, L]",
        "(B, H, L, L)",
        "shapes.attention_shapes(B, L, d_model, H).shapes['scores']",
        "(torch.zeros(B, H, L, d_model // H) @ torch.zeros(B, H, L, d_model // H).transpose(-2, -1)).shape",
        _attention,
        notes="One score per (query, key) pair: memory grows as L².",
    ),
    _row(
        "shape.attention.flops",
        ATT,
        "Attention FLOPs (the two L² products)",
        r"\text{FLOPs}(QK^\top) + \text{FLOPs}(AV) = 2\,B H L^2 d_k + 2\,B H L^2 d_k = 4\,B L^2 d_{model}",
        "4 * B * L ** 2 * d_model",
        ATTENTION_FLOPS.format(lib="engine"),
        ATTENTION_FLOPS.format(lib="torch"),
        _attention,
        notes="A matrix product costs 2 FLOPs (a multiply and an add) per output element per term of "
        "its inner dimension; code counts it on the products' real shapes. The four projections "
        "cost 8·B·L·d²_model, so the L² term dominates once L > 2·d_model.",
        keywords=("flops", "compute", "cost", "quadratic"),
    ),
    _row(
        "shape.attention.memory",
        ATT,
        "Attention memory (the weights kept for backward)",
        r"\text{bytes}(A) = B\,H\,L^2 \times 4 \ \text{(float32)}",
        "4 * B * H * L * L",
        "q = engine.zeros(B, H, L, d_model // H); attention.attention_weights(q, q).numpy().nbytes",
        "q = torch.zeros(B, H, L, d_model // H); F.softmax(q @ q.transpose(-2, -1), -1).nbytes",
        _attention,
        notes="Backward needs A = softmax(QKᵀ/√d_k), one float per (query, key) pair and head: at L = 8192, "
        "32 heads and batch 1, 8 GiB per layer. FlashAttention never stores A; it recomputes it "
        "block by block.",
        keywords=("memory", "quadratic", "flash attention"),
    ),
    _row(
        "shape.attention.output",
        ATT,
        "Multi-head attention output shape",
        r"[B, L, d_{model}] \to [B, L, d_{model}]",
        "x.shape",
        "nn.MultiheadAttention(d_model, H, batch_first=True)(x, x, x)[0].shape",
        "nn.MultiheadAttention(d_model, H, batch_first=True, dtype=torch.float64)(x, x, x)[0].shape",
        _with_x(_attention),
        notes="The heads are concatenated back and projected by W_o.",
    ),
    _row(
        "shape.attention.params",
        ATT,
        "Multi-head attention parameters",
        r"\#\text{params} = 4\,(d_{model}^2 + d_{model})",
        "4 * (d_model ** 2 + d_model)",
        "sum(p.numel() for p in nn.MultiheadAttention(d_model, H).parameters())",
        "sum(p.numel() for p in nn.MultiheadAttention(d_model, H).parameters())",
        _attention,
        notes="W_q, W_k, W_v, W_o with biases, whatever the number of heads.",
        keywords=("parameter count",),
    ),
    _row(
        "shape.attention.sdpa",
        ATT,
        "Scaled dot-product attention",
        r"\operatorname{Attention}(Q, K, V) = \operatorname{softmax}\left(\frac{Q K^\top}{\sqrt{d_k}}\right) V",
        SOFTMAX_ATTN.format(mask=""),
        "F.scaled_dot_product_attention(q, k, v)",
        "F.scaled_dot_product_attention(q, k, v)",
        QKV,
        notes="Dividing by √d_k keeps the scores' variance near 1, so softmax does not saturate.",
        keywords=("transformer",),
    ),
    _row(
        "shape.attention.causal",
        ATT,
        "Causal attention",
        r"s_{ij} = -\infty \text{ for } j > i",
        SOFTMAX_ATTN.format(mask="; s = np.where(np.tril(np.ones(s.shape[-2:], bool)), s, -np.inf)"),
        "F.scaled_dot_product_attention(q, k, v, is_causal=True)",
        "F.scaled_dot_product_attention(q, k, v, is_causal=True)",
        QKV_SELF,
        notes="A token sees itself and the past only (decoders, language models).",
        keywords=("mask", "autoregressive"),
    ),
    _row(
        "shape.attention.masked_fill",
        ATT,
        "Masking scores",
        r"s_{ij} \leftarrow -10^9 \text{ where } m_{ij} = 0",
        "np.where(mask == 0, -1e9, s)",
        "s.masked_fill(mask == 0, -1e9)",
        "s.masked_fill(mask == 0, -1e9)",
        lambda rng: {"s": rng.standard_normal((2, 4, 4)), "mask": rng.integers(0, 2, (2, 4, 4))},
        notes="Before the softmax; a large negative number gives a weight of exactly 0.",
        keywords=("padding mask",),
    ),
    # ---------------------------------------------------------------- positions
    _row(
        "shape.rope.frequencies",
        POS,
        "RoPE frequencies",
        r"\theta_i = 10000^{-2(i-1)/d},\ i = 1 \dots d/2",
        "base ** (-2 * np.arange(d // 2) / d)",
        "attention.rope_frequencies(d, base)",
        None,
        spec(d=lambda rng: 2 * int(rng.integers(1, 17)), base=10000.0),
        keywords=("rotary", "position"),
    ),
    _row(
        "shape.rope",
        POS,
        "Rotary position embedding (RoPE)",
        r"\begin{pmatrix} x^{(2i)} \\ x^{(2i+1)} \end{pmatrix} \leftarrow \begin{pmatrix}\cos m\theta_i & -\sin m\theta_i\\ \sin m\theta_i & \cos m\theta_i\end{pmatrix}\begin{pmatrix} x^{(2i)} \\ x^{(2i+1)} \end{pmatrix}",
        "a = np.arange(x.shape[-2])[:, None] * base ** (-2 * np.arange(x.shape[-1] // 2) / x.shape[-1]); "
        "r = (x[..., 0::2] + 1j * x[..., 1::2]) * np.exp(1j * a); np.stack([r.real, r.imag], -1).reshape(x.shape)",
        "attention.apply_rope(x, base=base)",
        None,
        spec(x=N(2, 5, 8), base=10000.0),
        notes="Pair i of the token at position m turns by the angle m·θ_i; done to queries and keys, "
        "not values. Read a pair as a complex number: the turn is a product with e^{imθ}.",
        keywords=("rotary", "position"),
    ),
    _row(
        "shape.rope.relative",
        POS,
        "RoPE: position enters a score as m − n only",
        r"\langle R_m q, R_n k\rangle = \operatorname{Re}\sum_i q_i\, \bar k_i\, e^{i(m - n)\theta_i}",
        "th = 10000.0 ** (-2 * np.arange(4) / 8); (np.sum((q[0::2] + 1j * q[1::2]) * np.conj(k[0::2] + 1j * k[1::2]) * np.exp(1j * (m - n) * th))).real",
        "(attention.apply_rope(q[None], np.array([m])) * attention.apply_rope(k[None], np.array([n]))).sum()",
        None,
        spec(q=N(8), k=N(8), m=lambda rng: int(rng.integers(0, 50)), n=lambda rng: int(rng.integers(0, 50))),
        notes="Rotating both by their absolute positions leaves only the offset m − n of the positions; "
        "the score still depends on the contents q and k.",
        keywords=("rotary", "relative position"),
    ),
    _row(
        "shape.sinusoidal",
        POS,
        "Sinusoidal positions",
        r"PE_{pos, 2i} = \sin\frac{pos}{10000^{2i/d}},\quad PE_{pos, 2i+1} = \cos\frac{pos}{10000^{2i/d}}",
        "a = np.arange(L)[:, None] / 10000 ** (np.arange(0, d, 2) / d); np.stack([np.sin(a), np.cos(a)], -1).reshape(L, d)",
        "attention.sinusoidal_positions(L, d)",
        None,
        spec(L=7, d=8),
        rtol=1e-6,
        atol=1e-6,
        notes="Added to the token embeddings in the original Transformer (float32 in the engine).",
        keywords=("positional encoding",),
    ),
]
