"""`tf.compat` for TF 1.15 code: `compat.v1` is this namespace, `compat.v2` is
`tensorflow.compat.v2`, the rest (`as_bytes`, `forward_compatible`, ...) is TensorFlow's."""
from tpu_estimator_compat.v1 import _lazy

_lazy.install(
    globals(),
    names={"v1": "tpu_estimator_compat.v1", "v2": "tensorflow:compat.v2"},
    fallback="tensorflow:compat.v1.compat",
)
