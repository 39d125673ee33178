"""The seam (`tpu_estimator_compat.tf_internals`): every private TensorFlow symbol it uses
exists in the installed TensorFlow, and each says what public behaviour it provides."""
import ast
import importlib
import pathlib
import pkgutil
import re

import pytest

from tpu_estimator_compat import tf_internals
from tpu_estimator_compat.tf_internals import _symbols

_SEAM_MODULES = [importlib.import_module(f"{tf_internals.__name__}.{info.name}")
                 for info in pkgutil.iter_modules(tf_internals.__path__)
                 if not info.name.startswith("_")]


def test_every_seam_module_lists_its_symbols():
    assert len(_SEAM_MODULES) >= 6
    for module in _SEAM_MODULES:
        assert module.SYMBOLS, module.__name__
        assert set(module.SYMBOLS) <= set(_symbols.LEDGER)


@pytest.mark.parametrize("symbol", _symbols.LEDGER, ids=lambda symbol: symbol.name)
def test_private_symbol_exists_in_the_installed_tensorflow(symbol):
    try:
        symbol.check()
    except (AttributeError, ImportError) as e:
        pytest.fail(f"TensorFlow no longer has {symbol.name} (checked on TF "
                    f"{symbol.checked_on}), which gives: {symbol.provides}. {e}")
    assert symbol.provides and symbol.checked_on


def test_a_missing_symbol_is_named():
    gone = _symbols.Symbol("tensorflow.python.framework.ops", "Graph._no_such_attribute",
                           "nothing", per_instance=True)
    with pytest.raises(AttributeError, match="ops.Graph._no_such_attribute"):
        gone.check()
    with pytest.raises(AttributeError, match="_no_such_function"):
        _symbols.Symbol("tensorflow.python.framework.ops", "_no_such_function", "x").check()


# --- Nothing outside the seam touches TensorFlow's private surface -------------------------
_PACKAGE_ROOT = pathlib.Path(tf_internals.__file__).resolve().parents[1]
# Module paths of TensorFlow's private surface (tf_keras's `api._v1` is its public v1 API;
# its `__internal__` is not).
_PRIVATE_MODULE = re.compile(
    r"^(tensorflow\.(python|compiler|core)|tf_keras\.src)(\.|$)|\.__internal__(\.|$)")
# namedtuple's public methods and fields, named with `_` so as not to clash with fields.
_NAMEDTUPLE_API = {"_replace", "_fields", "_asdict", "_make"}
# (module, object): protected attributes read on objects that are the package's own, not
# TensorFlow's.
_OWN_OBJECTS = {
    ("canned.v2_head_base", "self._head"): "the package's TF 1.x head (canned/heads.py) that "
                                           "a v2-style head computes with",
    ("canned.v2_heads", "self._head"): "the package's TF 1.x head (canned/heads.py)",
    ("canned.v2_heads", "head"): "the package's TF 1.x head (canned/heads.py)",
    ("canned.v2_multi_head", "self._merger"): "the package's TF 1.x multi_head "
                                              "(canned/multi_head.py)",
    ("config.config_line", "config"): "the package's RunConfig (config/run_config.py)",
    ("config.run_config", "config"): "the package's RunConfig",
    ("config.run_config", "new"): "the package's RunConfig, copied by `replace`",
    ("estimator_extenders", "estimator"): "the package's Estimator (estimator.py)",
    ("estimator", "twin"): "the package's Estimator, copied by `_in_memory_evaluator`",
    ("rebuilt_apis.in_memory_evaluator", "estimator"): "the package's (TPU)Estimator",
    ("train_and_evaluate_tasks", "estimator"): "the package's (TPU)Estimator",
}


def _ledger_attributes():
    """The private attribute names the ledger records (`Class._name` or `_name`)."""
    return {symbol.attribute.rsplit(".", 1)[-1] for symbol in _symbols.LEDGER
            if symbol.attribute.rsplit(".", 1)[-1].startswith("_")}


