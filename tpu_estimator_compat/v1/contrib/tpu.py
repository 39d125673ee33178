"""`tf.contrib.tpu` (also `tf.estimator.tpu`): TPUEstimator and its helpers from this
package, the rest of `tf.compat.v1.tpu` (`bfloat16_scope`, `outside_compilation`,
`rewrite`, `shard`, ...) from TensorFlow. `AsyncCheckpointSaverHook`,
`export_estimator_savedmodel` and the loop helpers `while_loop` / `repeat` (TensorFlow's own
`tensorflow.python.tpu.training_loop`, which runs off-TPU too) are contrib's only."""
from tpu_estimator_compat.v1 import _lazy
from tpu_estimator_compat.v1 import _paths

NAMES = {
    "TPUEstimator": "tpu_estimator_compat.estimator:TPUEstimator",
    "TPUEstimatorSpec": "tpu_estimator_compat.api.spec:TPUEstimatorSpec",
    "RunConfig": "tpu_estimator_compat.config.run_config:RunConfig",
    "TPUConfig": "tpu_estimator_compat.config.tpu_config:TPUConfig",
    "InputPipelineConfig": "tpu_estimator_compat.config.tpu_config:InputPipelineConfig",
    "CrossShardOptimizer": "tpu_estimator_compat.api.optimizers:CrossShardOptimizer",
    "cross_replica_sum": "tpu_estimator_compat.api.optimizers:cross_replica_sum",
}
FALLBACK = "tensorflow:compat.v1.tpu"
MISSING_HINT = (". Keras-on-TPU (TPUDistributionStrategy, keras_to_tpu_model) is not provided: "
                "use tf.distribute.TPUStrategy.")

# contrib's only (TensorFlow 2's tf.compat.v1.estimator.tpu has neither).
_CONTRIB_ONLY = {**_paths.ASYNC_CHECKPOINT_NAMES, "export_estimator_savedmodel":
                 "tpu_estimator_compat.estimator:export_estimator_savedmodel",
                 "experimental": "tpu_estimator_compat.v1.contrib.tpu.experimental",
                 **{name: f"tensorflow.python.tpu.training_loop:{name}"
                    for name in ("while_loop", "repeat")}}

_lazy.install(globals(), names={**NAMES, **_CONTRIB_ONLY}, fallback=FALLBACK,
              missing_hint=MISSING_HINT)
