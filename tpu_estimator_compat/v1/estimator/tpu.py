"""`tf.estimator.tpu`: the same names as `tf.contrib.tpu`."""
from tpu_estimator_compat.v1 import _lazy
from tpu_estimator_compat.v1.contrib import tpu as _contrib_tpu

_lazy.install(globals(), names={
    **_contrib_tpu.NAMES, "experimental": "tpu_estimator_compat.v1.estimator.tpu.experimental"},
              fallback=_contrib_tpu.FALLBACK,
              missing_hint=_contrib_tpu.MISSING_HINT)
