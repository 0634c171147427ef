"""The computation graph the engine records, made drawable and walkable (notebook 03).

Every Tensor produced by an op keeps that op's node (``tensor._ctx``, a :class:`engine.autograd.Function`
instance) and the node keeps its inputs (``ctx.parents``). :func:`trace` follows those links back
from an output and returns a :class:`Graph`: one :class:`Node` per tensor with its op name, value,
gradient and column for drawing, the edges, and ``order``: the reverse topological order in which
``backward()`` visits the nodes (each node after every node that uses it).

:meth:`Graph.step` replays the backward pass one node at a time: at each node it shows the local
rule (the op's docstring, the same line the derivatives cheat sheet shows), the upstream gradient,
and what the node sends to each input, computed by calling the op's own ``backward`` with the
gradient the engine found. The page passes its own lesson code in: its multiplication op for the
expressions' products, its topological sort and its backward walk (:func:`expression_graph`).
:func:`dense_layer_gradients` compares the page's hand-written dense-layer gradients of
Z = X Wᵀ + b (W stored (out, in), as ``nn.Linear`` does) with autograd.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

import engine.functional as F
from engine import Tensor
from engine.autograd import topological_order

# ----------------------------------------------------------------------------- expressions


def _engine_mul(a, b):
    return a * b


# Each expression is built with ``mul`` for its products, so that a page can pass its own
# multiplication op (notebook 03's ``Mul.apply``) and the stepper runs that op's forward and backward.
EXPRESSIONS = {
    "square": dict(
        label="f = (x·y + sin x)²",
        latex=r"f = (x\,y + \sin x)^2",
        build=lambda x, y, z, mul=_engine_mul: (mul(x, y) + x.sin()) ** 2,
    ),
    "neuron": dict(
        label="f = σ(w·x + b), with w = y, b = z",
        latex=r"f = \sigma(y\,x + z)",
        build=lambda x, y, z, mul=_engine_mul: (mul(y, x) + z).sigmoid(),
    ),
    "quotient": dict(
        label="f = ln(x² + 1)·y / (y² + z² + 1)",
        latex=r"f = \frac{\ln(x^2 + 1)\,y}{y^2 + z^2 + 1}",
        build=lambda x, y, z, mul=_engine_mul: mul((mul(x, x) + 1.0).log(), y) / (mul(y, y) + mul(z, z) + 1.0),
    ),
    "reuse": dict(
        label="f = x·eˣ + x·y (x used three times)",
        latex=r"f = x\,e^{x} + x\,y",
        build=lambda x, y, z, mul=_engine_mul: mul(x, x.exp()) + mul(x, y),
    ),
}


def _label(ctx) -> str:
    name = type(ctx).__name__
    if name == "PowScalar":
        return f"pow {ctx.exponent:g}"
    return {
        "Add": "add",
        "Sub": "sub",
        "Mul": "mul",
        "Div": "div",
        "Neg": "neg",
        "Exp": "exp",
        "Log": "log",
        "Sin": "sin",
        "Cos": "cos",
        "Sigmoid": "sigmoid",
        "Tanh": "tanh",
        "Relu": "relu",
    }.get(name, name.lower())


def local_rule(ctx) -> tuple:
    """(forward formula, local gradients) from the op's docstring, e.g. ('r = a·b', '∂r/∂a = b, ∂r/∂b = a')."""
    doc = (type(ctx).__doc__ or "").strip().splitlines()
    first = doc[0] if doc else type(ctx).__name__
    if ";" in first:
        fwd, rule = first.split(";", 1)
        rule = rule.strip().split(". ")[0]  # the formula only, not the remarks after it
        return fwd.strip(), rule.rstrip(".")
    return first.strip(), ""


@dataclass
class Node:
    id: int
    label: str  # op name ('mul', 'sin') or the input's name ('x')
    value: float
    grad: float | None  # dL/d(this), None for constants
    depth: int  # column: 0 for inputs, 1 + max over parents otherwise
    parents: tuple = ()  # ids
    forward: str = ""  # 'r = a·b'
    rule: str = ""  # '∂r/∂a = b, ∂r/∂b = a'
    kind: str = "op"  # 'input' | 'const' | 'op'


@dataclass
class Step:
    """The backward pass at one node: the gradient it holds and what it sends to each input."""

    node: Node
    upstream: float
    sends: list = field(default_factory=list)  # (parent id, parent label, contribution)

    def text(self) -> str:
        if self.node.kind != "op":
            return (
                f"**{self.node.label}** is an input: it receives its gradient "
                f"**∂f/∂{self.node.label} = {self.upstream:.6g}** (the sum of what its users sent)."
            )
        parts = ", ".join(f"{c:.6g} to **{label}**" for _, label, c in self.sends)
        return (
            f"At **{self.node.label}** ({self.node.forward}), the gradient is g = ∂f/∂r = "
            f"**{self.upstream:.6g}**. Local rule: {self.node.rule}. It sends g × local gradient: {parts}."
        )


