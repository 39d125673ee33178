"""`tf.estimator.export` of the original: serving input receivers and export outputs.

    from tpu_estimator_compat import export
    export.ServingInputReceiver(features, receiver_tensors)
    export.PredictOutput({"classes": classes})

The same names as `tf.estimator.export` (TF 1.x / tensorflow_estimator); the SavedModel
writer itself is `saved_model.py`, its SignatureDefs `signatures.py`.
"""
from tpu_estimator_compat.api.export_outputs import ClassificationOutput
from tpu_estimator_compat.api.export_outputs import EvalOutput
from tpu_estimator_compat.api.export_outputs import ExportOutput
from tpu_estimator_compat.api.export_outputs import PredictOutput
from tpu_estimator_compat.api.export_outputs import RegressionOutput
from tpu_estimator_compat.export.receivers import ServingInputReceiver
from tpu_estimator_compat.export.receivers import TensorServingInputReceiver
from tpu_estimator_compat.export.receivers import build_parsing_serving_input_receiver_fn
from tpu_estimator_compat.export.receivers import build_raw_serving_input_receiver_fn

__all__ = [
    "ClassificationOutput", "EvalOutput", "ExportOutput", "PredictOutput", "RegressionOutput",
    "ServingInputReceiver", "TensorServingInputReceiver",
    "build_parsing_serving_input_receiver_fn", "build_raw_serving_input_receiver_fn",
]
