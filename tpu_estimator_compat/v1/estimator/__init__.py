"""`tf.estimator`: Estimator and TPUEstimator support from this package, hooks from
`tf.compat.v1.train`, the exporters of `EvalSpec` (`Exporter`, `LatestExporter`,
`FinalExporter`, `BestExporter`), `add_metrics`, the canned DNN and linear estimators
(`canned/`), and the `export`, `tpu`, `experimental` (early stopping) and `inputs`
(`numpy_input_fn`, `pandas_input_fn`) submodules. The `*Estimator` classes (`DNNEstimator`,
`LinearEstimator`, `DNNLinearCombinedEstimator`, `BaselineEstimator`) take a TF 1.x head such
as `tf.contrib.estimator`'s; the v2-style heads (`Head`, `BinaryClassHead`, ... `MultiHead`,
`canned/v2_heads.py`) serve a model_fn of one's own.

The BoostedTrees estimators are not provided (`canned/excluded.py` says why; the error names
the replacement).
"""
from tpu_estimator_compat.canned import excluded
from tpu_estimator_compat.v1 import _lazy

_HOOKS = (
    "CheckpointSaverHook", "CheckpointSaverListener", "FeedFnHook", "FinalOpsHook",
    "GlobalStepWaiterHook", "LoggingTensorHook", "NanLossDuringTrainingError",
    "NanTensorHook", "ProfilerHook", "SecondOrStepTimer", "SessionRunArgs",
    "SessionRunContext", "SessionRunHook", "SessionRunValues", "StepCounterHook",
    "StopAtStepHook", "SummarySaverHook", "VocabInfo",
)

NAMES = {
    "Estimator": "tpu_estimator_compat.estimator:Estimator",
    "EstimatorSpec": "tpu_estimator_compat.api.spec:EstimatorSpec",
    "ModeKeys": "tpu_estimator_compat.api.spec:ModeKeys",
    "RunConfig": "tpu_estimator_compat.config.run_config:RunConfig",
    "train_and_evaluate": "tpu_estimator_compat.train_and_evaluate_tasks:train_and_evaluate",
    "TrainSpec": "tpu_estimator_compat.train_and_evaluate_tasks:TrainSpec",
    "EvalSpec": "tpu_estimator_compat.train_and_evaluate_tasks:EvalSpec",
    **{name: f"tpu_estimator_compat.train_and_evaluate_tasks:{name}"
       for name in ("Exporter", "FinalExporter", "LatestExporter")},
    **{name: f"tpu_estimator_compat.canned.dnn:{name}"
       for name in ("DNNClassifier", "DNNRegressor", "DNNEstimator")},
    **{name: f"tpu_estimator_compat.canned.linear:{name}"
       for name in ("LinearClassifier", "LinearRegressor", "LinearEstimator")},
    **{name: f"tpu_estimator_compat.canned.dnn_linear_combined:{name}"
       for name in ("DNNLinearCombinedClassifier", "DNNLinearCombinedRegressor",
                    "DNNLinearCombinedEstimator")},
    **{name: f"tpu_estimator_compat.canned.baseline:{name}"
       for name in ("BaselineClassifier", "BaselineRegressor", "BaselineEstimator")},
    **{name: f"tpu_estimator_compat.canned.parsing:{name}"
       for name in ("classifier_parse_example_spec", "regressor_parse_example_spec")},
    **{name: f"tpu_estimator_compat.canned.v2_heads:{name}"
       for name in ("BinaryClassHead", "MultiClassHead", "MultiLabelHead", "RegressionHead",
                    "PoissonRegressionHead", "LogisticRegressionHead")},
    "Head": "tpu_estimator_compat.canned.v2_head_base:Head",
    "MultiHead": "tpu_estimator_compat.canned.v2_multi_head:MultiHead",
    "BestExporter": "tpu_estimator_compat.best_exporter:BestExporter",
    "WarmStartSettings": "tpu_estimator_compat.state.warm_start:WarmStartSettings",
    "add_metrics": "tpu_estimator_compat.estimator_extenders:add_metrics",
    "export": f"{__name__}.export",
    "experimental": f"{__name__}.experimental",
    "inputs": f"{__name__}.inputs",
    "tpu": f"{__name__}.tpu",
    **{name: f"tensorflow:compat.v1.train.{name}" for name in _HOOKS},
}

_lazy.install(
    globals(), names=NAMES,
    missing_hint=excluded.missing_hint,
)
