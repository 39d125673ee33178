"""Mechanical import rewriting: `tensorflow` -> `tpu_estimator_compat.v1` in a program's copy.

Only import statements change, as the README's migration rule says: every TF 1.x module
path, `tensorflow.python.*` included (as the zero-edit runner serves them), except
`tensorflow.compat.v2`, `tensorflow.core` (protos) and `tensorflow.compiler` (XLA), which
keep real TensorFlow.
`tensorflow_estimator...` maps onto the v1 namespace's `python.estimator...` paths (TF 1.x
served `tensorflow.python.estimator` from it).
"""
import os
import re

TARGET = "tpu_estimator_compat.v1"
_KEEP = (".compat.v2", ".core", ".compiler")

_FROM = re.compile(r"^(\s*from\s+)([\w.]+)(\s+import\b)", re.M)
_IMPORT = re.compile(r"^(\s*import\s+)([\w.]+)(\s+as\s+\w+)?(?=[ \t]*(#.*)?$)", re.M)


def map_module(name):
    """The module a rewritten program imports instead of `name` (unchanged if not TF's)."""
    if name == "tensorflow_estimator":
        return TARGET + ".estimator"
    if name.startswith("tensorflow_estimator."):
        return TARGET + name[len("tensorflow_estimator"):]
    if name != "tensorflow" and not name.startswith("tensorflow."):
        return name
    rest = name[len("tensorflow"):]
    if rest.startswith(_KEEP):
        return name
    if rest == ".compat.v1" or rest.startswith(".compat.v1."):
        rest = rest[len(".compat.v1"):]
    return TARGET + rest


def rewrite_source(text):
    """`text` with its TensorFlow imports pointed at the v1 namespace."""
    text = _FROM.sub(lambda m: m.group(1) + map_module(m.group(2)) + m.group(3), text)

    def plain_import(m):
        new = map_module(m.group(2))
        if new == m.group(2):
            return m.group(0)
        alias = m.group(3) or " as " + m.group(2).split(".")[0]
        if m.group(3) is None and "." in m.group(2):
            # `import tensorflow.contrib.x` binds `tensorflow`: keep that name usable.
            alias = " as " + m.group(2).split(".")[0]
            return m.group(1) + map_module(m.group(2).split(".")[0]) + alias
        return m.group(1) + new + alias

    return _IMPORT.sub(plain_import, text)


def rewrite_tree(root):
    """Rewrites every .py file under `root` in place; returns how many changed."""
    changed = 0
    for directory, _, files in os.walk(root):
        for name in files:
            if not name.endswith(".py"):
                continue
            path = os.path.join(directory, name)
            with open(path, encoding="utf-8", errors="surrogateescape") as f:
                text = f.read()
            new = rewrite_source(text)
            if new != text:
                with open(path, "w", encoding="utf-8", errors="surrogateescape") as f:
                    f.write(new)
                changed += 1
    return changed
