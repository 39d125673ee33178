"""`tf.contrib.training`: `HParams` (`rebuilt_apis/hparam.py`), checkpoint polling
(`checkpoints_iterator`, `wait_for_new_checkpoint`, TensorFlow's) and the train-op builders
(`create_train_op`, gradient clipping, multipliers and summaries: tf-slim's `training`, their
maintained home, same signatures)."""
from tpu_estimator_compat.v1 import _lazy
from tpu_estimator_compat.v1 import _paths

_lazy.install(
    globals(),
    names={"HParams": "tpu_estimator_compat.rebuilt_apis.hparam:HParams",
           **_paths.EVALUATION_NAMES, **_paths.TRAIN_OP_BUILDERS},
    missing_hint=(". Only HParams, checkpoints_iterator, wait_for_new_checkpoint and "
                  f"{', '.join(_paths.TRAIN_OP_BUILDERS)} are provided (queue-based "
                  "batching and sampling, and Session-based `train`/`evaluate_once`, are not)."),
)
