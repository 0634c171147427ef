"""The notebook labs of 05-08 (engine.course.labs: convolution, attention, diffusion, vae).

Each value a notebook shows is checked here against an independent computation: brute-force
loops over placements and patches, NumPy written out by hand, closed forms, or PyTorch.
"""

import math

import numpy as np
import pytest

import engine
from engine.course.labs import attention as attention_lab

# ============================================================================= 06 attention


def library_attention(q, k, v, mask=None, scale=None):
    """A stand-in for the notebook's attention cell: the library's, as (output, weights)."""
    return (
        engine.attention.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=scale),
        engine.attention.attention_weights(q, k, attn_mask=mask, scale=scale),
    )


class LibraryMultiHeadAttention(engine.nn.Module):
    """A stand-in for the notebook's MultiHeadAttention: nn.MultiheadAttention, per-head weights."""

    def __init__(self, d_model, heads):
        super().__init__()
        self.mha = engine.nn.MultiheadAttention(d_model, heads, batch_first=True)

    def forward(self, x):
        return self.mha(x, x, x, average_attn_weights=False)


def test_toy_qkv_projects_the_embeddings():
    t = attention_lab.toy_qkv("a b a c", d_model=6, d_k=3, seed=1)
    assert t.tokens == ["a", "b", "a", "c"]
    np.testing.assert_array_equal(t.X[0], t.X[2])  # the same word, the same embedding
    for name in "QKV":
        np.testing.assert_allclose(getattr(t, name), t.X @ getattr(t, f"W_{name.lower()}"))
    assert t.Q.shape == (4, 3)
    with pytest.raises(ValueError, match="at least one token"):
        attention_lab.toy_qkv("")


def test_make_mask_definitions():
    L = 7
    i, j = np.meshgrid(np.arange(L), np.arange(L), indexing="ij")
    assert attention_lab.make_mask("none", L) is None
    np.testing.assert_array_equal(attention_lab.make_mask("causal", L), j <= i)
    np.testing.assert_array_equal(attention_lab.make_mask("padding", L, n_pad=2), j < L - 2)
    np.testing.assert_array_equal(attention_lab.make_mask("sliding window", L, window=2), np.abs(i - j) < 2)
    np.testing.assert_array_equal(attention_lab.make_mask("causal sliding window", L, window=3), (j <= i) & (i - j < 3))
    assert not attention_lab.make_mask("padding", L, n_pad=9).any()
    with pytest.raises(ValueError, match="kind"):
        attention_lab.make_mask("diagonal", L)


