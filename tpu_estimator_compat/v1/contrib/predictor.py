"""`tf.contrib.predictor`: `from_saved_model`, `from_estimator` and `from_contrib_estimator`
(`rebuilt_apis/contrib_predictor.py`)."""
from tpu_estimator_compat.v1 import _lazy

_lazy.install(
    globals(),
    names={name: f"tpu_estimator_compat.rebuilt_apis.contrib_predictor:{name}" for name in (
        "from_saved_model", "from_estimator", "from_contrib_estimator")},
)
