"""`tf.tpu`: `tf.compat.v1.tpu`, with a `CrossShardOptimizer` and `cross_replica_sum` that
run on any tf.distribute strategy (TensorFlow's need a TPU kernel), and an `experimental`
whose `initialize_tpu_system` takes our `TPUClusterResolver` (`engine/tpu_system.py`)."""
from tpu_estimator_compat.v1 import _lazy

_lazy.install(
    globals(),
    names={
        "CrossShardOptimizer": "tpu_estimator_compat.api.optimizers:CrossShardOptimizer",
        "cross_replica_sum": "tpu_estimator_compat.api.optimizers:cross_replica_sum",
        "experimental": "tpu_estimator_compat.v1.tpu.experimental",  # `_paths`
    },
    fallback="tensorflow:compat.v1.tpu",
)
