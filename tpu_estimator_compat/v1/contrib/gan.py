"""`tf.contrib.gan`: TF-GAN (`tensorflow_gan`), the library tf.contrib.gan became when
TensorFlow 1.14 moved it out of contrib, with the same names (`gan_model`, `gan_loss`,
`gan_train_ops`, `losses`, `features`, `eval`, `estimator.GANEstimator`,
`estimator.TPUGANEstimator`...). TF 1.15 had no tf.contrib.gan; programs written for TF 1.13
and earlier use it.

TF-GAN 2.1, the last release, subclasses `tf.estimator` classes when imported, so it is
imported with this namespace served to its own modules (as `run` serves it to them), and
`inspect.getargspec`, which it calls and Python 3.11 removed, is given back to `inspect` for
the rest of the process. TF-GAN is not installed with this package:
`pip install tensorflow-gan tensorflow-probability`.
"""
import importlib
import sys

from tpu_estimator_compat.tf1_behaviour import legacy_python
from tpu_estimator_compat.v1 import _served_imports

_LIBRARY = "tensorflow_gan"


def _tfgan():
    module = sys.modules.get(_LIBRARY)
    if module is not None:
        return module
    legacy_python.restore_getargspec()
    try:
        with _served_imports.serving_v1_to(_LIBRARY):
            return importlib.import_module(_LIBRARY)
    except ModuleNotFoundError as error:
        if error.name not in (_LIBRARY, "tensorflow_probability"):
            raise
        raise ModuleNotFoundError(
            f"tf.contrib.gan is TF-GAN, which needs {error.name!r}: pip install "
            "tensorflow-gan tensorflow-probability", name=error.name) from error


def __getattr__(name):  # pylint: disable=invalid-name
    if name.startswith("__"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(_tfgan(), name)


def __dir__():  # pylint: disable=invalid-name
    return sorted(set(globals()) | {n for n in dir(_tfgan()) if not n.startswith("_")})
