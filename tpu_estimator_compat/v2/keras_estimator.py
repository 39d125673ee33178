"""`tf.keras.estimator` for TF 2.x-era code: TF 2.x's `model_to_estimator` on this package's
Estimator (`keras_estimator.py`)."""
from tpu_estimator_compat.v1 import _lazy

_lazy.install(
    globals(),
    names={"model_to_estimator": "tpu_estimator_compat.keras_estimator:model_to_estimator"},
)
