"""The engine modules behind notebooks 01-04: activations_lab, graph, optim_lab, backprop_lab.

Each expected value is computed independently here (closed forms with math/NumPy, published
constants), never by the function under test.
"""

import math

import numpy as np
import pytest

import engine
from engine.course import graph as graphs

# ============================================================================ graph


def _square_grads(x, y):
    inner = x * y + math.sin(x)
    return 2 * inner * (y + math.cos(x)), 2 * inner * x


@pytest.mark.parametrize("x, y", [(1.5, -0.5), (-2.0, 3.0), (0.0, 0.0)])
def test_traced_graph_gradients_match_the_chain_rule_by_hand(x, y):
    g = graphs.expression_graph("square", x, y, 0.0)
    gx, gy = _square_grads(x, y)
    grads = graphs.input_gradients(g)
    assert grads["x"] == pytest.approx(gx, abs=1e-12) and grads["y"] == pytest.approx(gy, abs=1e-12)
    assert g.node(g.output).value == pytest.approx((x * y + math.sin(x)) ** 2)


def test_every_expression_against_central_differences():
    for name, spec in graphs.EXPRESSIONS.items():
        vals = (0.8, -1.3, 0.4)
        g = graphs.expression_graph(name, *vals)

        def f(a, b, c, spec=spec):
            return float(spec["build"](*(engine.tensor(np.array(v, dtype=np.float64)) for v in (a, b, c))).data)

        for i, label in enumerate("xyz"):
            if label not in graphs.input_gradients(g):
                continue
            h = 1e-6
            up, down = list(vals), list(vals)
            up[i] += h
            down[i] -= h
            assert graphs.input_gradients(g)[label] == pytest.approx((f(*up) - f(*down)) / (2 * h), rel=1e-6, abs=1e-8)


def test_backward_order_puts_every_node_after_its_users():
    g = graphs.expression_graph("quotient", 0.5, 1.0, -0.7)
    position = {i: k for k, i in enumerate(g.order)}
    for a, b in g.edges:  # b uses a
        if a in position:
            assert position[b] < position[a]
    assert g.order[0] == g.output
    assert {n.id for n in g.nodes if n.kind != "const"} == set(g.order)


def test_the_stepper_walks_in_autograds_own_order():
    """One graph walk: the stepper's order is engine.autograd's topological order, tensor for tensor."""
    from engine.autograd import topological_order

    leaves = [engine.tensor(np.array(v), requires_grad=True) for v in (0.5, 1.0, -0.7)]
    out = graphs.EXPRESSIONS["quotient"]["build"](*leaves)
    expected = [float(t.data) for t in topological_order(out)]
    g = graphs.trace(out, {t: v for t, v in zip(leaves, "xyz")})
    assert [g.node(i).value for i in g.order] == pytest.approx(expected)
    assert len(g.order) == len(expected)
    for a, b in g.edges:  # columns: an input sits left of every op that reads it
        assert g.node(a).depth < g.node(b).depth


def test_steps_replay_what_backward_sent():
    g = graphs.expression_graph("reuse", 1.2, 0.5, 0.0)  # f = x·eˣ + x·y: x receives three contributions
    received: dict = {}
    for k in range(len(g.order)):
        for parent, _, c in g.step(k).sends:
            received[parent] = received.get(parent, 0.0) + c
    for n in g.nodes:
        if n.kind == "input":
            assert received[n.id] == pytest.approx(n.grad, abs=1e-12)
    x = next(n for n in g.nodes if n.label == "x")
    assert sum(1 for k in range(len(g.order)) for p, _, _ in g.step(k).sends if p == x.id) == 3
    assert x.grad == pytest.approx(math.exp(1.2) * (1 + 1.2) + 0.5)
    with pytest.raises(ValueError, match="k must be in"):
        g.step(len(g.order))


def test_local_rules_come_from_the_op_docstrings():
    g = graphs.expression_graph("square", 1.0, 2.0, 0.0)
    rules = {n.label: n.rule for n in g.nodes if n.kind == "op"}
    assert rules["mul"] == "∂r/∂a = b, ∂r/∂b = a"
    assert rules["sin"] == "∂r/∂a = cos a"
    assert rules["add"] == "∂r/∂a = 1, ∂r/∂b = 1"
    from engine.ops.elementwise import Mul

    assert Mul.__doc__.startswith("r = a·b;")
    drawing = g.drawing(0)
    known = [n for n in drawing["nodes"] if n["grad"] is not None]
    assert [n["id"] for n in known] == [g.output]


def _by_hand(X, W, dZ):
    """The formulas (notebook 03 writes its own copy, which test_03_backprop checks)."""
    return {"dW": dZ.T @ X, "db": dZ.sum(axis=0), "dX": dZ @ W}


