"""`tf.layers`: tf_keras's TF1 legacy layers, with a `BatchNormalization` whose TF1 subclasses
may override `_moments` with TF 1.x's signature (`rebuilt_apis/tf1_batch_norm.py`)."""
from tpu_estimator_compat.v1 import _lazy

_lazy.install(
    globals(),
    names={"BatchNormalization":
           "tpu_estimator_compat.rebuilt_apis.tf1_batch_norm:BatchNormalization"},
    fallback="tf_keras.api._v1.keras.__internal__.legacy.layers",
)
