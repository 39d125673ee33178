"""`tf.estimator.export`: serving input receivers and export outputs."""
from tpu_estimator_compat.v1 import _lazy

_RECEIVERS = ("ServingInputReceiver", "TensorServingInputReceiver",
              "build_parsing_serving_input_receiver_fn", "build_raw_serving_input_receiver_fn")
_OUTPUTS = ("ExportOutput", "PredictOutput", "ClassificationOutput", "RegressionOutput")

_lazy.install(
    globals(),
    names={**{name: f"tpu_estimator_compat.export.receivers:{name}" for name in _RECEIVERS},
           **{name: f"tpu_estimator_compat.api.export_outputs:{name}" for name in _OUTPUTS}},
)
