"""`tf.contrib.training`: `HParams` (`rebuilt_apis/hparam.py`) and checkpoint polling
(`checkpoints_iterator`, `wait_for_new_checkpoint`, TensorFlow's)."""
from tpu_estimator_compat.v1 import _lazy
from tpu_estimator_compat.v1 import _paths

_lazy.install(
    globals(),
    names={"HParams": "tpu_estimator_compat.rebuilt_apis.hparam:HParams",
           **_paths.EVALUATION_NAMES},
    missing_hint=". Only HParams, checkpoints_iterator and wait_for_new_checkpoint are provided.",
)
