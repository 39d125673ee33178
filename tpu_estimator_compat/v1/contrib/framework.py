"""`tf.contrib.framework`: the global-step helpers and `nest`."""
from tpu_estimator_compat.v1 import _lazy

_lazy.install(
    globals(),
    names={
        "get_or_create_global_step": "tensorflow:compat.v1.train.get_or_create_global_step",
        "get_global_step": "tensorflow:compat.v1.train.get_global_step",
        "nest": "tensorflow:nest",
    },
    missing_hint=". Only get_or_create_global_step, get_global_step and nest are provided.",
)
