"""`tf.contrib`: the parts that TPUEstimator programs use, each loaded on first use.

`tf.contrib` was removed in TensorFlow 2. `tpu`, `cluster_resolver`, `data`, `layers`,
`summary`, `training` and `framework` are provided; other contrib modules are not.
"""
from tpu_estimator_compat.v1 import _lazy

SUBMODULES = ("cluster_resolver", "data", "framework", "layers", "summary", "tpu", "training")

_lazy.install(
    globals(),
    names={name: f"{__name__}.{name}" for name in SUBMODULES},
    missing_hint=(". tf.contrib was removed in TensorFlow 2; tpu_estimator_compat provides "
                  f"tf.contrib.{{{', '.join(SUBMODULES)}}} only."),
)
