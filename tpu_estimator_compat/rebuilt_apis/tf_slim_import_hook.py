"""tf-slim repaired for TensorFlow 2.21 wherever it is imported from, once `install()` ran.

Programs migrated by their import lines (`import tpu_estimator_compat.v1 as tf`) may also
import tf-slim directly (`import tf_slim as slim`, `from tf_slim import metrics`), as may their
libraries. `install()` (called by the v1 namespace, hence by v2) puts a finder first in
`sys.meta_path` that answers for `tf_slim` and its submodules with the module the rest of
`sys.meta_path` finds, whose loader applies `tf_slim.py`'s repairs (`tf_internals.
keras_and_slim`): TensorFlow's `layers.normalization` before `tf_slim` runs, the views of
moved TensorFlow modules once the outermost tf-slim import is done. A tf-slim imported before
`install()` is repaired then. tf-slim is never imported by this module: a program that does
not use it is left as it was.
"""
import importlib.abc
import sys
import threading

from tpu_estimator_compat.tf_internals import keras_and_slim

_ROOT = "tf_slim"


def _is_tf_slim(name):
    return name == _ROOT or name.startswith(_ROOT + ".")


class _RepairingLoader(importlib.abc.Loader):
    """A tf-slim module's own loader, with the repairs around its execution."""

    _depth = threading.local()  # tf-slim modules being executed on this thread

    def __init__(self, loader):
        self._loader = loader

    def __getattr__(self, name):  # get_source, get_filename, is_package... as the loader's
        return getattr(self._loader, name)

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        if module.__name__ == _ROOT:
            keras_and_slim.repair_tf_slim_imports()
        depth = getattr(self._depth, "value", 0)
        self._depth.value = depth + 1
        try:
            self._loader.exec_module(module)
        finally:
            self._depth.value = depth
        if depth == 0:
            keras_and_slim.repair_tf_slim_modules()


class TfSlimRepairFinder(importlib.abc.MetaPathFinder):
    """Finds `tf_slim[.x]` as the other finders do, loaded by a `_RepairingLoader`."""

    def find_spec(self, fullname, path, target=None):
        if not _is_tf_slim(fullname):
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                    spec.loader = _RepairingLoader(spec.loader)
                return spec
        return None


def install():
    """Puts the finder first in `sys.meta_path` (once); repairs a tf-slim already imported."""
    if not any(isinstance(finder, TfSlimRepairFinder) for finder in sys.meta_path):
        sys.meta_path.insert(0, TfSlimRepairFinder())
    if _ROOT in sys.modules:
        keras_and_slim.repair_tf_slim_imports()
        keras_and_slim.repair_tf_slim_modules()
