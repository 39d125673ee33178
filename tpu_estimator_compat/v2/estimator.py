"""`tf.estimator` for TF 2.x-era code: this package's estimator API with TensorFlow 2's
canned estimators.

TensorFlow 2's `tf.estimator.DNNClassifier` (and the other canned estimators) were the V2
classes: legacy Keras optimizers, v2 heads (the loss averaged over the batch), Keras-layer
models (`canned/v2_estimators.py`). TF 1.x's (v1 optimizers, the loss summed) stay
`tf.compat.v1.estimator.DNNClassifier`. TensorFlow 2's `DNNEstimator`, `LinearEstimator`,
`DNNLinearCombinedEstimator` and `BaselineEstimator` take the v2-style heads
(`tf.estimator.MultiLabelHead`...).
"""
from tpu_estimator_compat.canned import excluded as _excluded
from tpu_estimator_compat.v1 import _lazy
from tpu_estimator_compat.v1 import estimator as _v1_estimator

_MODELS = ("DNN", "Linear", "DNNLinearCombined", "Baseline")
CANNED = tuple(f"{model}{kind}" for model in _MODELS
               for kind in ("Classifier", "Regressor", "Estimator"))

_lazy.install(
    globals(),
    names={**{name: f"{_v1_estimator.__name__}:{name}" for name in _v1_estimator.NAMES},
           **{name: f"tpu_estimator_compat.canned.v2_estimators:{name}" for name in CANNED}},
    missing_hint=_excluded.missing_hint,
)
