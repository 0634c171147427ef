"""PyTorch is optional: a test reaches it only through the oracle mechanism (tests/support/oracle.py).

Without torch a test that needs it must skip with the reason, so a learner's ``make test`` on a
laptop without PyTorch is green. A test gets torch in one of these ways, and this file checks
statically that every ``import torch`` in tests/ is inside one of them:

- the ``torch`` fixture (a parameter named ``torch``);
- the ``oracle`` marker, on the function, its class, or the module's ``pytestmark``;
- a call to ``require_torch()`` earlier in the same function;
- a helper function (not a test) of a module, each of whose callers in that module is one of
  the above (``def F_torch(): import torch.nn.functional``, called from oracle tests).

tests/support/ and tests/conftest.py implement the mechanism and are exempt.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent


def _imports_torch(node: ast.AST) -> bool:
    if isinstance(node, ast.Import):
        return any(a.name == "torch" or a.name.startswith("torch.") for a in node.names)
    if isinstance(node, ast.ImportFrom):
        return node.level == 0 and node.module is not None and node.module.split(".")[0] == "torch"
    return False


def _marks_oracle(decorators) -> bool:
    return any("oracle" in ast.unparse(d) for d in decorators)


def _module_is_oracle(tree: ast.Module) -> bool:
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "pytestmark" for t in node.targets):
            if "oracle" in ast.unparse(node.value):
                return True
    return False


def _function_has_torch(func, classes) -> bool:
    """A test (or fixture) that gets torch through the mechanism before it imports it."""
    if any(a.arg == "torch" for a in func.args.args + func.args.kwonlyargs):
        return True
    if _marks_oracle(func.decorator_list) or any(_marks_oracle(c.decorator_list) for c in classes):
        return True
    return any(isinstance(n, ast.Call) and ast.unparse(n.func).endswith("require_torch") for n in ast.walk(func))


def torch_imports_outside_the_mechanism(source: str, filename: str = "<test>") -> list[str]:
    """Lines of ``source`` (a test module) that import torch without the oracle mechanism."""
    tree = ast.parse(source, filename)
    if _module_is_oracle(tree):
        return []
    functions: dict[str, tuple] = {}  # name -> (node, enclosing classes)

    def collect(body, classes):
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                functions.setdefault(node.name, (node, classes))
            elif isinstance(node, ast.ClassDef):
                collect(node.body, classes + (node,))

    collect(tree.body, ())

    def allowed(func, classes, seen=()) -> bool:
        if _function_has_torch(func, classes):
            return True
        if func.name.startswith("test_") or func.name in seen:
            return False
        callers = [
            (f, c)
            for f, c in functions.values()
            if f is not func
            and any(isinstance(n, ast.Call) and getattr(n.func, "id", None) == func.name for n in ast.walk(f))
        ]
        return bool(callers) and all(allowed(f, c, seen + (func.name,)) for f, c in callers)

    bad = []

    def visit(node, func, classes):
        for child in ast.iter_child_nodes(node):
            if _imports_torch(child) and (func is None or not allowed(func, classes)):
                bad.append(f"{filename}:{child.lineno}: {ast.unparse(child)}")
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                visit(child, func or child, classes)  # a nested function belongs to its outer test
            elif isinstance(child, ast.ClassDef):
                visit(child, func, classes + (child,))
            else:
                visit(child, func, classes)

    visit(tree, None, ())
    return bad


def test_every_torch_import_in_the_tests_goes_through_the_oracle_mechanism():
    files = [p for p in TESTS.rglob("*.py") if "support" not in p.relative_to(TESTS).parts and p.name != "conftest.py"]
    assert len(files) > 50
    bad = [
        line
        for p in files
        for line in torch_imports_outside_the_mechanism(p.read_text(encoding="utf-8"), str(p.relative_to(TESTS.parent)))
    ]
    assert not bad, "import torch only under the oracle marker or the torch fixture:\n" + "\n".join(bad)


@pytest.mark.parametrize(
    "source, found",
    [
        ("import torch\n", 1),
        ("def test_a():\n    import torch\n", 1),
        ("def helper():\n    from torch import nn\n\ndef test_a():\n    helper()\n", 1),
        ("def test_a(torch):\n    import torch.nn.functional as F\n", 0),
        ("import pytest\n@pytest.mark.oracle\ndef test_a():\n    import torch\n", 0),
        ("import pytest\npytestmark = [pytest.mark.oracle]\nimport torch\n", 0),
        ("def test_a():\n    torch = require_torch()\n    import torch.nn\n", 0),
        ("def helper():\n    import torch\n\ndef test_a(torch):\n    helper()\n", 0),
        ("def helper():\n    import torch\n\ndef test_a(torch):\n    helper()\n\ndef test_b():\n    helper()\n", 1),
        ("def helper():\n    import torch\n", 1),  # a helper nobody calls is no excuse
    ],
)
def test_the_check_finds_what_it_should(source, found):
    assert len(torch_imports_outside_the_mechanism(source)) == found
