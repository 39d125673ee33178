"""`tf.contrib.estimator`: TF 1.15's early-stopping hooks and `read_eval_metrics`
(`rebuilt_apis/early_stopping.py`), `InMemoryEvaluatorHook` (earlier TF 1.x had it here;
`rebuilt_apis/in_memory_evaluator.py`), its Estimator wrappers `add_metrics`,
`clip_gradients_by_norm`, `forward_features` (`estimator_extenders.py`), its heads
(`canned/contrib_heads.py`), the logit functions (`canned/logit_fns.py`) and
`replicate_model_fn`/`TowerOptimizer` on one device (`rebuilt_apis/replicate_model_fn.py`;
several devices: the error names MirroredStrategy). Its other names (the RNN,
layer-annotation, boosted-trees and SavedModel estimators, export helpers) are not provided;
the error names the replacement (`REPLACEMENTS`)."""
from tpu_estimator_compat.v1 import _lazy
from tpu_estimator_compat.v1.estimator import experimental

_EXTENDERS = ("add_metrics", "clip_gradients_by_norm", "forward_features")
_REPLICATION = ("replicate_model_fn", "TowerOptimizer")
_HEADS = ("binary_classification_head", "logistic_regression_head", "multi_class_head",
          "multi_head", "multi_label_head", "poisson_regression_head", "regression_head")
_SERVED = (experimental.EARLY_STOPPING + ("read_eval_metrics",) + _EXTENDERS + _HEADS
           + experimental.LOGIT_FNS + ("InMemoryEvaluatorHook",) + _REPLICATION)

_EXPORT = ("Estimator.export_saved_model (the serving graph; TRAIN/EVAL graphs are not "
           "exported)")
REPLACEMENTS = {
    **dict.fromkeys(("RNNClassifier", "RNNEstimator"),
                    "a model_fn of your own: tf.keras.layers.RNN (or tf.nn.dynamic_rnn) over "
                    "the sequence features, its last output through a tf.contrib.estimator "
                    "head (head.create_estimator_spec)"),
    "DNNClassifierWithLayerAnnotations": "tf.estimator.DNNClassifier (the same model and "
                                         "variables, without the layer-annotation "
                                         "collections in the exported graph)",
    "DNNRegressorWithLayerAnnotations": "tf.estimator.DNNRegressor (the same model and "
                                        "variables, without the layer-annotation collections "
                                        "in the exported graph)",
    **dict.fromkeys(("boosted_trees_classifier_train_in_memory",
                     "boosted_trees_regressor_train_in_memory"),
                    "TensorFlow Decision Forests, the successor of TF 1.x's boosted trees "
                    "(tfdf.keras.GradientBoostedTreesModel)"),
    "SavedModelEstimator": "tf.saved_model.load on the exported SavedModel to predict",
    **dict.fromkeys(("export_all_saved_models", "export_saved_model_for_mode"), _EXPORT),
    **dict.fromkeys(("build_raw_supervised_input_receiver_fn",
                     "build_supervised_input_receiver_fn_from_input_fn"),
                    "tf.estimator.export.build_raw_serving_input_receiver_fn (serving only)"),
}


def _missing_hint(name):
    hint = f". tpu_estimator_compat provides tf.contrib.estimator.{{{', '.join(_SERVED)}}} only."
    if name in REPLACEMENTS:
        hint += f" Instead of {name}, use {REPLACEMENTS[name]}."
    return hint


_lazy.install(
    globals(),
    names={**{name: f"tpu_estimator_compat.rebuilt_apis.early_stopping:{name}"
              for name in experimental.EARLY_STOPPING + ("read_eval_metrics",)},
           **{name: f"tpu_estimator_compat.estimator_extenders:{name}" for name in _EXTENDERS},
           **{name: f"tpu_estimator_compat.canned.contrib_heads:{name}" for name in _HEADS},
           **{name: f"tpu_estimator_compat.canned.logit_fns:{name}"
              for name in experimental.LOGIT_FNS},
           **{name: f"tpu_estimator_compat.rebuilt_apis.replicate_model_fn:{name}"
              for name in _REPLICATION},
           "InMemoryEvaluatorHook":
               "tpu_estimator_compat.rebuilt_apis.in_memory_evaluator:InMemoryEvaluatorHook"},
    missing_hint=_missing_hint,
)
