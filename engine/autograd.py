"""Reverse-mode automatic differentiation: the ``Function`` base class and the backward pass.

A primitive operation is a subclass of :class:`Function` with two static methods, as in
``torch.autograd.Function``::

    class Mul(Function):
        @staticmethod
        def forward(ctx, a, b):            # NumPy arrays in, a NumPy array out
            ctx.save_for_backward(a, b)
            return a * b

        @staticmethod
        def backward(ctx, grad):           # dL/d(out) in, one dL/d(input) per tensor input out
            a, b = ctx.saved_tensors
            return grad * b, grad * a

``Mul.apply(x, y)`` runs ``forward`` on the tensors' data and, when a gradient is wanted, records
the node so that :func:`backward` can walk the graph later. Three jobs are done here, once, so that
no op has to repeat them:

* **un-broadcasting**: an op may return a gradient with the (broadcast) shape of its output; it is
  summed back to each input's own shape here;
* **dtype**: a gradient is cast to its input's dtype;
* **accumulation**: a tensor used twice receives the sum of both gradients.
"""

from __future__ import annotations

import functools

import numpy as np

_grad_enabled = True
_tensor_class = None  # set by engine.tensor on import (avoids a circular import per op call)


def is_grad_enabled() -> bool:
    """True unless inside ``with engine.no_grad():``."""
    return _grad_enabled


class no_grad:
    """Context manager (and decorator) under which operations build no graph.

    Use it for evaluation and for parameter updates, exactly like ``torch.no_grad``.
    """

    def __enter__(self):
        global _grad_enabled
        self._previous = _grad_enabled
        _grad_enabled = False
        return self

    def __exit__(self, *exc):
        global _grad_enabled
        _grad_enabled = self._previous
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with no_grad():
                return fn(*args, **kwargs)

        return wrapper


class enable_grad(no_grad):
    """Turn graph building back on inside a ``no_grad`` block."""

    def __enter__(self):
        global _grad_enabled
        self._previous = _grad_enabled
        _grad_enabled = True
        return self


class Function:
    """Base class of every primitive op; the instance is the ``ctx`` and the graph node.

    Attributes set by :meth:`apply`: ``parents`` (the input tensors) and ``needs_input_grad``
    (one bool per input), which lets ``backward`` skip gradients nobody asked for.
    """

    __slots__ = ("parents", "needs_input_grad", "saved_tensors", "__dict__")

    @staticmethod
    def forward(ctx, *args, **kwargs):  # pragma: no cover - abstract
        raise NotImplementedError

    @staticmethod
    def backward(ctx, grad):  # pragma: no cover - abstract
        raise NotImplementedError

    def save_for_backward(self, *arrays):
        self.saved_tensors = arrays

    @classmethod
    def apply(cls, *inputs, **kwargs):
        """Run the op on Tensors ``inputs`` (keyword arguments are non-differentiable settings)."""
        ctx = cls.__new__(cls)
        data = cls.forward(ctx, *[t.data for t in inputs], **kwargs)
        if _grad_enabled:
            needs = tuple([t.requires_grad for t in inputs])
            if True in needs:
                ctx.parents = inputs
                ctx.needs_input_grad = needs
                return _tensor_class._from_op(data, ctx)
        return _tensor_class._wrap(data)

    def __repr__(self):
        return f"<{type(self).__name__}>"


def unbroadcast(grad: np.ndarray, shape: tuple) -> np.ndarray:
    """Sum ``grad`` over the axes along which an input of ``shape`` was broadcast.

    Broadcasting copies an input along new leading axes and along axes of length 1; by the chain
    rule each copy's gradient flows back to the one original element, so those axes are summed.
    """
    if grad.shape == shape:
        return grad
    extra = grad.ndim - len(shape)
    if extra < 0:
        return np.broadcast_to(grad, shape)
    axes = tuple(range(extra)) + tuple(
        i + extra for i, n in enumerate(shape) if n == 1 and grad.shape[i + extra] != 1
    )
    if axes:
        grad = grad.sum(axis=axes, keepdims=True)
    if extra:
        grad = grad.reshape(shape)
    return grad


def _topological_order(root) -> list:
    """Tensors reachable from ``root`` that need a gradient, each after all its consumers.

    Iterative depth-first search, so a chain of 100,000 ops needs no recursion.
    """
    order, visited = [], set()
    stack = [(root, False)]
    while stack:
        tensor, done = stack.pop()
        if done:
            order.append(tensor)
            continue
        if id(tensor) in visited:
            continue
        visited.add(id(tensor))
        stack.append((tensor, True))
        node = tensor._ctx
        if node is not None:
            for parent in node.parents:
                if parent.requires_grad and id(parent) not in visited:
                    stack.append((parent, False))
    order.reverse()
    return order


def backward(root, gradient: np.ndarray) -> None:
    """Propagate ``gradient`` (dL/d root) to every leaf that requires a gradient.

    Leaves accumulate into ``.grad`` (so two ``backward`` calls add up, as in PyTorch); a non-leaf
    keeps its gradient only after ``retain_grad()``.
    """
    grads = {id(root): gradient}
    handed_out = {id(gradient)}  # arrays already stored once: a second owner gets a copy
    for tensor in _topological_order(root):
        grad = grads.pop(id(tensor), None)
        if grad is None:
            continue
        node = tensor._ctx
        if node is None or tensor._retain:
            if tensor.grad is None:
                # .grad must be the tensor's own writable array: an op may hand back a read-only
                # broadcast view (sum, mean) or a NumPy scalar (0-d inputs)
                if not (isinstance(grad, np.ndarray) and grad.flags.writeable):
                    grad = np.array(grad)
                tensor.grad = grad
            else:
                tensor.grad = np.asarray(tensor.grad + grad)
            handed_out.add(id(grad))  # a retained non-leaf's .grad must not reach a leaf too
        if node is None:
            continue
        input_grads = type(node).backward(node, grad)
        if not isinstance(input_grads, tuple):
            input_grads = (input_grads,)
        for parent, needs, g in zip(node.parents, node.needs_input_grad, input_grads):
            if not needs or g is None:
                continue
            if g.shape != parent.data.shape:
                g = unbroadcast(g, parent.data.shape)
            if g.dtype != parent.data.dtype:
                g = g.astype(parent.data.dtype)
            key = id(parent)
            if key in grads:
                grads[key] = grads[key] + g
            else:
                if id(g) in handed_out:
                    g = g.copy()
                handed_out.add(id(g))
                grads[key] = g
