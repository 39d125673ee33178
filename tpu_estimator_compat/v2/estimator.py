"""`tf.estimator` for TF 2.x-era code: this package's estimator API, except the canned
estimators.

TensorFlow 2's `tf.estimator.DNNClassifier` (and the other canned estimators) were the V2
classes: Keras optimizers and layers, the loss averaged over the batch. This package has TF
1.x's (`tf.compat.v1.estimator.DNNClassifier`: v1 optimizers, the loss summed), which would
train TF2 code to other numbers, so here their names raise an error that says so.
"""
from tpu_estimator_compat.v1 import _lazy
from tpu_estimator_compat.v1 import estimator as _v1_estimator

CANNED = tuple(f"{model}{kind}" for model in ("DNN", "Linear", "DNNLinearCombined", "Baseline")
               for kind in ("Classifier", "Regressor"))


def _missing_hint(name):
    if name in CANNED:
        return (f": TensorFlow 2's tf.estimator.{name} (Keras optimizers, the loss averaged over "
                "the batch) is not provided. TF 1.x's is: tf.compat.v1.estimator."
                f"{name} (v1 optimizers, the loss summed over the batch).")
    return ""


_lazy.install(
    globals(),
    names={name: f"{_v1_estimator.__name__}:{name}" for name in _v1_estimator.NAMES
           if name not in CANNED},
    missing_hint=_missing_hint,
)
