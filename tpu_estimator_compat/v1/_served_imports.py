"""Imports of TensorFlow made by TF1-era library code, served this namespace.

`redirected_name` maps a TF1 module path to the path that serves it here
(`tensorflow[.x]` / `tensorflow_estimator[.x]` -> `tpu_estimator_compat.v1[.x]`), for the
`run` command's import redirect and for `serving_v1_to`, which imports a TF1-era library
(TF-GAN, for `tf.contrib.gan`) with its own `import tensorflow` statements bound to this
namespace, as `run` serves it to the libraries it names. `import_tf_slim` imports tf-slim
(the library tf.contrib.slim became) repaired for TensorFlow 2.21, as `run` serves it.
"""
import builtins
import contextlib
import importlib
import sys

NAMESPACE = "tpu_estimator_compat.v1"
REDIRECTED_ROOTS = ("tensorflow", "tensorflow_estimator")
_TF_SLIM_REPAIRS = "tpu_estimator_compat.rebuilt_apis.tf_slim"  # importing it repairs tf-slim


def redirected_name(name):
    """`tensorflow[.x]` / `tensorflow_estimator[.x]` -> `tpu_estimator_compat.v1[.x]`."""
    _, dot, rest = name.partition(".")
    return NAMESPACE + dot + rest


@contextlib.contextmanager
def serving_v1_to(library):
    """While the block runs, the `tensorflow*` imports of `library`'s modules (the module
    named so and those below it) get this namespace; every other import is unchanged."""
    original = builtins.__import__

    def redirect(name, globals=None, locals=None, fromlist=(), level=0):  # noqa: A002
        importer = (globals or {}).get("__name__") or ""
        if (level == 0 and name.partition(".")[0] in REDIRECTED_ROOTS
                and (importer == library or importer.startswith(library + "."))):
            module = original(redirected_name(name), globals, locals, fromlist, level)
            return module if fromlist else sys.modules[NAMESPACE]
        return original(name, globals, locals, fromlist, level)

    builtins.__import__ = redirect
    try:
        yield
    finally:
        builtins.__import__ = original


def import_tf_slim(original_import, name, globals, locals, fromlist):  # noqa: A002
    """`import tf_slim[.x]` (level 0) through `original_import`, tf-slim repaired first as
    `tf.contrib.slim` is (`rebuilt_apis/tf_slim.py`: names TensorFlow 2.21 moved), and the
    tf-slim modules this import loaded after it."""
    repairs = importlib.import_module(_TF_SLIM_REPAIRS)
    module = original_import(name, globals, locals, fromlist, 0)
    repairs.repair_loaded_modules()
    return module