def _is_protected(name):
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _private_uses(source, module, ledger_attributes=frozenset()):
    """['line: what'] of `source`'s uses of TensorFlow's private surface: imports of private
    modules (also through importlib.import_module), `tf.__internal__`, protected attributes
    read, set or named in getattr/hasattr/setattr or a `type()` namespace, on anything but
    `self`, `cls`, a class of the module itself, the package's own objects (`_OWN_OBJECTS`)
    and namedtuples; `super()._name` only if the ledger records `_name` (a TensorFlow base
    class's interface for subclasses, whose existence the ledger checks)."""
    tree = ast.parse(source)
    own_classes = {node.name for node in ast.walk(tree) if isinstance(node, ast.ClassDef)}
    uses = []

    def protected_access(base, attribute):
        if not _is_protected(attribute) or attribute in _NAMEDTUPLE_API:
            return False
        if isinstance(base, ast.Call) and getattr(base.func, "id", None) == "super":
            return attribute not in ledger_attributes
        name = ast.unparse(base)
        return name not in ("self", "cls") and name not in own_classes and (
            (module, name) not in _OWN_OBJECTS)

    for node in ast.walk(tree):
        what = None
        if isinstance(node, ast.Import):
            what = [alias.name for alias in node.names if _PRIVATE_MODULE.search(alias.name)]
        elif isinstance(node, ast.ImportFrom) and not node.level:
            what = [node.module] if _PRIVATE_MODULE.search(node.module or "") else None
        elif isinstance(node, ast.Attribute):
            if node.attr == "__internal__" or protected_access(node.value, node.attr):
                what = f"{ast.unparse(node.value)}.{node.attr}"
        elif isinstance(node, ast.Call) and node.args:
            function = getattr(node.func, "id", getattr(node.func, "attr", None))
            constants = [arg.value for arg in node.args
                         if isinstance(arg, ast.Constant) and isinstance(arg.value, str)]
            if function == "import_module" and constants:
                what = [name for name in constants[:1] if _PRIVATE_MODULE.search(name)]
            elif (function in ("getattr", "hasattr", "setattr", "delattr")
                  and len(node.args) > 1 and isinstance(node.args[1], ast.Constant)
                  and protected_access(node.args[0], str(node.args[1].value))):
                what = f"{function}({ast.unparse(node.args[0])}, {node.args[1].value!r})"
            elif function == "type" and len(node.args) == 3 and isinstance(node.args[2],
                                                                           ast.Dict):
                what = [key.value for key in node.args[2].keys
                        if isinstance(key, ast.Constant) and _is_protected(str(key.value))]
        if what:
            uses.append(f"{node.lineno}: {what}")
    return uses


def test_nothing_outside_the_seam_uses_tensorflow_private_surface():
    ledger_attributes = _ledger_attributes()
    offending = {}
    for path in sorted(_PACKAGE_ROOT.rglob("*.py")):
        module = ".".join(path.relative_to(_PACKAGE_ROOT).with_suffix("").parts)
        if module.startswith("tf_internals"):
            continue
        uses = _private_uses(path.read_text(), module, ledger_attributes)
        if uses:
            offending[module] = uses
    assert offending == {}, (
        "TensorFlow's private surface (protected attributes, tensorflow.python/compiler/core, "
        "tf_keras.src, __internal__) goes through tpu_estimator_compat.tf_internals: add a "
        "function there and the symbol to its SYMBOLS, with what it provides")


@pytest.mark.parametrize("source", [
    "from tensorflow.python.ops import array_ops",
    "import tensorflow.python.ops.array_ops",
    "from tf_keras.src.engine import node",
    "from tf_keras.api._v1.keras.__internal__.legacy import layers",
    "m = importlib.import_module('tensorflow.python.framework.ops')",
    "cond = tf.__internal__.smart_cond.smart_cond",
    "var_list = saver._var_list",
    "var_list = getattr(saver, '_var_list', None)",
    "if hasattr(tensor, '_keras_history'): pass",
    "conv_base._convolution_op = op",
    "cls = type('S', (tf.distribute.MirroredStrategy,), {'_collective_key_base': 1})",
    "class A(Base):\n    def f(self):\n        return super()._not_in_the_ledger()",
    "def f(graph):\n    return graph._collections",
])
def test_the_scan_sees_each_private_use(source):
    assert _private_uses(source, "engine.anything", {"_prepare"})


@pytest.mark.parametrize("source", [
    "from tf_keras.api._v1 import keras",
    "view = view._replace(step=1)",
    "class A:\n    _cache = {}\n\nA._cache.clear()",
    "class A(Base):\n    def _prepare(self):\n        self._x = 1\n        super()._prepare()",
    "x = getattr(obj, '__name__')",
])
def test_the_scan_passes_what_is_not_tensorflows(source):
    assert _private_uses(source, "engine.anything", {"_prepare"}) == []
