"""The deep TF1 module paths served under `tpu_estimator_compat.v1` (`_finder` imports them).

TF 1.x programs import modules, not only names: `from tensorflow.python.estimator import
estimator`, `from tensorflow.contrib.tpu.python.tpu import tpu_config`,
`from tensorflow_estimator.python.estimator.tpu import tpu_estimator`. Each such path,
relative to `tensorflow` (and `tensorflow_estimator`, whose layout under `python.estimator`
is the same), is a key of `MODULES`:

- a `Virtual` entry is a module made here, serving `names` (`_lazy` specs; they win over
  the entries below it, as TF 1.x's star imports of a package's submodules did), its
  entries below it and, for any other name or submodule, those of its `fallback` module;
- a string entry is a `_lazy.resolve` spec: that very module is served (an alias).

No entry lies below a path that is an alias (importing it would add an attribute to the
aliased module). Paths not listed are served generically by `_finder`: a submodule of an alias or of a
`Virtual`'s fallback is that module's submodule (`python.ops.math_ops` is TensorFlow's
`tensorflow.python.ops.math_ops`, below the `python.ops` entry), and any dotted path whose attributes lead to a module is that
module (`compat.v1.train`).
"""
import dataclasses

_PKG = "tpu_estimator_compat"
_SLIM = f"{_PKG}.rebuilt_apis.tf_slim"


@dataclasses.dataclass(frozen=True)
class Virtual:
    """A module made by `_finder`: `names` first, then the attributes and submodules of the
    `fallback` module (a `_lazy.resolve` spec of a module, or None)."""
    names: dict = dataclasses.field(default_factory=dict)
    fallback: str | None = None


def _from(module, *names):
    return {name: f"{_PKG}.{module}:{name}" for name in names}


_EMBEDDING_PARAMETERS = _from(
    "api.embedding_spec", "AdagradParameters", "AdamParameters", "FtrlParameters",
    "StochasticGradientDescentParameters")
_EMBEDDING_SPEC = _from("api.embedding_spec", "EmbeddingConfigSpec")
_TPU_ESTIMATOR = _from("estimator", "TPUEstimator", "export_estimator_savedmodel") | _from(
    "api.spec", "TPUEstimatorSpec") | _EMBEDDING_SPEC | _from(
    "api.embedding_spec", "AdagradParameters", "AdamParameters",
    "StochasticGradientDescentParameters")
_TPU_CONFIG = _from("config.run_config", "RunConfig") | _from(
    "config.tpu_config", "TPUConfig", "InputPipelineConfig")
_TPU_CONTEXT = _from("api.tpu_context", "TPUContext")
_TPU_OPTIMIZER = _from("api.optimizers", "CrossShardOptimizer")
_ESTIMATOR = _from("estimator", "Estimator") | _from("state.warm_start", "WarmStartSettings") | {
    "VocabInfo": "tensorflow:compat.v1.train.VocabInfo",
    "_load_global_step_from_checkpoint_dir":
        f"{_PKG}.rebuilt_apis.estimator_private:load_global_step_from_checkpoint_dir"}
_EVALUATION = {"checkpoints_iterator": "tensorflow:compat.v1.train.checkpoints_iterator",
               "wait_for_new_checkpoint":
                   "tensorflow.python.training.checkpoint_utils:wait_for_new_checkpoint"}
_TRAIN_OP_BUILDERS = {name: f"{_SLIM}:tf_slim.training.{name}" for name in (
    "create_train_op", "add_gradients_summaries", "clip_gradient_norms", "clip_gradient_norms_fn",
    "multiply_gradients")}
_ASYNC_CHECKPOINT = _from("rebuilt_apis.async_checkpoint", "AsyncCheckpointSaverHook")
_EXPORT = f"{_PKG}.v1.estimator.export"
_PREDICTOR = "rebuilt_apis.contrib_predictor"
_ARG_SCOPE_ALL = ("arg_scope", "add_arg_scope", "current_arg_scope", "has_arg_scope",
                  "arg_scoped_arguments", "arg_scope_func_key")

