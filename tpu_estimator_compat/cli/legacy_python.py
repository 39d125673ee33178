"""Python standard-library names TF1-era programs call that Python 3.11 removed.

TensorFlow 1.15 ran on Python 3.7, where `inspect.getargspec` still existed (deprecated);
TF-GAN 2.1 calls it at import, and programs call it to read a function's arguments. The
runner restores it while a legacy program runs, with its Python 3.10 behaviour: an
`ArgSpec(args, varargs, keywords, defaults)`, and a ValueError for functions with
keyword-only parameters or annotations.
"""
import collections
import contextlib
import inspect

ArgSpec = collections.namedtuple("ArgSpec", "args varargs keywords defaults")


def getargspec(func):
    """Python 3.10's `inspect.getargspec`: the names and defaults of `func`'s parameters."""
    spec = inspect.getfullargspec(func)
    if spec.kwonlyargs or spec.annotations:
        raise ValueError("Function has keyword-only parameters or annotations, use "
                         "inspect.signature() API which can support them")
    return ArgSpec(spec.args, spec.varargs, spec.varkw, spec.defaults)


@contextlib.contextmanager
def removed_names_restored():
    """While active, `inspect.getargspec` exists (if this Python removed it)."""
    if hasattr(inspect, "getargspec"):
        yield
        return
    inspect.getargspec = getargspec
    try:
        yield
    finally:
        del inspect.getargspec
