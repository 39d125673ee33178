"""`tf.estimator.experimental`: TF 1.15's early-stopping hooks
(`rebuilt_apis/early_stopping.py`), `InMemoryEvaluatorHook`
(`rebuilt_apis/in_memory_evaluator.py`) and the canned models' logit functions
(`canned/logit_fns.py`); the error names what to use instead of the rest."""
from tpu_estimator_compat.v1 import _lazy

EARLY_STOPPING = ("make_early_stopping_hook", "stop_if_higher_hook", "stop_if_lower_hook",
                  "stop_if_no_decrease_hook", "stop_if_no_increase_hook")

LOGIT_FNS = ("call_logit_fn", "dnn_logit_fn_builder", "linear_logit_fn_builder")

# What to use instead of the names not served.
REPLACEMENTS = {
    "KMeans": "tf.compat.v1.estimator's KMeans on TensorFlow <= 2.15, or a Keras model",
    "LinearSDCA": "an optimizer such as tf.compat.v1.train.FtrlOptimizer in your model_fn",
    "make_stop_at_checkpoint_step_hook": "tf.estimator.StopAtStepHook",
}


def _missing_hint(name):
    hint = (". tpu_estimator_compat provides tf.estimator.experimental's early-stopping "
            f"hooks ({', '.join(EARLY_STOPPING)}), InMemoryEvaluatorHook and the logit "
            f"functions ({', '.join(LOGIT_FNS)}) only.")
    if name in REPLACEMENTS:
        hint += f" Instead of {name}, use {REPLACEMENTS[name]}."
    elif name.endswith("receiver_fn"):
        hint += (" Supervised-input receivers are not provided: export a serving receiver "
                 "(tf.estimator.export).")
    return hint


_lazy.install(
    globals(),
    names={**{name: f"tpu_estimator_compat.rebuilt_apis.early_stopping:{name}"
              for name in EARLY_STOPPING},
           **{name: f"tpu_estimator_compat.canned.logit_fns:{name}" for name in LOGIT_FNS},
           "InMemoryEvaluatorHook":
               "tpu_estimator_compat.rebuilt_apis.in_memory_evaluator:InMemoryEvaluatorHook"},
    missing_hint=_missing_hint,
)
