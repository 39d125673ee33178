"""Which TensorFlow a program file was written for, as the runner decides it.

A file is **TensorFlow 2 code** when it uses no name that only TensorFlow 1.x had and at
least one sign of TensorFlow 2: `tf.compat.v1` / `tf.compat.v2` used beside `import
tensorflow` itself (how TF2 code reaches the estimator-era APIs:
`tf.compat.v1.train.get_or_create_global_step`, or `import tensorflow.compat.v1 as tf1` next
to `import tensorflow as tf`, as TensorFlow's migration guides write it; `import
tensorflow.compat.v1 as tf` alone is TF1 code's way, and no sign), or a name TensorFlow 1.15
did not have (`tf.data.AUTOTUNE`, `tf.summary.create_file_writer`). Every other file is TF1
code, the default. A name "only TensorFlow 1.x had" is one TF 1.15's API has
(`inventory.py`) and TensorFlow 2.21 lacks at some module level: `tf.Session`, `tf.layers`,
`tf.contrib`, `tf.train.AdamOptimizer`, `tf.logging`. `tf.estimator` and `tf.keras` are signs
of neither (TensorFlow 2.15 had both). The file is read statically (`check.uses_in_source`).
"""
import ast
import dataclasses
import types

from tpu_estimator_compat.cli import inventory

_NEITHER = ("estimator", "keras")


@dataclasses.dataclass(frozen=True)
class Era:
    """A file's verdict: `tf2`, with the names that decided it (`tf1_names` first)."""
    tf2: bool
    tf1_names: tuple
    tf2_names: tuple


def _classify(api, tensorflow):
    """'tf1', 'tf2' or None for one used API path below `tensorflow`."""
    parts = api.split(".")[1:]
    if not parts or parts[0] in _NEITHER or any(p.startswith("__") for p in parts):
        return None
    if parts[0] == "compat":
        return None  # see _compat_beside_root
    value = tensorflow
    for index, name in enumerate(parts):
        parent = ".".join(["tensorflow", *parts[:index]])
        if not isinstance(value, types.ModuleType):
            return None  # an attribute of a class or function: not a module-level name
        if not hasattr(value, name):
            return "tf1" if inventory.tf1_has(parent, name) else None
        if not inventory.tf1_has(parent, name):
            return "tf2"
        value = getattr(value, name)
    return None


def _compat_beside_root(tree):
    """`tensorflow.compat.v1` / `.v2` where the file reaches them beside `import tensorflow
    [as tf]`: as its attributes (`tf.compat.v1.train...`), or imported under a name of their
    own (`import tensorflow.compat.v1 as tf1`, TensorFlow's migration guides' way)."""
    imports = [alias for node in ast.walk(tree) if isinstance(node, ast.Import)
               for alias in node.names]
    roots = {alias.asname or alias.name for alias in imports if alias.name == "tensorflow"}
    if not roots:
        return []
    found = {alias.name for alias in imports
             if alias.name in ("tensorflow.compat.v1", "tensorflow.compat.v2") and alias.asname}
    found.update(f"tensorflow.compat.{node.attr}" for node in ast.walk(tree)
                 if isinstance(node, ast.Attribute) and node.attr in ("v1", "v2")
                 and isinstance(node.value, ast.Attribute) and node.value.attr == "compat"
                 and isinstance(node.value.value, ast.Name) and node.value.value.id in roots)
    return sorted(found)


def era_of_source(source, filename="<source>"):
    """The `Era` of Python `source` (TF1 code when it does not parse)."""
    from tpu_estimator_compat.cli import check  # noqa: PLC0415  (check uses this module)

    try:
        tree = ast.parse(source, filename)
        uses = check.uses_in_source(source, filename)
    except SyntaxError:
        return Era(False, (), ())
    return era_of_uses(tree, uses)


def era_of_uses(tree, uses):
    """The `Era` of a parsed file (`tree`) that uses the TF API paths `uses`."""
    import tensorflow  # noqa: PLC0415  (the runner imported it already)

    found = {"tf1": [], "tf2": _compat_beside_root(tree)}
    for api in sorted(uses):
        if api.startswith("tensorflow."):
            kind = _classify(api, tensorflow)
            if kind is not None:
                found[kind].append(api)
    return Era(bool(found["tf2"]) and not found["tf1"], tuple(found["tf1"]),
               tuple(found["tf2"]))


def era_of_file(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        return era_of_source(f.read(), path)
