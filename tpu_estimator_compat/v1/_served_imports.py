"""Imports of TensorFlow made by TF1-era library code, served this namespace.

`redirected_name` maps a TF1 module path to the path that serves it here
(`tensorflow[.x]` / `tensorflow_estimator[.x]` -> `tpu_estimator_compat.v1[.x]`), for the
`run` command's import redirect and for `serving_v1_to`, which imports a TF1-era library
(TF-GAN, for `tf.contrib.gan`) with its own `import tensorflow` statements bound to this
namespace, as `run` serves it to the libraries it names.
"""
import builtins
import contextlib
import sys

NAMESPACE = "tpu_estimator_compat.v1"
REDIRECTED_ROOTS = ("tensorflow", "tensorflow_estimator")


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
