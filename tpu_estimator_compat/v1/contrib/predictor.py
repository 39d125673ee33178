"""`tf.contrib.predictor`: `from_saved_model`, `from_estimator` and `from_contrib_estimator`
(`rebuilt_apis/contrib_predictor.py`), and TF 1.15's modules of its classes (`_paths`)."""
from tpu_estimator_compat.v1 import _lazy

_lazy.install(
    globals(),
    names={**{name: f"tpu_estimator_compat.rebuilt_apis.contrib_predictor:{name}" for name in (
        "from_saved_model", "from_estimator", "from_contrib_estimator")},
           **{module: f"{__name__}.{module}" for module in (
               "predictor", "saved_model_predictor", "core_estimator_predictor",
               "predictor_factories")}},
)
