"""TensorFlow 2 code around the estimator API: TensorFlow's migration guides (notebooks of
tensorflow/docs, each an Estimator half in `tf.compat.v1` and a Keras half in TF2), run as
the scripts their code cells make, on the in-memory data they define themselves."""
import os

from recipes.program import Program

DOCS = ("tensorflow/docs", "7c3650212740204359d4ceae481abc79345541be", "tensorflow+docs")
GUIDES = "site/en/guide/migrate"
NO_MODEL_DIR = ("its Estimator has no model_dir (a temporary directory per process) and "
                "trains before it evaluates")


def temporary_directory(work):
    """The guides' Estimators write into `tempfile.mkdtemp()` (no model_dir): here."""
    return {"TMPDIR": os.path.join(work, "tmp")}


def trained_to(step):
    """`prepare` for a guide: no arguments; its Estimator's checkpoint at `step` in a
    temporary directory of the run's own."""
    def prepare(work, use_tpu):
        tmp = temporary_directory(work)["TMPDIR"]
        os.makedirs(tmp, exist_ok=True)
        return [], [os.path.join(tmp, "tmp*", "model.ckpt-%d.index" % step)]
    return prepare


def guide(name, exercises, steps, log_expects, eval_only=NO_MODEL_DIR):
    return Program(name, *DOCS, name + ".py", exercises, trained_to(steps), copy_from=GUIDES,
                   notebook=name + ".ipynb", tf2=True, has_use_tpu=False,
                   environ=temporary_directory, log_expects=log_expects,
                   eval_only=eval_only, replica_check="no TPU switch")


NUMBER = r"-?[0-9.]+(e-?[0-9]+)?"
# What the notebook displays of `estimator.evaluate(...)` and Keras' `evaluate(return_dict=True)`.
ESTIMATOR_EVALUATION = r"^Out: \{'loss': (np.float32\()?%s\)?, 'global_step': (np.int64\()?3\)?\}$" % NUMBER
KERAS_EVALUATION = r"^Out: \{'loss': %s\}$" % NUMBER

PROGRAMS = [
    guide("migrating_estimator", "TF2 notebook (migration guide): tf.compat.v1 Estimator "
          "with tf1.layers.Dense, Adagrad, train then evaluate (model_dir=None); then the same "
          "model in tf.keras (fit, evaluate, a custom train_step)", 3,
          (ESTIMATOR_EVALUATION, KERAS_EVALUATION)),
    guide("sessionrunhook_callback", "TF2 notebook (migration guide): a SessionRunHook "
          "subclass timing steps in begin/before_run/after_run around tf1 Estimator training "
          "(300 steps); then a Keras callback", 300,
          (r"^Time: .*, Step #: 290 , Examples per second: ",)),
    guide("mirrored_strategy", "TF2 notebook (migration guide): tf1.distribute."
          "MirroredStrategy as RunConfig's train_distribute/eval_distribute, "
          "tf1.estimator.train_and_evaluate; then Keras under tf.distribute.MirroredStrategy",
          3, (r"^Out: \(\{'loss': (np.float32\()?%s\)?, 'global_step': (np.int64\()?3\)?\}, "
              r"\[\]\)$" % NUMBER,)),  # train_and_evaluate's (evaluation, exports)
    guide("metrics_optimizers", "TF2 notebook (migration guide): tf1.metrics.accuracy in "
          "eval_metric_ops, tf1.estimator.add_metrics (mean_squared_error), "
          "sparse_softmax_cross_entropy; then Keras metrics", 3,
          (r"^Out: \{'accuracy': (np.float32\()?(0.0|0.33333334|0.6666667|1.0)\)?, "
           r"'loss': (np.float32\()?%s\)?, 'global_step': (np.int64\()?3\)?\}$" % NUMBER,
           r"'mean_squared_error': (np.float32\()?%s\)?" % NUMBER)),
    guide("logging_stop_hook", "TF2 notebook (migration guide): training_hooks in "
          "EstimatorSpec: StopAtStepHook(num_steps=2), LoggingTensorHook over a list of "
          "tensors (tf.identity of the layer's weights) and a dict keyed by name; then Keras "
          "callbacks", 2, (r"^stop training now$",)),
]
