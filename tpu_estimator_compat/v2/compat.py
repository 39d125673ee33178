"""`tf.compat` for TF 2.x-era code: `compat.v1` is `tpu_estimator_compat.v1` (TensorFlow's
`compat.v1` with the TF1 estimator, TPUEstimator and contrib modules), `compat.v2` is
`tpu_estimator_compat.v2`; the rest (`as_bytes`, `forward_compatible`, ...) is
TensorFlow's."""
from tpu_estimator_compat.v1 import _lazy

_lazy.install(
    globals(),
    names={"v1": "tpu_estimator_compat.v1", "v2": "tpu_estimator_compat.v2"},
    fallback="tensorflow:compat",
)
