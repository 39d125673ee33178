"""tf-slim, the maintained home of `tf.contrib.slim`, made to work on TensorFlow 2.21.

tf-slim 1.1 relies on TensorFlow internals that TensorFlow 2.21 moved; importing this
module repairs them (`tf_internals.keras_and_slim`), for tf-slim only when possible:

1. `tensorflow.python.layers.normalization` (which slim's `batch_norm` builds its layer from)
   loads `tf_keras.legacy_tf_layers.normalization`, a path tf_keras no longer has: the module
   is `tf_keras.src.legacy_tf_layers.normalization`. TensorFlow's module is pointed at it when
   the old path is missing.
2. `tensorflow.python.framework.ops.Tensor` (now `framework.tensor.Tensor`), read by slim's
   `utils.constant_value` (hence `batch_norm` on rank-2 inputs, `smart_cond`), `optimize_loss`,
   `learning` and `rev_block_lib`: tf-slim's modules get a view of `ops` that has it.
3. `control_flow_ops.case`, `cond`, `Assert` and `while_loop`, `array_ops.stack` and
   `unstack`, `ops.IndexedSlices` (now modules of their own), read by slim's
   `tfexample_decoder` (`Image` handlers), `smart_cond`, streaming AUC and histogram metrics,
   metric-learning losses and layers: the same, views of those modules that have them.
"""
import importlib

from tpu_estimator_compat.tf_internals import keras_and_slim

keras_and_slim.repair_tf_slim_imports()
# Slim's modules are named here, from sys.modules, because tf_slim's star imports shadow some
# of its attributes (`tf_slim.ops` is TensorFlow's `ops`, `tf_slim.layers` is
# `tf_slim.layers.layers`).
tf_slim = importlib.import_module("tf_slim")
importlib.import_module("tf_slim.nets")  # `slim.nets`, as contrib.slim had
slim_layers = importlib.import_module("tf_slim.layers")
slim_metrics = importlib.import_module("tf_slim.metrics")
slim_arg_scope = importlib.import_module("tf_slim.ops.arg_scope")
slim_variables = importlib.import_module("tf_slim.ops.variables")
keras_and_slim.repair_tf_slim_modules()


def repair_loaded_modules():
    """Repairs (3.) the tf-slim modules imported since (`tf_slim.data`...). Idempotent."""
    keras_and_slim.repair_tf_slim_modules()

