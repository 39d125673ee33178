"""Names TF1-era programs and their libraries call that Python 3.10/3.11 and NumPy removed.

TensorFlow 1.15 ran on Python 3.7 with NumPy 1.x. While a legacy program runs, the runner
restores, where this Python or NumPy removed them:

- `inspect.getargspec` (Python 3.11; TF-GAN 2.1 calls it at import, programs read a
  function's arguments with it): Python 3.10's behaviour, an `ArgSpec(args, varargs,
  keywords, defaults)` and a ValueError for keyword-only parameters or annotations;
- the `collections` aliases of the `collections.abc` classes (`collections.Mapping`...,
  Python 3.10; gin-config 0.4 and other libraries of the time use them);
- NumPy's aliases of Python and NumPy scalar types (`np.float_`, `np.int`, `np.bool`...,
  removed in NumPy 1.24 and 2.0), as the types they named.
"""
import collections
import collections.abc
import contextlib
import inspect

import numpy as np

ArgSpec = collections.namedtuple("ArgSpec", "args varargs keywords defaults")

_COLLECTIONS_ABCS = ("Awaitable", "Coroutine", "AsyncIterable", "AsyncIterator",
                     "AsyncGenerator", "Hashable", "Iterable", "Iterator", "Generator",
                     "Reversible", "Sized", "Container", "Callable", "Collection", "Set",
                     "MutableSet", "Mapping", "MutableMapping", "MappingView", "KeysView",
                     "ItemsView", "ValuesView", "Sequence", "MutableSequence", "ByteString")
_NUMPY_ALIASES = {"bool": bool, "int": int, "float": float, "complex": complex,
                  "object": object, "str": str, "long": int, "unicode": str,
                  "float_": np.float64, "complex_": np.complex128, "string_": np.bytes_,
                  "unicode_": np.str_, "bool8": np.bool_, "int0": np.intp, "uint0": np.uintp,
                  "longfloat": np.longdouble, "singlecomplex": np.complex64,
                  "cfloat": np.complex128, "longcomplex": np.clongdouble,
                  "clongfloat": np.clongdouble, "Inf": np.inf, "Infinity": np.inf,
                  "infty": np.inf, "NaN": np.nan, "NAN": np.nan, "PINF": np.inf,
                  "NINF": -np.inf}


def getargspec(func):
    """Python 3.10's `inspect.getargspec`: the names and defaults of `func`'s parameters."""
    spec = inspect.getfullargspec(func)
    if spec.kwonlyargs or spec.annotations:
        raise ValueError("Function has keyword-only parameters or annotations, use "
                         "inspect.signature() API which can support them")
    return ArgSpec(spec.args, spec.varargs, spec.varkw, spec.defaults)


def _removed(module, names):
    """{name: value} of `names` that `module` no longer has."""
    return {name: value for name, value in names.items() if name not in vars(module)}


@contextlib.contextmanager
def removed_names_restored():
    """While active, the names of the module docstring exist."""
    restored = [
        (inspect, _removed(inspect, {"getargspec": getargspec})),
        (collections, _removed(collections, {
            name: getattr(collections.abc, name) for name in _COLLECTIONS_ABCS
            if hasattr(collections.abc, name)})),
        (np, _removed(np, _NUMPY_ALIASES)),
    ]
    for module, names in restored:
        for name, value in names.items():
            setattr(module, name, value)
    try:
        yield
    finally:
        for module, names in restored:
            for name in names:
                delattr(module, name)


def restore_getargspec():
    """Gives `inspect` its `getargspec` again for the rest of the process, where this Python
    removed it (`tf.contrib.gan`: TF-GAN 2.1 calls it when building models)."""
    if "getargspec" not in vars(inspect):
        inspect.getargspec = getargspec
