"""`tf.distribute`: `tf.compat.v1.distribute` with our `cluster_resolver`."""
from tpu_estimator_compat.v1 import _lazy

_lazy.install(
    globals(),
    names={"cluster_resolver": "tpu_estimator_compat.v1.distribute.cluster_resolver"},
    fallback="tensorflow:compat.v1.distribute",
)
