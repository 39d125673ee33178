"""`tf.estimator.experimental`: TF 1.15's early-stopping hooks
(`rebuilt_apis/early_stopping.py`); the error names what to use instead of the rest."""
from tpu_estimator_compat.v1 import _lazy

EARLY_STOPPING = ("make_early_stopping_hook", "stop_if_higher_hook", "stop_if_lower_hook",
                  "stop_if_no_decrease_hook", "stop_if_no_increase_hook")

# What to use instead of the names not served.
REPLACEMENTS = {
    "InMemoryEvaluatorHook": "train_and_evaluate with an EvalSpec (it evaluates each new "
                             "checkpoint)",
    "KMeans": "tf.compat.v1.estimator's KMeans on TensorFlow <= 2.15, or a Keras model",
    "LinearSDCA": "an optimizer such as tf.compat.v1.train.FtrlOptimizer in your model_fn",
    "make_stop_at_checkpoint_step_hook": "tf.estimator.StopAtStepHook",
}


def _missing_hint(name):
    hint = (". tpu_estimator_compat provides tf.estimator.experimental's early-stopping "
            f"hooks ({', '.join(EARLY_STOPPING)}) only.")
    if name in REPLACEMENTS:
        hint += f" Instead of {name}, use {REPLACEMENTS[name]}."
    elif name.endswith(("logit_fn", "logit_fn_builder", "receiver_fn")):
        hint += " Canned-estimator internals are not provided: build the logits in your model_fn."
    return hint


_lazy.install(
    globals(),
    names={name: f"tpu_estimator_compat.rebuilt_apis.early_stopping:{name}"
           for name in EARLY_STOPPING},
    missing_hint=_missing_hint,
)
