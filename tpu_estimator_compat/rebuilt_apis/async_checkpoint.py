"""`tf.contrib.tpu.AsyncCheckpointSaverHook`.

The original wrote checkpoints on a background thread. Here every checkpoint saver hook
drives the estimator's own saver (`host/checkpoint_saves.py`: the hook's directory,
`save_steps` / `save_secs` timer and listeners, checked at the end of each device loop), so
this hook saves on exactly the schedule a `CheckpointSaverHook` with the same arguments does;
the write itself is synchronous.
"""
import tensorflow as tf


class AsyncCheckpointSaverHook(tf.compat.v1.train.CheckpointSaverHook):
    """Saves checkpoints every `save_steps` or `save_secs` (TF1 arguments: `checkpoint_dir`,
    `save_secs`, `save_steps`, `saver`, `checkpoint_basename`, `scaffold`, `listeners`)."""
