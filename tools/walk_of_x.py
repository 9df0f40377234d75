"""The walk of ``X`` through the package in one default ``fit``: which modules of
pymc_bnn its call stack enters, and how often it moves between them.

    PYTHONPATH=<tree> python tools/walk_of_x.py

Prints the modules entered, the distinct calls from one module into another (the
walk's edges), and the moves at run time: a change of the innermost pymc_bnn module on
the call stack (a call into another module, or a return to the caller's, "back up"). Fits
run one at a time (``PYMC_BNN_NUM_THREADS=1``) so that one thread holds the whole walk.
"""

from __future__ import annotations

import os
import sys

os.environ.setdefault("PYMC_BNN_NUM_THREADS", "1")


def main() -> int:
    import warnings

    import numpy as np

    import pymc_bnn
    from pymc_bnn import BayesianMLPClassifier

    root = os.path.dirname(pymc_bnn.__file__)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 2))
    y = (X[:, 0] * X[:, 1] > 0).astype(int)
    est = BayesianMLPClassifier((5,), n_iter=2000, random_state=0)
    BayesianMLPClassifier((5,), n_iter=2000, random_state=0).fit(X, y)  # compile first

    stack: list[str] = []
    moves, back, path, edges = 0, 0, [], set()

    def module_of(frame):
        name = frame.f_code.co_filename
        if not name.startswith(root):
            return None
        rel = os.path.relpath(name, root)[:-3].replace(os.sep, ".")
        return rel[:-9] if rel.endswith(".__init__") else rel

    def profile(frame, event, arg):
        nonlocal moves, back
        if event not in ("call", "return"):
            return
        mod = module_of(frame)
        if mod is None:
            return
        current = stack[-1] if stack else None
        if event == "call":
            stack.append(mod)
            if mod != current:
                moves += 1
                path.append(mod)
                if current is not None:
                    edges.add((current, mod))
        else:
            if stack:
                stack.pop()
            new = stack[-1] if stack else None
            if new is not None and new != mod:
                moves += 1
                back += 1
                path.append(new)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sys.setprofile(profile)
        try:
            est.fit(X, y)
        finally:
            sys.setprofile(None)
    rooms = sorted(set(path))
    print(f"package: {root}")
    print(f"modules entered ({len(rooms)}): {', '.join(rooms)}")
    print(f"distinct calls from one module into another: {len(edges)}")
    for a, b in sorted(edges):
        print(f"  {a} -> {b}")
    closure = import_closure(root)
    up = sorted((a, b) for a, b in edges if b not in closure.get(a, set()))
    print(
        f"of them calls into a module the caller does not import (callbacks, back up the "
        f"pipeline): {len(up)}"
    )
    for a, b in up:
        print(f"  {a} -> {b}")
    print(f"moves between modules at run time: {moves}, of them back up (returns): {back}")
    first = []
    for m in path:
        if m not in first:
            first.append(m)
    print("first entries in order: " + " -> ".join(first))
    return 0


def import_closure(root: str) -> dict[str, set[str]]:
    """Each module's package modules imported directly or transitively (dotted names
    relative to the package, ``inference`` for a subpackage's ``__init__``)."""
    import ast
    from pathlib import Path

    package = Path(root)
    mods = {}
    for path in package.rglob("*.py"):
        parts = path.relative_to(package).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        mods[name or "__init__"] = path
    direct = {}
    for name, path in mods.items():
        deps = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.ImportFrom)
                and node.module
                and node.module.startswith("pymc_bnn")
            ):
                base = node.module[len("pymc_bnn.") :] if "." in node.module else ""
                for a in node.names:
                    sub = f"{base}.{a.name}" if base else a.name
                    deps.add(sub if sub in mods else base)
            elif isinstance(node, ast.ImportFrom) and node.level:
                pkg = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
                deps.add(".".join([*pkg, *([node.module] if node.module else [])]))
            elif isinstance(node, ast.Import):
                deps |= {
                    a.name[len("pymc_bnn.") :] for a in node.names if a.name.startswith("pymc_bnn.")
                }
        full = set()
        for d in deps:
            parts = d.split(".")
            full |= {".".join(parts[:k]) for k in range(1, len(parts) + 1)}
        direct[name] = full & set(mods)
    closure = {}
    for name in mods:
        seen, todo = set(), list(direct[name])
        while todo:
            m = todo.pop()
            if m not in seen:
                seen.add(m)
                todo.extend(direct.get(m, ()))
        closure[name] = seen
    return closure


if __name__ == "__main__":
    raise SystemExit(main())
