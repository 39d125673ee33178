"""`tf.contrib`: the parts that TPUEstimator programs use, each loaded on first use.

`tf.contrib` was removed in TensorFlow 2. `tpu`, `cluster_resolver`, `data`, `layers`, `opt`
(decoupled weight decay only), `stateless`, `summary`, `training` and `framework` are provided by this package (with
tf-slim's help for the last three); `slim` and `metrics` are tf-slim's (`_tf_slim`). Other contrib modules are
not provided.
"""
from tpu_estimator_compat.v1 import _lazy

_OWN = ("cluster_resolver", "data", "framework", "layers", "opt", "stateless", "summary",
        "tpu", "training")
SUBMODULES = tuple(sorted(_OWN + ("metrics", "slim")))

_lazy.install(
    globals(),
    names={**{name: f"{__name__}.{name}" for name in _OWN},
           "slim": f"{__name__}.slim",  # tf_slim's names (`_paths`)
           "metrics": f"{__name__}._tf_slim:slim_metrics"},
    missing_hint=(". tf.contrib was removed in TensorFlow 2; tpu_estimator_compat provides "
                  f"tf.contrib.{{{', '.join(SUBMODULES)}}} only."),
)
