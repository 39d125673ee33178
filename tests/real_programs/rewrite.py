"""Mechanical import rewriting: `tensorflow` -> `tpu_estimator_compat.v1` in a program's copy.

Only import statements change, as the README's migration rule says: every TF 1.x module
path, `tensorflow.python.*` included (as the zero-edit runner serves them), except
`tensorflow.compat.v2`, `tensorflow.core` (protos) and `tensorflow.compiler` (XLA), which
keep real TensorFlow.
`tensorflow_estimator...` maps onto the v1 namespace's `python.estimator...` paths (TF 1.x
served `tensorflow.python.estimator` from it). TensorFlow 2 code (`tf2`: `import tensorflow as
tf` beside `tf.compat.v1`) changes as docs/cli.md tells its users: `tensorflow` ->
`tpu_estimator_compat.v2`, `tensorflow.keras...` -> `tf_keras...` (Keras 2), its
`tensorflow.compat.v1` the v1 namespace.
"""
import os
import re

TARGET = "tpu_estimator_compat.v1"
TF2_TARGET = "tpu_estimator_compat.v2"
_KEEP = (".compat.v2", ".core", ".compiler")

_FROM = re.compile(r"^(\s*from\s+)([\w.]+)(\s+import\b)", re.M)
_IMPORT = re.compile(r"^(\s*import\s+)([\w.]+)(\s+as\s+\w+)?(?=[ \t]*(#.*)?$)", re.M)


def map_module(name, tf2=False):
    """The module a rewritten program imports instead of `name` (unchanged if not TF's);
    `tf2`: in TensorFlow 2 code."""
    if tf2 and name == "tensorflow":
        return TF2_TARGET
    if tf2 and (name == "tensorflow.keras" or name.startswith("tensorflow.keras.")):
        return "tf_keras" + name[len("tensorflow.keras"):]
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


def rewrite_source(text, tf2=False):
    """`text` with its TensorFlow imports pointed at the v1 namespace (`tf2`: TensorFlow 2
    code's at `tpu_estimator_compat.v2`)."""
    text = _FROM.sub(lambda m: m.group(1) + map_module(m.group(2), tf2) + m.group(3), text)

    def plain_import(m):
        new = map_module(m.group(2), tf2)
        if new == m.group(2):
            return m.group(0)
        alias = m.group(3) or " as " + m.group(2).split(".")[0]
        if m.group(3) is None and "." in m.group(2):
            # `import tensorflow.contrib.x` binds `tensorflow`: keep that name usable.
            alias = " as " + m.group(2).split(".")[0]
            return m.group(1) + map_module(m.group(2).split(".")[0], tf2) + alias
        return m.group(1) + new + alias

    return _IMPORT.sub(plain_import, text)


def rewrite_tree(root, tf2=False):
    """Rewrites every .py file under `root` in place (`tf2`: TensorFlow 2 code); returns how
    many changed."""
    changed = 0
    for directory, _, files in os.walk(root):
        for name in files:
            if not name.endswith(".py"):
                continue
            path = os.path.join(directory, name)
            with open(path, encoding="utf-8", errors="surrogateescape") as f:
                text = f.read()
            new = rewrite_source(text, tf2)
            if new != text:
                with open(path, "w", encoding="utf-8", errors="surrogateescape") as f:
                    f.write(new)
                changed += 1
    return changed
