"""`tf.keras` for TF 2.x-era code: Keras 2 (tf_keras, TensorFlow 2.15's `tf.keras`), with
`estimator.model_to_estimator` on this package's Estimator (tf_keras' own needs
tensorflow_estimator, which TensorFlow >= 2.16 lacks). Every other name is tf_keras'."""
from tpu_estimator_compat.v1 import _lazy

_lazy.install(
    globals(),
    names={"estimator": "tpu_estimator_compat.v2.keras_estimator"},
    fallback="tf_keras",
)
