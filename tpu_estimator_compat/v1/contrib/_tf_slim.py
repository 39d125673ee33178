"""tf-slim, the maintained home of `tf.contrib.slim`, made to load on TensorFlow 2.21.

TensorFlow's `tensorflow.python.layers.normalization` (which slim's `batch_norm` builds its
layer from) loads `tf_keras.legacy_tf_layers.normalization`, a path tf_keras no longer has:
the module is `tf_keras.src.legacy_tf_layers.normalization`. Importing this module points
TensorFlow's module at it when the old path is missing; nothing else changes.
"""
import importlib
import importlib.util

from tensorflow.python.layers import normalization as _tf_normalization

if importlib.util.find_spec("tf_keras.legacy_tf_layers") is None:
    from tf_keras.src.legacy_tf_layers import normalization as _keras_normalization
    _tf_normalization.normalization = _keras_normalization

# After the repair, which slim's layers need. Its modules are named here, from sys.modules,
# because tf_slim's star imports shadow some of its attributes (`tf_slim.ops` is
# TensorFlow's `ops`, `tf_slim.layers` is `tf_slim.layers.layers`).
tf_slim = importlib.import_module("tf_slim")
importlib.import_module("tf_slim.nets")  # `slim.nets`, as contrib.slim had
slim_layers = importlib.import_module("tf_slim.layers")
slim_metrics = importlib.import_module("tf_slim.metrics")
slim_arg_scope = importlib.import_module("tf_slim.ops.arg_scope")
slim_variables = importlib.import_module("tf_slim.ops.variables")
