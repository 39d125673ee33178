"""The partitioners of TF 1.15's canned model_fns: `min_max_variable_partitioner` over the
parameter servers, except under a `train_distribute`/`eval_distribute` strategy other than
a parameter-server one, where TF 1.x's strategies dropped variable partitioning (so the
variables, and their optimizer slots' names, are the original's there too)."""
import tensorflow as tf

from tpu_estimator_compat.api.spec import ModeKeys


def _partitioning_allowed(config, mode):
    if config is None:
        return True
    strategy = getattr(config, "train_distribute" if mode == ModeKeys.TRAIN
                       else "eval_distribute", None)
    return strategy is None or "ParameterServer" in type(strategy).__name__


def min_max(config, mode, given=None, min_slice_size=256 << 10):
    """`given` (the user's partitioner) or TF1's `min_max_variable_partitioner(
    max_partitions=num_ps_replicas, ...)`; None where the mode's strategy does not
    partition."""
    if not _partitioning_allowed(config, mode):
        return None
    return given or tf.compat.v1.min_max_variable_partitioner(
        max_partitions=config.num_ps_replicas if config else 0,
        min_slice_size=min_slice_size)