@dataclass
class Graph:
    nodes: list
    edges: list  # (from id, to id): from an input to the op using it
    order: list  # ids in the order backward() visits them: the output first, inputs last
    output: int
    _ctx: dict = field(default_factory=dict, repr=False)

    def node(self, id: int) -> Node:
        return next(n for n in self.nodes if n.id == id)

    def step(self, k: int) -> Step:
        """The k-th node of the backward pass (0 = the output)."""
        if not 0 <= k < len(self.order):
            raise ValueError(f"Graph.step: k must be in [0, {len(self.order) - 1}], got {k}")
        n = self.node(self.order[k])
        step = Step(n, float(n.grad))
        ctx = self._ctx.get(n.id)
        if ctx is not None:
            grads = type(ctx).backward(ctx, np.asarray(n.grad, dtype=np.float64))
            grads = grads if isinstance(grads, tuple) else (grads,)
            for parent_id, needs, g in zip(n.parents, ctx.needs_input_grad, grads):
                if needs and g is not None:
                    step.sends.append((parent_id, self.node(parent_id).label, float(np.sum(g))))
        return step

    def received(self, k: int) -> dict:
        """{node id: [(sender label, contribution), …]}: what each node has been sent by steps 0..k.
        A node used m times receives m contributions; its gradient is their sum once all arrived."""
        got: dict = {}
        for j in range(k + 1):
            step = self.step(j)
            for parent_id, _, c in step.sends:
                got.setdefault(parent_id, []).append((step.node.label, c))
        return got

    def accumulation(self, k: int) -> dict:
        """For each node read more than once: {id: (partial sum, contributions arrived, expected)}
        after steps 0..k: accumulation made visible (the sum equals ``grad`` once all arrived)."""
        got = self.received(k)
        return {
            n.id: (sum(c for _, c in got.get(n.id, [])), len(got.get(n.id, [])), self.uses(n.id))
            for n in self.nodes
            if self.uses(n.id) > 1
        }

    def uses(self, id: int) -> int:
        """How many inputs of ops read node ``id`` (x·x reads x twice): the contributions it will receive."""
        return sum(1 for a, _ in self.edges if a == id)

    def known_after(self, k: int) -> set:
        """Ids whose gradient is final once the backward pass has processed steps 0..k."""
        return set(self.order[: k + 1])

    def drawing(self, k: int | None = None) -> dict:
        """Arguments for ``engine.course.plot.graph_chart``: grads hidden for nodes not
        yet reached."""
        known = self.known_after(k) if k is not None else set(self.order)
        nodes = [
            dict(
                id=n.id,
                label=n.label,
                value=n.value,
                depth=n.depth,
                kind=n.kind,
                grad=n.grad if n.id in known else None,
            )
            for n in self.nodes
        ]
        return dict(nodes=nodes, edges=self.edges, highlight=self.order[k] if k is not None else None, done=known)


def trace(output: Tensor, names: dict | None = None, backward: bool = True, sort=None, walk=None) -> Graph:
    """The graph behind scalar ``output``; ``names`` maps input tensors to labels ('x').

    With ``backward=True`` it runs ``output.backward()`` (inputs must start with no gradient) and
    keeps every intermediate gradient (``retain_grad``), so each node shows ∂output/∂node.
    A page passes its own lesson code: ``sort(output)``, the tensors in backward order (default
    autograd's ``topological_order``), and ``walk(output)``, the backward pass as a dict
    {tensor: gradient array} (used instead of ``output.backward()``).
    """
    if output.data.size != 1:
        raise ValueError(f"graph.trace: the output must be a single value, got shape {output.shape}")
    names = {id(t): n for t, n in (names or {}).items()}
    # The nodes are the tensors autograd's own walk reaches (those that need a gradient), and the
    # constants those ops read (the 1 in x² + 1), one step away; the order drawn is sort's.
    order = topological_order(output)
    tensors, seen = list(order), {id(t) for t in order}
    for t in order:
        for p in t._ctx.parents if t._ctx is not None else ():
            if id(p) not in seen:
                seen.add(id(p))
                tensors.append(p)
    walked = walk(output) if backward and walk is not None else None
    if backward and walked is None:
        for t in order:
            if t._ctx is not None:
                t.retain_grad()
        output.backward(retain_graph=True)  # step() replays each node's backward afterwards
    ids = {id(t): i for i, t in enumerate(tensors)}
    depth: dict = {}  # column: longest path from an input; parents come later in the order
    for t in [*tensors[len(order) :], *reversed(order)]:
        parents = t._ctx.parents if t._ctx is not None else ()
        depth[id(t)] = 1 + max((depth[id(p)] for p in parents), default=-1)

    nodes, edges, ctxs = [], [], {}
    for t in tensors:
        i = ids[id(t)]
        ctx = t._ctx
        if ctx is None:
            kind = "input" if t.requires_grad else "const"
            label = names.get(id(t), "input" if kind == "input" else f"{float(t.data):g}")
            fwd, rule, parents = "", "", ()
        else:
            kind, label = "op", _label(ctx)
            fwd, rule = local_rule(ctx)
            parents = tuple(ids[id(p)] for p in ctx.parents)
            edges += [(p, i) for p in parents]
            ctxs[i] = ctx
        if walked is not None:
            grad = float(np.sum(walked[t])) if t in walked else None
        else:
            grad = None if t.grad is None else float(t.grad.sum())
        nodes.append(Node(i, label, float(t.data), grad, depth[id(t)], parents, fwd, rule, kind))
    walked_order = order if sort is None else [t for t in sort(output) if id(t) in ids]
    return Graph(nodes, edges, [ids[id(t)] for t in walked_order], ids[id(output)], ctxs)