MODULES = {
    # tensorflow.core (protocol buffers), tensorflow.compiler (XLA) and tensorflow.python:
    # TensorFlow's own modules, but for the estimator and TPU ones, and TF1 names that
    # TensorFlow moved to other modules.
    "core": "tensorflow.core",
    "compiler": "tensorflow.compiler",
    "python": Virtual(fallback="tensorflow.python"),
    "python.framework": Virtual(fallback="tensorflow.python.framework"),
    "python.framework.ops": Virtual(
        {"Tensor": "tensorflow.python.framework.tensor:Tensor",
         "IndexedSlices": "tensorflow.python.framework.indexed_slices:IndexedSlices"},
        fallback="tensorflow.python.framework.ops"),
    "python.ops": Virtual(fallback="tensorflow.python.ops"),
    "python.eager": Virtual(fallback="tensorflow.python.eager"),
    "python.eager.profiler": f"{_PKG}.rebuilt_apis.eager_profiler",  # TF 1.15's, gone in TF 2
    "python.ops.array_ops": Virtual(
        {name: f"tensorflow.python.ops.array_ops_stack:{name}" for name in ("stack", "unstack")},
        fallback="tensorflow.python.ops.array_ops"),
    "python.ops.standard_ops": Virtual(
        {"cond": "tensorflow.python.ops.cond:cond",
         "while_loop": "tensorflow.python.ops.while_loop:while_loop",
         "trace": "tensorflow.python.ops.math_ops:trace"},
        fallback="tensorflow.python.ops.standard_ops"),
    # TF 1.x's forwarding alias of VariableV1, which streaming metrics call.
    "python.ops.variable_scope": Virtual({"variable": "tensorflow:compat.v1.Variable"},
                                         fallback="tensorflow.python.ops.variable_scope"),
    "python.ops.parallel_for": Virtual(
        {name: f"tensorflow.python.ops.parallel_for.{module}:{name}" for module, name in (
            ("control_flow_ops", "pfor"), ("control_flow_ops", "for_loop"),
            ("gradients", "jacobian"), ("gradients", "batch_jacobian"))},
        fallback="tensorflow.python.ops.parallel_for"),
    "python.ops.control_flow_ops": Virtual(
        {"cond": "tensorflow.python.ops.cond:cond",
         "while_loop": "tensorflow.python.ops.while_loop:while_loop",
         "case": "tensorflow.python.ops.control_flow_case:case"},
        fallback="tensorflow.python.ops.control_flow_ops"),
    "python.estimator": Virtual(fallback=f"{_PKG}.v1.estimator"),
    "python.estimator.estimator": Virtual(_ESTIMATOR),
    "python.estimator.estimator_lib": f"{_PKG}.v1.estimator",
    "python.estimator.early_stopping": Virtual(_from(
        "rebuilt_apis.early_stopping", "make_early_stopping_hook", "read_eval_metrics",
        "stop_if_higher_hook", "stop_if_lower_hook", "stop_if_no_decrease_hook",
        "stop_if_no_increase_hook")),
    "python.estimator.extenders": Virtual(_from("estimator_extenders", "add_metrics")),
    "python.estimator.inputs": Virtual(fallback=f"{_PKG}.v1.estimator.inputs"),
    "python.estimator.inputs.inputs": Virtual(fallback=f"{_PKG}.v1.estimator.inputs"),
    "python.estimator.inputs.numpy_io": Virtual(_from("rebuilt_apis.numpy_inputs",
                                                      "numpy_input_fn")),
    "python.estimator.inputs.pandas_io": Virtual(_from("rebuilt_apis.numpy_inputs",
                                                       "pandas_input_fn")),
    "python.estimator.model_fn": Virtual(_from("api.spec", "EstimatorSpec", "ModeKeys")),
    "python.estimator.mode_keys": Virtual(_from("api.spec", "ModeKeys")),
    "python.estimator.run_config": Virtual(_from("config.run_config", "RunConfig")),
    "python.estimator.training": Virtual(
        _from("train_and_evaluate_tasks", "TrainSpec", "EvalSpec", "train_and_evaluate")),
    "python.estimator.warm_starting_util": Virtual(_from("state.warm_start", "WarmStartSettings") | {
        "VocabInfo": "tensorflow:compat.v1.train.VocabInfo"}),
    "python.estimator.canned": Virtual(),
    "python.estimator.canned.baseline": Virtual(_from(
        "canned.baseline", "BaselineClassifier", "BaselineRegressor", "BaselineEstimator")),
    "python.estimator.canned.dnn": Virtual(_from(
        "canned.dnn", "DNNClassifier", "DNNRegressor", "DNNEstimator")),
    "python.estimator.canned.dnn_linear_combined": Virtual(_from(
        "canned.dnn_linear_combined", "DNNLinearCombinedClassifier",
        "DNNLinearCombinedRegressor", "DNNLinearCombinedEstimator")),
    "python.estimator.canned.linear": Virtual(_from(
        "canned.linear", "LinearClassifier", "LinearRegressor", "LinearEstimator")),
    "python.estimator.canned.metric_keys": Virtual(_from("canned.keys", "MetricKeys")),
    "python.estimator.canned.optimizers": Virtual(_from(
        "canned.optimizers", "get_optimizer_instance")),
    "python.estimator.canned.parsing_utils": Virtual(_from(
        "canned.parsing", "classifier_parse_example_spec", "regressor_parse_example_spec")),
    "python.estimator.canned.prediction_keys": Virtual(_from("canned.keys", "PredictionKeys")),
    "python.estimator.exporter": Virtual(_from("best_exporter", "BestExporter") | _from(
        "train_and_evaluate_tasks", "Exporter", "FinalExporter", "LatestExporter")),
    "python.estimator.export": Virtual(fallback=_EXPORT),
    "python.estimator.export.export": Virtual(fallback=_EXPORT),
    "python.estimator.export.export_lib": Virtual(fallback=_EXPORT),
    "python.estimator.export.export_output": Virtual(_from(
        "api.export_outputs", "ExportOutput", "PredictOutput", "ClassificationOutput",
        "RegressionOutput")),
    "python.estimator.tpu": Virtual(fallback=f"{_PKG}.v1.estimator.tpu"),
    "python.estimator.tpu.tpu_estimator": Virtual(_TPU_ESTIMATOR),
    "python.estimator.tpu.tpu_config": Virtual(_TPU_CONFIG),
    "python.estimator.tpu.tpu_context": Virtual(_TPU_CONTEXT),
    "python.estimator.tpu._tpu_estimator_embedding": Virtual(
        _EMBEDDING_SPEC | _EMBEDDING_PARAMETERS),
    "python.tpu": Virtual(fallback="tensorflow.python.tpu"),
    "python.tpu.tpu_estimator": Virtual(_TPU_ESTIMATOR),
    "python.tpu.tpu_config": Virtual(_TPU_CONFIG),
    "python.tpu.tpu_context": Virtual(_TPU_CONTEXT),
    "python.tpu.tpu_optimizer": Virtual(_TPU_OPTIMIZER,
                                        fallback="tensorflow.python.tpu.tpu_optimizer"),
    "python.tpu.async_checkpoint": Virtual(_ASYNC_CHECKPOINT),
    "python.tpu.tpu_embedding": Virtual(_EMBEDDING_PARAMETERS),
    # tf.tpu.experimental: TensorFlow's (embedding_column, shared_embedding_columns...),
    # initialising the TPU system via our resolver too, with TPU embeddings' parameters.
    "tpu.experimental": Virtual(
        _from("engine.tpu_system", "initialize_tpu_system", "shutdown_tpu_system")
        | _EMBEDDING_PARAMETERS,
        fallback="tensorflow:compat.v1.tpu.experimental"),
    # tf.keras: tf_keras' v1 API (Keras 2), `Input(tensor=)` as TF1's graph-mode Keras.
    "keras": Virtual(_from("tf1_behaviour.keras_input", "Input"),
                     fallback="tf_keras.api._v1.keras"),
    "keras.layers": Virtual(_from("tf1_behaviour.keras_input", "Input"),
                            fallback="tf_keras.api._v1.keras.layers"),
    # tf.keras.estimator: model_to_estimator on this package's Estimator (tf_keras' own
    # needs tensorflow_estimator, which TensorFlow >= 2.16 lacks).
    "keras.estimator": Virtual({
        "model_to_estimator": f"{_PKG}.keras_estimator:tf1_model_to_estimator"}),
    # tf.nn: TensorFlow's, with the TF1 RNN cells, which TensorFlow 2.21 serves only with Keras 2.
    "nn": Virtual({"rnn_cell": "tf_keras.api._v1.keras.__internal__.legacy.rnn_cell"},
                  fallback="tensorflow:compat.v1.nn"),
    # tf.estimator.tpu.experimental and tf.contrib.tpu.experimental (the latter with
    # tf.tpu.experimental's names too).
    "estimator.tpu.experimental": Virtual(_EMBEDDING_SPEC),
    "contrib.tpu.experimental": Virtual(_EMBEDDING_SPEC, fallback=f"{_PKG}.v1.tpu.experimental"),
    # tf.config: TensorFlow's, connecting to a cluster from graph mode too.
    "config": Virtual(_from("engine.tpu_system", "experimental_connect_to_cluster"),
                      fallback="tensorflow:compat.v1.config"),
    # tf.summary: TensorFlow's, with a FileWriter (and its cache) that eager code can open.
    "summary": Virtual(_from("rebuilt_apis.summary_file_writer", "FileWriter", "FileWriterCache"),
                       fallback="tensorflow:compat.v1.summary"),
    # tensorflow.contrib.tpu.python.{tpu,ops}
    "contrib.estimator.python": Virtual(),
    "contrib.estimator.python.estimator": Virtual(),
    "contrib.estimator.python.estimator.early_stopping": Virtual(
        fallback="tpu_estimator_compat.v1.python.estimator.early_stopping"),
    "contrib.estimator.python.estimator.extenders": Virtual(_from(
        "estimator_extenders", "add_metrics", "clip_gradients_by_norm", "forward_features")),
    "contrib.estimator.python.estimator.head": Virtual(_from(
        "canned.contrib_heads", "binary_classification_head", "logistic_regression_head",
        "multi_class_head", "multi_label_head", "poisson_regression_head", "regression_head")),
    "contrib.estimator.python.estimator.multi_head": Virtual(_from(
        "canned.contrib_heads", "multi_head")),
    "contrib.estimator.python.estimator.replicate_model_fn": Virtual(_from(
        "rebuilt_apis.replicate_model_fn", "replicate_model_fn", "TowerOptimizer")),
    "contrib.estimator.python.estimator.logit_fns": Virtual(_from(
        "canned.logit_fns", "call_logit_fn", "dnn_logit_fn_builder", "linear_logit_fn_builder")),
    "contrib.tpu.python": Virtual(),
    "contrib.tpu.python.tpu": Virtual(fallback="tensorflow.python.tpu"),
    "contrib.tpu.python.tpu.tpu_estimator": Virtual(_TPU_ESTIMATOR),
    "contrib.tpu.python.tpu.tpu_config": Virtual(_TPU_CONFIG),
    "contrib.tpu.python.tpu.tpu_context": Virtual(_TPU_CONTEXT),
    "contrib.tpu.python.tpu.tpu_optimizer": Virtual(
        _TPU_OPTIMIZER, fallback="tensorflow.python.tpu.tpu_optimizer"),
    "contrib.tpu.python.tpu.async_checkpoint": Virtual(_ASYNC_CHECKPOINT),
    "contrib.tpu.python.tpu._tpu_estimator_embedding": Virtual(
        _EMBEDDING_SPEC | _EMBEDDING_PARAMETERS),
    "contrib.tpu.python.tpu.tpu_embedding": Virtual(_EMBEDDING_PARAMETERS),
    "contrib.tpu.python.tpu.tpu_function": "tensorflow.python.tpu.tpu_function",
    "contrib.tpu.python.tpu.bfloat16": "tensorflow.python.tpu.bfloat16",
    "contrib.tpu.python.tpu.tpu": "tensorflow.python.tpu.tpu",
    "contrib.tpu.python.tpu.tpu_feed": "tensorflow.python.tpu.tpu_feed",
    "contrib.tpu.python.tpu.training_loop": "tensorflow.python.tpu.training_loop",
    "contrib.tpu.python.ops": Virtual(),
    "contrib.tpu.python.ops.tpu_ops": Virtual(
        _from("api.optimizers", "cross_replica_sum"), fallback="tensorflow.python.tpu.ops.tpu_ops"),
    # tensorflow.contrib.training.python.training.{evaluation,hparam}
    "contrib.training.python": Virtual(),
    "contrib.training.python.training": Virtual(),
    "contrib.training.python.training.evaluation": Virtual(_EVALUATION),
    "contrib.training.python.training.training": Virtual(_TRAIN_OP_BUILDERS),
    "contrib.training.python.training.hparam": Virtual(
        _from("rebuilt_apis.hparam", "HParams")),
    # TF 1.x's `tf.contrib.summary` was this module (contrib's __init__ imported it as
    # `summary`), where TF 1.15's inventory lists its names.
    "contrib.summary.summary": f"{_PKG}.rebuilt_apis.contrib_summary",
    # tensorflow.contrib.predictor's modules (rebuilt_apis/contrib_predictor.py)
    "contrib.predictor.predictor": Virtual(_from(_PREDICTOR, "Predictor")),
    "contrib.predictor.saved_model_predictor": Virtual(_from(
        _PREDICTOR, "SavedModelPredictor", "DEFAULT_TAGS")),
    "contrib.predictor.core_estimator_predictor": Virtual(_from(
        _PREDICTOR, "CoreEstimatorPredictor")),
    "contrib.predictor.predictor_factories": Virtual(_from(
        _PREDICTOR, "from_contrib_estimator", "from_estimator", "from_saved_model")),
    # tf.contrib.learn.datasets.base (its downloader only)
    "contrib.learn.datasets": Virtual(),
    "contrib.learn.datasets.base": Virtual(_from("rebuilt_apis.learn_datasets", "maybe_download")),
    # tensorflow.contrib.slim and contrib.{slim,framework,layers}.python...: tf-slim's modules.
    # (`contrib.slim` is made here, not an alias of tf_slim, so that nothing is added to
    # tf_slim when `contrib.slim.python` is imported: no entry may lie below an alias.)
    "contrib.slim": Virtual(fallback=f"{_SLIM}:tf_slim"),
    "contrib.slim.python": Virtual(),
    "contrib.slim.python.slim": f"{_SLIM}:tf_slim",
    "contrib.framework.python": Virtual(),
    # TF 1.x's package star-imports its submodules: `ops.arg_scope` is the function (the
    # module only by its import path), `ops.variables` the module (`_finder`).
    "contrib.framework.python.ops": Virtual(
        {name: f"{_SLIM}:slim_arg_scope.{name}" for name in _ARG_SCOPE_ALL},
        fallback=f"{_PKG}.v1.contrib.framework"),
    "contrib.framework.python.ops.arg_scope": f"{_SLIM}:slim_arg_scope",
    "contrib.framework.python.ops.variables": f"{_SLIM}:slim_variables",
    "contrib.crf.python": Virtual(),
    "contrib.crf.python.ops": Virtual(),
    "contrib.crf.python.ops.crf": f"{_PKG}.rebuilt_apis.contrib_crf",
    # TF 1.x's implementation module of tf.contrib.lookup: the same names, and the base class
    # of its HashTable.
    "contrib.lookup.lookup_ops": Virtual(
        {"InitializableLookupTableBaseV1":
             "tensorflow.python.ops.lookup_ops:InitializableLookupTableBaseV1"},
        fallback=f"{_PKG}.v1.contrib.lookup"),
    "contrib.layers.python": Virtual(),
    "contrib.layers.python.layers": f"{_SLIM}:slim_layers",
}

EVALUATION_NAMES = _EVALUATION
TRAIN_OP_BUILDERS = _TRAIN_OP_BUILDERS


def children(path):
    """`{name: relative path}` of the entries directly below `path` ('' for the root)."""
    return {key.rpartition(".")[2]: key for key in MODULES if key.rpartition(".")[0] == path}

ASYNC_CHECKPOINT_NAMES = _ASYNC_CHECKPOINT
