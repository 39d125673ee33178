"""`tf.compat` for TF 1.15 code: `compat.v1` is this namespace, the rest is TensorFlow's."""
from tpu_estimator_compat.v1 import _lazy

_lazy.install(
    globals(),
    names={"v1": "tpu_estimator_compat.v1"},
    fallback="tensorflow:compat.v1.compat",
)
