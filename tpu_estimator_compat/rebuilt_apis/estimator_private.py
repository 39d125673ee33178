"""Private helpers of TF1's estimator modules that TPU programs call all the same."""
import tensorflow as tf


def load_global_step_from_checkpoint_dir(checkpoint_dir):
    """`estimator._load_global_step_from_checkpoint_dir`: the global step of the latest
    checkpoint in `checkpoint_dir`, or 0 if there is none (or it has no global step)."""
    path = tf.train.latest_checkpoint(checkpoint_dir)
    if path is None:
        return 0
    try:
        return tf.train.load_checkpoint(path).get_tensor(
            tf.compat.v1.GraphKeys.GLOBAL_STEP)
    except (tf.errors.OpError, ValueError):
        return 0
