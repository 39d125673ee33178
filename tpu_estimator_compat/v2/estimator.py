"""`tf.estimator` for TF 2.x-era code: this package's estimator API, except the canned
estimators.

TensorFlow 2's `tf.estimator.DNNClassifier` (and the other canned estimators) were the V2
classes: Keras optimizers and layers, the loss averaged over the batch. This package has TF
1.x's (`tf.compat.v1.estimator.DNNClassifier`: v1 optimizers, the loss summed), which would
train TF2 code to other numbers, so here their names raise an error that says so. The same
holds for TensorFlow 2's `DNNEstimator`, `LinearEstimator`, `DNNLinearCombinedEstimator` and
`BaselineEstimator`, which took the v2-style heads (`tf.estimator.MultiLabelHead`...): TF 1.x's
take TF 1.x's heads (`tf.compat.v1.estimator.DNNEstimator(head=...)` with
`tf.contrib.estimator`'s heads, through `tpu_estimator_compat.v1`).
"""
from tpu_estimator_compat.v1 import _lazy
from tpu_estimator_compat.v1 import estimator as _v1_estimator

_MODELS = ("DNN", "Linear", "DNNLinearCombined", "Baseline")
CANNED = tuple(f"{model}{kind}" for model in _MODELS for kind in ("Classifier", "Regressor"))
HEAD_ESTIMATORS = tuple(f"{model}Estimator" for model in _MODELS)


def _missing_hint(name):
    if name in CANNED:
        return (f": TensorFlow 2's tf.estimator.{name} (Keras optimizers, the loss averaged over "
                "the batch) is not provided. TF 1.x's is: tf.compat.v1.estimator."
                f"{name} (v1 optimizers, the loss summed over the batch).")
    if name in HEAD_ESTIMATORS:
        return (f": TensorFlow 2's tf.estimator.{name} (v2-style heads such as "
                "tf.estimator.MultiLabelHead, Keras optimizers) is not provided. TF 1.x's is: "
                f"tf.compat.v1.estimator.{name}(head=...) with a TF 1.x head "
                "(tpu_estimator_compat.v1's tf.contrib.estimator.multi_label_head, "
                "regression_head, ...) and v1 optimizers.")
    return ""


_lazy.install(
    globals(),
    names={name: f"{_v1_estimator.__name__}:{name}" for name in _v1_estimator.NAMES
           if name not in CANNED + HEAD_ESTIMATORS},
    missing_hint=_missing_hint,
)
