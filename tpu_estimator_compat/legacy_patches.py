"""TF1 entry points redirected while the model's code runs (tracing model_fn, scaffold_fn).

- `tf.compat.v1.train.init_from_checkpoint` cannot act inside a `tf.function` trace (it sets
  graph initializers); calls are recorded and applied eagerly to the model's variables once
  they exist, and only when model_dir has no checkpoint, as the original's initializers were.
- `tf.compat.v1.tpu.CrossShardOptimizer` / `cross_replica_sum` need a TPU kernel; code that
  imports them from plain TensorFlow gets ours, which work on any tf.distribute strategy.
"""
import contextlib
import dataclasses

import tensorflow as tf

from tpu_estimator_compat import optimizers
from tpu_estimator_compat import variable_store


@dataclasses.dataclass(frozen=True)
class InitFromCheckpointCall:
    """One recorded call, with the names of the variables that existed when it was made
    (TF1 mapped only those: a scope map in model_fn does not reach optimizer slots created
    later). `variable_names` is None when every variable existed (scaffold_fn)."""
    ckpt_dir_or_file: str
    assignment_map: dict
    variable_names: frozenset | None


@contextlib.contextmanager
def patched_legacy_api(recorded_calls):
    """Within the block, `init_from_checkpoint` calls append to `recorded_calls`."""
    def init_from_checkpoint(ckpt_dir_or_file, assignment_map):
        names = None
        if not tf.executing_eagerly():  # inside the model_fn trace
            names = frozenset(variable_store.tf1_name(v)
                              for v in tf.compat.v1.global_variables())
        recorded_calls.append(
            InitFromCheckpointCall(ckpt_dir_or_file, dict(assignment_map), names))

    replacements = [
        (tf.compat.v1.train, "init_from_checkpoint", init_from_checkpoint),
        (tf.compat.v1.tpu, "CrossShardOptimizer", optimizers.CrossShardOptimizer),
        (tf.compat.v1.tpu, "cross_replica_sum", optimizers.cross_replica_sum),
    ]
    originals = [(module, name, getattr(module, name)) for module, name, _ in replacements]
    try:
        for module, name, value in replacements:
            setattr(module, name, value)
        yield
    finally:
        for module, name, value in originals:
            setattr(module, name, value)
