"""`tf.distribute.cluster_resolver`: TensorFlow's, with a `TPUClusterResolver` that can be
built on a machine without a TPU (see `tpu_estimator_compat.engine.cluster_resolver`)."""
from tpu_estimator_compat.v1 import _lazy

NAMES = {"TPUClusterResolver": "tpu_estimator_compat.engine.cluster_resolver:TPUClusterResolver"}

_lazy.install(globals(), names=NAMES, fallback="tensorflow:compat.v1.distribute.cluster_resolver")