def test_attention_maps_against_numpy():
    rng = np.random.default_rng(0)
    Q, K, V = rng.normal(size=(5, 4)), rng.normal(size=(5, 4)), rng.normal(size=(5, 3))
    mask = attention_lab.make_mask("causal", 5)
    r = attention_lab.attention_maps(library_attention, Q, K, V, "sqrt", 0.5, mask)
    s = Q @ K.T / 2.0 / 0.5
    s = np.where(mask, s, -np.inf)
    p = np.exp(s - s.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    np.testing.assert_allclose(r.weights, p, atol=1e-12)
    np.testing.assert_allclose(r.output, p @ V, atol=1e-12)
    logp = np.log(np.where(p > 0, p, 1.0))
    np.testing.assert_allclose(r.entropy, -(p * logp).sum(1), atol=1e-12)
    assert r.entropy[0] == 0.0  # the first query sees one key only
    assert np.isnan(r.scores[0, 1]) and r.scale == pytest.approx(1.0)
    empty = attention_lab.attention_maps(library_attention, Q, K, V, mask=np.zeros((5, 5), bool))
    assert list(empty.empty_rows) == [0, 1, 2, 3, 4] and np.all(empty.output == 0)
    with pytest.raises(ValueError, match="temperature"):
        attention_lab.attention_maps(library_attention, Q, K, V, temperature=0)
    with pytest.raises(ValueError, match="scale"):
        attention_lab.attention_maps(library_attention, Q, K, V, scale="cubic")
    # the weights and output are the given function's, called with the scale times 1/τ
    calls = []

    def uniform(q, k, v, mask=None, scale=None):
        calls.append(scale)
        w = np.full((q.shape[0], k.shape[0]), 1 / k.shape[0])
        return w @ v.data, w

    r = attention_lab.attention_maps(uniform, Q, K, V, "none", 4.0)
    assert calls == [0.25] and np.allclose(r.weights, 0.2) and np.allclose(r.output, V.mean(0))


def test_dot_product_variance_is_d_k():
    for d in (1, 16, 256):
        v = attention_lab.dot_product_variance(d, n=20000, seed=3)
        assert v.var_raw == pytest.approx(d, rel=0.06)
        assert v.var_scaled == pytest.approx(1.0, rel=0.06)
        np.testing.assert_allclose(v.scaled * np.sqrt(d), v.raw)
    s = attention_lab.scaling_sweep(dims=(1, 16, 256), L=8, n=500)
    assert np.all(np.diff(s.max_raw) > 0)  # saturation grows with d_k without scaling
    assert np.ptp(s.max_scaled) < 0.1  # and stays put with it
    np.testing.assert_allclose(s.var_raw / s.d_k, 1.0, rtol=0.15)


def test_random_scores_have_the_law_of_explicit_dot_products():
    """random_scores draws q·k as sqrt(χ²(d_k))·N(0, 1); the vectors drawn and multiplied out give
    the same law: variance d_k, fourth moment 3d_k(d_k + 2), the same quantiles."""
    n = 200_000
    for d in (1, 3, 16):
        fast = attention_lab.random_scores(d, n, seed=1)[:, 0]
        rng = np.random.default_rng(2)
        slow = (rng.standard_normal((n, d)) * rng.standard_normal((n, d))).sum(1)
        assert fast.var() == pytest.approx(d, rel=0.02)
        assert (fast**4).mean() == pytest.approx(3 * d * (d + 2), rel=0.06)
        levels = [0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99]
        np.testing.assert_allclose(np.quantile(fast, levels), np.quantile(slow, levels), atol=0.03 * np.sqrt(d))
    # one query against several keys: the scores share |q|, so they are uncorrelated but not
    # independent (their squares correlate), as dot products with one common q are
    many = attention_lab.random_scores(4, n, keys=2, seed=3)
    assert abs(np.corrcoef(many.T)[0, 1]) < 0.01
    squares = np.corrcoef((many**2).T)[0, 1]
    rng = np.random.default_rng(4)
    q, k = rng.standard_normal((n, 1, 4)), rng.standard_normal((n, 2, 4))
    explicit = np.corrcoef(((q * k).sum(-1) ** 2).T)[0, 1]
    assert squares == pytest.approx(explicit, abs=0.02) and squares > 0.1
    with pytest.raises(ValueError, match="random_scores: keys"):
        attention_lab.random_scores(4, 10, keys=0)


def test_mha_shapes_against_torch(torch):
    info = attention_lab.mha_shapes(LibraryMultiHeadAttention, 2, 5, 12, 3)
    layer = torch.nn.MultiheadAttention(12, 3, batch_first=True)
    assert info.module_params == sum(p.numel() for p in layer.parameters()) == info.params["total"]
    x = torch.zeros(2, 5, 12)
    out, w = layer(x, x, x, average_attn_weights=False)
    assert info.output_shape == tuple(out.shape) and info.weights_shape == tuple(w.shape)
    assert dict(info.rows)["q, k, v (per head)"] == (2, 3, 5, 4)
    with pytest.raises(ValueError, match="mha_shapes: .*12.*try H = 1, 2, 3, 4, 6, 12"):
        attention_lab.mha_shapes(LibraryMultiHeadAttention, 2, 5, 12, 5)


def test_rope_pair_trajectory_is_a_rotation():
    d, base = 8, 10000.0
    t = attention_lab.rope_pair_trajectory(d, pair=1, positions=20, base=base)
    theta = base ** (-2 / d)
    assert t.theta == pytest.approx(theta)
    np.testing.assert_allclose(np.hypot(*t.xy.T), np.sqrt(2))  # rotations keep the length
    angles = np.unwrap(np.arctan2(t.xy[:, 1], t.xy[:, 0]))
    np.testing.assert_allclose(np.diff(angles), theta)
    with pytest.raises(ValueError, match="pair"):
        attention_lab.rope_pair_trajectory(8, pair=4)


def test_rope_shift_check_and_distance():
    rng = np.random.default_rng(1)
    q, k = rng.normal(size=16), rng.normal(size=16)
    c = attention_lab.rope_shift_check(q, k, 3, 9, 100)
    assert c.rope == pytest.approx(c.rope_shifted, abs=1e-10)
    assert abs(c.absolute - c.absolute_shifted) > 1e-3
    # score by hand: rotate each pair of q by 3θ_i and of k by 9θ_i
    theta = 10000.0 ** (-np.arange(0, 16, 2) / 16)

    def rot(x, m):
        a, b = x[0::2], x[1::2]
        out = np.empty_like(x)
        out[0::2] = a * np.cos(m * theta) - b * np.sin(m * theta)
        out[1::2] = a * np.sin(m * theta) + b * np.cos(m * theta)
        return out

    assert c.rope == pytest.approx(float(rot(q, 3) @ rot(k, 9)), abs=1e-10)
    r = attention_lab.rope_score_vs_distance(d=32, max_distance=100)
    np.testing.assert_allclose(r.aligned, r.closed_form, atol=1e-9)
    assert r.aligned[0] == pytest.approx(32)
    assert r.aligned[1:].max() < 32


def test_rope_decay_is_su_et_al_bound_on_aligned_vectors():
    """The bound is (1/(d/2)) Σ_j |S_j| with S_j the partial sums of e^{iΔθ}, written out here
    with a loop; it bounds the aligned score (|2 Re S_{d/2}| <= d · bound) and decays with Δ."""
    d, base = 64, 10000.0
    r = attention_lab.rope_score_vs_distance(d=d, base=base, max_distance=256)
    theta = base ** (-np.arange(0, d, 2) / d)
    for delta in (0, 7, 100, 256):
        partial, total = 0j, 0.0
        for t in theta:
            partial += np.exp(1j * delta * t)
            total += abs(partial)
        assert r.bound[delta] == pytest.approx(total / (d // 2))
    assert np.all(np.abs(r.aligned) <= d * r.bound + 1e-9)
    assert r.bound_relative[0] == r.aligned_relative[0] == 1.0
    assert r.bound_relative[200:].max() < 0.45  # the long-range decay the chart shows


def test_shown_dimensions_keep_sine_cosine_pairs_and_at_most_32_rows():
    for d in (2, 16, 32, 64, 128):
        dims = attention_lab.shown_dimensions(d)
        assert len(dims) == min(d, 32) and dims[-1] < d
        np.testing.assert_array_equal(dims[1::2], dims[::2] + 1)  # sine and cosine of one pair
        step = np.diff(dims[::2] // 2)
        assert np.all(step == max(1, d // 32))  # evenly spaced pairs, the fastest one first
        assert dims[0] == 0


def test_sinusoidal_similarity_depends_on_offset():
    s = attention_lab.sinusoidal_similarity(L=40, d=16)
    sim = s.similarity
    np.testing.assert_allclose(sim[:-5, :-5], sim[5:, 5:], atol=1e-5)  # Toeplitz: m − n only
    np.testing.assert_allclose(np.diag(sim), 8.0, atol=1e-5)  # Σ sin² + cos² over 8 pairs


def test_make_sequence_task():
    x, y = attention_lab.make_sequence_task("reverse", 20, 5, 7, seed=0)
    np.testing.assert_array_equal(y, x[:, ::-1])
    assert x.max() < 7 and x.min() >= 0
    x, y = attention_lab.make_sequence_task("sort", 20, 5, 7, seed=0)
    assert np.all(np.diff(y, axis=1) >= 0) and np.all(np.sort(x, 1) == y)
    x, y = attention_lab.make_sequence_task("rotate by 1", 20, 5, 7, seed=0)
    np.testing.assert_array_equal(y[:, :-1], x[:, 1:])
    np.testing.assert_array_equal(y[:, -1], x[:, 0])
    with pytest.raises(ValueError, match="task"):
        attention_lab.make_sequence_task("shuffle")


def test_tiny_run_reads_the_first_heldout_sequence():
    """tiny_run shows the model's map and prediction on the first held-out sequence."""
    x, y = attention_lab.tiny_heldout("reverse", 5, 7, seed=2)
    assert x.shape == (256, 5) and np.array_equal(y, x[:, ::-1])
    np.testing.assert_array_equal(x, attention_lab.make_sequence_task("reverse", 256, 5, 7, seed=10_002)[0])

    class Reverser(engine.nn.Module):  # attends to position L-1-i and answers its token
        def attend(self, ids):
            L = ids.shape[-1]
            w = np.eye(L)[::-1][None].repeat(len(ids), 0)
            return engine.Tensor(np.eye(7)[ids[:, ::-1]] * 5.0), engine.Tensor(w)

    r = attention_lab.tiny_run(Reverser(), {"step": [1], "loss": [0.5], "accuracy": [1.0]}, "", x, y)
    np.testing.assert_array_equal(r.prediction, y[0])
    assert list(r.weights.argmax(1)) == [4, 3, 2, 1, 0] and r.history.accuracy.tolist() == [1.0]


def test_shipped_models_refuse_code_that_did_not_train_them():
    """The page's lesson objects decide: other code gives (None, one sentence), never a model."""

    def other(x):
        return x

    run, reason = attention_lab.shipped_tiny_attention(code=(other,), classes=(Exception,))
    assert run is None and reason.startswith("the shipped model was trained with other code than this page's `other`")
    run, reason = attention_lab.shipped_tiny_gpt(code=(other,), classes=(Exception,))
    assert run is None and "train with the button" in reason


def test_permutation_check_and_mask_cost():
    qkv = attention_lab.toy_qkv(d_model=8, d_k=4, seed=2)
    p = attention_lab.permutation_check(library_attention, qkv, seed=1)
    assert sorted(p.order) == list(range(len(qkv.tokens)))
    assert p.gap_plain < 1e-12 < 1e-3 < p.gap_positions and p.gap_after < 1e-12
    L = 7
    cost = attention_lab.mask_cost(attention_lab.make_mask("causal", L), L)
    assert (cost.computed, cost.used) == (49, 28) and cost.dense_waste == pytest.approx(21 / 49)
    assert attention_lab.mask_cost(None, L).used == 49


def test_designed_retrieval_softmax_by_hand():
    r = attention_lab.designed_retrieval(L=6, d_k=32, target=2, multipliers=(0.5, 1, 16), seed=4)
    keys = np.random.default_rng(4).standard_normal((6, 32))
    np.testing.assert_allclose(r.scores, keys @ keys[2] / np.sqrt(32))
    for row, c in zip(r.weights, (0.5, 1, 16)):
        e = np.exp(c * r.scores - (c * r.scores).max())
        np.testing.assert_allclose(row, e / e.sum())
    assert np.all(np.diff(r.on_target) > 0) and r.on_target[-1] > 0.999
    with pytest.raises(ValueError, match="target must be < L"):
        attention_lab.designed_retrieval(L=3, target=3)


def test_attention_memory_and_kv_decode():
    m = attention_lab.attention_memory(1024, 768, 12, 12, 4)
    assert m.scores_bytes == 12 * 1024**2 * 4 and m.kv_cache_bytes == 72 * 2**20
    with pytest.raises(ValueError, match="attention_memory: length"):
        attention_lab.attention_memory(0)
    d = attention_lab.kv_cache_decode(length=5, d_model=4, seed=3)
    assert d.max_gap < 1e-12 and (d.projected_cached, d.projected_uncached) == (5, 15)


def test_block_parameters_match_torch_layers(torch):
    d = 48
    layers = [
        torch.nn.LayerNorm(d),
        torch.nn.MultiheadAttention(d, 4, batch_first=True),
        torch.nn.LayerNorm(d),
        torch.nn.Linear(d, 4 * d),
        torch.nn.Linear(4 * d, d),
    ]
    expected = sum(p.numel() for m in layers for p in m.parameters())
    assert attention_lab.block_parameters(d, 4) == expected == 12 * d * d + 13 * d
    with pytest.raises(ValueError, match="heads"):
        attention_lab.block_parameters(48, 5)


def test_char_data_unigram_by_hand():
    import collections

    d = attention_lab.char_data()
    text = attention_lab.TEXT
    cut = int(0.9 * len(text))
    counts = collections.Counter(text[:cut])
    total = cut + len(d.chars)
    nats = -np.mean([math.log((counts[c] + 1) / total) for c in text[cut:]])
    assert d.unigram == pytest.approx(nats)
    assert "".join(d.chars[i] for i in d.heldout) == text[cut:]


def test_windows_are_next_character_pairs():
    ids = np.arange(100)
    x, y = attention_lab.random_windows(ids, 8, 5, np.random.default_rng(0))
    assert x.shape == y.shape == (5, 8) and np.all(y == x + 1) and np.all(np.diff(x, axis=1) == 1)
    x, y = attention_lab.heldout_windows(ids, 8)
    np.testing.assert_array_equal(x[:, 0], np.arange(0, 91, 8))
    assert np.all(y == x + 1)


def test_cross_attention_rejects_bad_settings():
    c = attention_lab.cross_attention(0.0, target_positions=(0, 5))
    np.testing.assert_allclose(c.weights[0], c.weights[1])  # 'the' twice: the same embedding
    with pytest.raises(ValueError, match="noise"):
        attention_lab.cross_attention(-1.0)
    with pytest.raises(ValueError, match="target_positions"):
        attention_lab.cross_attention(0.5, target_positions=(8,))


def test_sampled_text_draws_once_per_sampler_model_and_temperature():
    calls = []

    def sample(model, chars, prompt, length, temperature, seed=0):
        calls.append(temperature)
        return f"{prompt}{chars[:length]}@{temperature}"

    model = object()
    assert attention_lab.sampled_text(sample, model, "abc", "p ", 2, 0.8) == "p ab@0.8"
    assert attention_lab.sampled_text(sample, model, "abc", "p ", 2, 0.8) == "p ab@0.8"
    assert attention_lab.sampled_text(sample, model, "abc", "p ", 2, 1.5) == "p ab@1.5"
    attention_lab.sampled_text(sample, object(), "abc", "p ", 2, 0.8)  # another model draws again
    assert calls == [0.8, 1.5, 0.8]


def test_sampled_text_remembers_a_shipped_models_text_by_the_code():
    """Two loads of the shipped Transformer (two pages, or two runs of one) are equal models: with
    the same sampler code the text is drawn once; another sampler, or a model trained on the page,
    draws its own."""
    calls = []

    class Model:
        pass

    def sample(model, chars, prompt, length, temperature, seed=0):
        calls.append(("first", model))
        return f"{prompt}{chars[:length]}@{temperature}"

    def other(model, chars, prompt, length, temperature, seed=0):
        calls.append(("other", model))
        return f"{prompt}{chars[-length:]}@{temperature}"

    first, second, trained = Model(), Model(), Model()
    for shipped in (first, second):
        attention_lab._SHIPPED_GPT[shipped] = "a fingerprint"
    assert attention_lab.sampled_text(sample, first, "abcd", "p ", 2, 0.3) == "p ab@0.3"
    assert attention_lab.sampled_text(sample, second, "abcd", "p ", 2, 0.3) == "p ab@0.3"
    assert attention_lab.sampled_text(other, second, "abcd", "p ", 2, 0.3) == "p cd@0.3"
    assert attention_lab.sampled_text(sample, trained, "abcd", "p ", 2, 0.3) == "p ab@0.3"
    assert calls == [("first", first), ("other", second), ("first", trained)]


@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_ngram_loss_by_counting(n):
    """The n-gram ladder against a count over dictionaries; n = 1 with add-one is char_data's unigram."""
    from collections import Counter

    data, alpha = attention_lab.char_data(), 0.1
    V = len(data.chars)

    def grams(ids):
        return [tuple(ids[i : i + n]) for i in range(len(ids) - n + 1)]

    full, context = Counter(grams(data.train)), Counter(g[:-1] for g in grams(data.train))
    nll = [-math.log((full[g] + alpha) / (context[g[:-1]] + alpha * V)) for g in grams(data.heldout)]
    assert attention_lab.ngram_loss(n, alpha) == pytest.approx(np.mean(nll), rel=1e-12)
    assert attention_lab.ngram_loss(1, 1.0) == pytest.approx(data.unigram, rel=1e-12)
    with pytest.raises(ValueError, match="ngram_loss"):
        attention_lab.ngram_loss(0)


def test_prompt_window_keeps_the_last_known_characters():
    chars = attention_lab.char_data().chars
    w = attention_lab.prompt_window("The NEXT token, 42!", chars, 8)
    assert w.text == " token, " and w.dropped == "42!"
    assert "".join(chars[i] for i in w.ids) == w.text and w.ids.dtype == np.int64
    assert attention_lab.prompt_window("", chars, 16).text == "" and attention_lab.prompt_window(
        "", chars, 16
    ).ids.shape == (0,)
    with pytest.raises(ValueError, match="prompt_window"):
        attention_lab.prompt_window("abc", chars, 0)


def test_ablation_runs_read_the_notebooks_dict():
    runs = attention_lab.ablation_runs(
        {
            "full model": {"steps": [50, 100], "train_loss": [2.0, 1.5], "heldout_loss": [2.1, 1.7]},
            "stopped at once": {"steps": [], "train_loss": [], "heldout_loss": []},
        }
    )
    assert runs["full model"].final_heldout == 1.7 and runs["full model"].final_train == 1.5
    assert np.isnan(runs["stopped at once"].final_heldout)
    assert list(attention_lab.GPT_ABLATIONS) == ["full model", "no position embedding", "one head", "no residual path"]


def test_blue_orange_url_draws_vegas_scheme_row_0_on_top():
    """The PE table's image: −1 the scheme's first colour (dark blue), 0 its middle, +1 its last
    (dark orange), values clipped to [−1, 1], 8 × 8 pixels a value, row 0 of the matrix at the top."""
    import base64
    import io

    from PIL import Image

    scheme = "134b852f78b35da2cb9dcae1d2e5eff2f0ebfce0bafbbf74e8932fc5690d994a07"  # vega-scale's blueOrange
    url = attention_lab.blue_orange_url(np.array([[-1.0, 0.0, 1.0], [5.0, -5.0, 0.0]]))
    assert url.startswith("data:image/png;base64,")
    pixels = np.asarray(Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1]))).convert("RGB"))
    assert pixels.shape == (16, 24, 3)
    hexes = [["#" + bytes(pixels[8 * i + 3, 8 * j + 3]).hex() for j in range(3)] for i in range(2)]
    first, middle, last = "#" + scheme[:6], "#" + scheme[30:36], "#" + scheme[-6:]
    assert hexes == [[first, middle, last], [last, first, middle]]
