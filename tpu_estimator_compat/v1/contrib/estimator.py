"""`tf.contrib.estimator`: TF 1.15's early-stopping hooks and `read_eval_metrics`
(`rebuilt_apis/early_stopping.py`) and its Estimator wrappers `add_metrics`,
`clip_gradients_by_norm`, `forward_features` (`estimator_extenders.py`). Its other names
(heads, canned estimators, `replicate_model_fn`...) are not provided; the error names the
replacement (`REPLACEMENTS`)."""
from tpu_estimator_compat.v1 import _lazy
from tpu_estimator_compat.v1.estimator import experimental

_EXTENDERS = ("add_metrics", "clip_gradients_by_norm", "forward_features")

_DISTRIBUTE = "RunConfig(train_distribute=tf.distribute.MirroredStrategy())"
_HEADS = ("a model_fn that computes its loss, predictions and metrics itself (this package "
          "serves no heads or canned estimators)")
_EXPORT = ("Estimator.export_saved_model (the serving graph; TRAIN/EVAL graphs are not "
           "exported)")
REPLACEMENTS = {
    "replicate_model_fn": _DISTRIBUTE,
    "TowerOptimizer": f"the plain optimizer with {_DISTRIBUTE}",
    **dict.fromkeys(("binary_classification_head", "logistic_regression_head",
                     "multi_class_head", "multi_head", "multi_label_head",
                     "poisson_regression_head", "regression_head", "call_logit_fn",
                     "dnn_logit_fn_builder", "linear_logit_fn_builder", "RNNClassifier",
                     "RNNEstimator", "DNNClassifierWithLayerAnnotations",
                     "DNNRegressorWithLayerAnnotations",
                     "boosted_trees_classifier_train_in_memory",
                     "boosted_trees_regressor_train_in_memory"), _HEADS),
    "SavedModelEstimator": "tf.saved_model.load on the exported SavedModel to predict",
    **dict.fromkeys(("export_all_saved_models", "export_saved_model_for_mode"), _EXPORT),
    **dict.fromkeys(("build_raw_supervised_input_receiver_fn",
                     "build_supervised_input_receiver_fn_from_input_fn"),
                    "tf.estimator.export.build_raw_serving_input_receiver_fn (serving only)"),
    "InMemoryEvaluatorHook": "tf.estimator.train_and_evaluate with an EvalSpec (it evaluates "
                             "each new checkpoint)",
}


def _missing_hint(name):
    served = experimental.EARLY_STOPPING + ("read_eval_metrics",) + _EXTENDERS
    hint = f". tpu_estimator_compat provides tf.contrib.estimator.{{{', '.join(served)}}} only."
    if name in REPLACEMENTS:
        hint += f" Instead of {name}, use {REPLACEMENTS[name]}."
    return hint


_lazy.install(
    globals(),
    names={**{name: f"tpu_estimator_compat.rebuilt_apis.early_stopping:{name}"
              for name in experimental.EARLY_STOPPING + ("read_eval_metrics",)},
           **{name: f"tpu_estimator_compat.estimator_extenders:{name}" for name in _EXTENDERS}},
    missing_hint=_missing_hint,
)
