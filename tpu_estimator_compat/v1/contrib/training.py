"""`tf.contrib.training`: checkpoint polling (`checkpoints_iterator`)."""
from tpu_estimator_compat.v1 import _lazy

_lazy.install(
    globals(),
    names={"checkpoints_iterator": "tensorflow:compat.v1.train.checkpoints_iterator"},
    missing_hint=". Only checkpoints_iterator is provided (HParams is not).",
)