def expression_graph(name: str, x: float, y: float, z: float, mul=None, sort=None, walk=None) -> Graph:
    """Build expression ``name`` of :data:`EXPRESSIONS` at (x, y, z) in float64 and trace it:
    its products with ``mul`` (default the engine's ``*``), its order and gradients with ``sort``
    and ``walk`` (see :func:`trace`)."""
    if name not in EXPRESSIONS:
        raise ValueError(f"graph.expression_graph: unknown expression {name!r}; choose one of {', '.join(EXPRESSIONS)}")
    leaves = {v: Tensor(np.array(val, dtype=np.float64), requires_grad=True) for v, val in zip("xyz", (x, y, z))}
    out = EXPRESSIONS[name]["build"](leaves["x"], leaves["y"], leaves["z"], mul or _engine_mul)
    return trace(
        out, {t: v for v, t in leaves.items()}, sort=sort, walk=walk
    )  # a leaf f does not use is not in the graph


def input_gradients(graph: Graph) -> dict:
    """{input label: ∂f/∂input} read from a traced graph."""
    return {n.label: n.grad for n in graph.nodes if n.kind == "input"}


# ----------------------------------------------------------------------------- dense layer


@dataclass
class DenseGradients:
    shapes: dict  # name -> shape
    by_hand: dict  # dW, db, dX from the formulas
    autograd: dict  # the same from the engine

    @property
    def max_difference(self) -> dict:
        return {k: float(np.max(np.abs(self.by_hand[k] - self.autograd[k]))) for k in self.by_hand}


def dense_layer_gradients(by_hand, n: int = 4, d_in: int = 3, d_out: int = 2, seed: int = 0) -> DenseGradients:
    """Z = X Wᵀ + b, PyTorch's convention: X is (n, d_in), one example per row; W is stored
    (d_out, d_in), its row j holding output j's weights, as ``nn.Linear`` stores it. With a random
    upstream gradient dZ = ∂L/∂Z (L = Σ Z ⊙ G):

    by hand: ``by_hand(X, W, dZ)``, the page's own formulas, a dict with dW, db and dX;
    autograd: the same from ``backward()`` through the engine's ``F.linear`` (the op ``nn.Linear`` calls).
    """
    for name, v in (("n", n), ("d_in", d_in), ("d_out", d_out)):
        if not (isinstance(v, (int, np.integer)) and 1 <= v <= 512):
            raise ValueError(f"dense_layer_gradients: {name} must be an integer in [1, 512], got {v!r}")
    rng = np.random.default_rng(seed)
    X, W, b = rng.standard_normal((n, d_in)), rng.standard_normal((d_out, d_in)), rng.standard_normal(d_out)
    G = rng.standard_normal((n, d_out))
    by_hand = {k: np.asarray(v) for k, v in by_hand(X, W, G).items()}
    Xt, Wt, bt = (Tensor(a, requires_grad=True) for a in (X, W, b))
    Z = F.linear(Xt, Wt, bt)
    (Z * G).sum().backward()
    auto = {"dW": Wt.grad.numpy(), "db": bt.grad.numpy(), "dX": Xt.grad.numpy()}
    shapes = {
        "X": X.shape,
        "W": W.shape,
        "b": b.shape,
        "Z": Z.shape,
        "dZ": G.shape,
        "dW": by_hand["dW"].shape,
        "db": by_hand["db"].shape,
        "dX": by_hand["dX"].shape,
    }
    return DenseGradients(shapes, by_hand, auto)


def linear_layer_matches_functional(n: int = 4, d_in: int = 3, d_out: int = 2, seed: int = 0) -> float:
    """Max |X Wᵀ + b − F.linear(X, W, b)| with W stored (d_out, d_in): the course's formula is the op."""
    rng = np.random.default_rng(seed)
    X, W, b = rng.standard_normal((n, d_in)), rng.standard_normal((d_out, d_in)), rng.standard_normal(d_out)
    return float(np.max(np.abs(X @ W.T + b - F.linear(Tensor(X), Tensor(W), Tensor(b)).data)))