def test_dense_layer_gradients_by_hand_equal_autograd():
    d = graphs.dense_layer_gradients(_by_hand, n=7, d_in=5, d_out=3, seed=4)
    # PyTorch's storage: W is (out, in), so dW is too
    assert d.shapes["W"] == d.shapes["dW"] == (3, 5) and d.shapes["db"] == (3,) and d.shapes["dX"] == (7, 5)
    for k, v in d.max_difference.items():
        assert v < 1e-12, k
    # the formulas themselves, against a finite difference of L = Σ (X Wᵀ + b) ⊙ G
    rng = np.random.default_rng(4)
    X, W, b = rng.standard_normal((7, 5)), rng.standard_normal((3, 5)), rng.standard_normal(3)
    G = rng.standard_normal((7, 3))
    L = lambda W_: np.sum((X @ W_.T + b) * G)  # noqa: E731
    for i, j in ((2, 1), (0, 4)):
        E = np.zeros_like(W)
        E[i, j] = 1e-6
        assert (L(W + E) - L(W - E)) / 2e-6 == pytest.approx(d.by_hand["dW"][i, j], rel=1e-6)
    assert graphs.linear_layer_matches_functional() < 1e-12
    with pytest.raises(ValueError, match="d_in must be"):
        graphs.dense_layer_gradients(_by_hand, d_in=0)
    wrong = graphs.dense_layer_gradients(lambda X, W, dZ: {**_by_hand(X, W, dZ), "dX": dZ @ W * 2}, 7, 5, 3)
    assert wrong.max_difference["dX"] > 0.1 and wrong.max_difference["dW"] < 1e-12  # the page's formulas are shown


def test_dense_layer_gradients_by_hand_equal_pytorch(torch):
    """PyTorch's nn.Linear stores its weight as (out, in), as the page's dW is: same gradients."""
    d = graphs.dense_layer_gradients(_by_hand, n=7, d_in=5, d_out=3, seed=4)
    rng = np.random.default_rng(4)  # the draws dense_layer_gradients makes, in its order
    X, W, b = rng.standard_normal((7, 5)), rng.standard_normal((3, 5)), rng.standard_normal(3)
    G = rng.standard_normal((7, 3))
    lin = torch.nn.Linear(5, 3, dtype=torch.float64)
    with torch.no_grad():
        lin.weight.copy_(torch.tensor(W))
        lin.bias.copy_(torch.tensor(b))
    Xt = torch.tensor(X, requires_grad=True)
    lin(Xt).backward(torch.tensor(G))
    np.testing.assert_allclose(d.autograd["dW"], lin.weight.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(d.by_hand["db"], lin.bias.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(d.by_hand["dX"], Xt.grad.numpy(), rtol=1e-12)


def test_accumulation_shows_partial_sums_arriving_at_a_node_used_three_times():
    g = graphs.expression_graph("reuse", 1.2, 0.5, 0.0)  # f = x·eˣ + x·y
    x = next(n for n in g.nodes if n.label == "x")
    shares = [math.exp(1.2), 1.2 * math.exp(1.2), 0.5]  # from x·eˣ (as a), from eˣ, from x·y
    assert g.uses(x.id) == 3
    arrived = [g.accumulation(k)[x.id][1] for k in range(len(g.order))]
    assert arrived == sorted(arrived) and arrived[0] == 0 and arrived[-1] == 3
    assert 1 in arrived and 2 in arrived  # the shares arrive one at a time
    total, got, expected = g.accumulation(len(g.order) - 1)[x.id]
    assert got == expected == 3 and total == pytest.approx(sum(shares)) == pytest.approx(x.grad)
    for k in range(len(g.order)):  # a partial sum is the sum of the shares received so far
        partial, got, _ = g.accumulation(k)[x.id]
        assert partial == pytest.approx(sum(c for _, c in g.received(k).get(x.id, [])))
    assert graphs.expression_graph("neuron", 1.0, 1.0, 1.0).accumulation(3) == {}


def test_a_page_passes_its_own_mul_sort_and_walk():
    """expression_graph builds with the page's op and draws the page's order and gradients."""
    from engine.autograd import topological_order

    used = []

    def mul(a, b):
        used.append(1)
        return a * b

    def doubled(root):  # a walk that is wrong on purpose: every gradient twice the engine's
        root.backward(retain_graph=True)
        return {t: 2 * t.grad.numpy() for t in topological_order(root) if t.grad is not None}

    def sort(root):
        return topological_order(root)

    g = graphs.expression_graph("reuse", 1.2, 0.5, 0.0, mul=mul, sort=sort)
    assert len(used) == 2 and graphs.input_gradients(g) == pytest.approx(
        graphs.input_gradients(graphs.expression_graph("reuse", 1.2, 0.5, 0.0))
    )
    assert (
        graphs.expression_graph("reuse", 1.2, 0.5, 0.0, sort=lambda root: topological_order(root)[::-1]).order[0]
        != g.output
    )  # the order drawn is the one the page's sort gives
    leaves = [engine.tensor(np.array(v), requires_grad=True) for v in (1.2, 0.5)]
    out = graphs.EXPRESSIONS["reuse"]["build"](*leaves, None, mul)
    for t in topological_order(out):
        if t.grad_fn is not None:
            t.retain_grad()
    g = graphs.trace(out, dict(zip(leaves, "xy")), walk=doubled)
    assert graphs.input_gradients(g)["x"] == pytest.approx(2 * (math.exp(1.2) * 2.2 + 0.5))
    assert g.node(g.output).grad == 2.0
