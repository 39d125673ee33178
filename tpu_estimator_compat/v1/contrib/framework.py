"""`tf.contrib.framework`: the global-step and checkpoint helpers and `nest` (TensorFlow's), `arg_scope`
and the variable helpers (`assign_from_checkpoint_fn`, `get_variables_to_restore`,
`get_model_variables`...) from tf-slim, where contrib's framework code lives on."""
from tpu_estimator_compat.v1 import _lazy

_SLIM = "tpu_estimator_compat.rebuilt_apis.tf_slim"
_ARG_SCOPE = ("arg_scope", "add_arg_scope", "arg_scoped_arguments", "current_arg_scope",
              "has_arg_scope")

_lazy.install(
    globals(),
    names={
        "get_or_create_global_step": "tensorflow:compat.v1.train.get_or_create_global_step",
        "get_global_step": "tensorflow:compat.v1.train.get_global_step",
        "nest": "tensorflow:nest",
        **{name: f"tensorflow:compat.v1.train.{name}" for name in (
            "init_from_checkpoint", "list_variables", "load_checkpoint", "load_variable")},
        **{name: f"{_SLIM}:slim_arg_scope.{name}" for name in _ARG_SCOPE},
    },
    fallback=f"{_SLIM}:slim_variables",
)
