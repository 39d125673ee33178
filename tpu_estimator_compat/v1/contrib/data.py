"""`tf.contrib.data`: dataset transformations for `dataset.apply(...)`, with TF1 semantics.

`map_and_batch`, `parallel_interleave` and `shuffle_and_repeat` are TensorFlow's own
(`tf.compat.v1.data.experimental`, same signatures as in contrib); the other names of
`tf.compat.v1.data.experimental` are served too.
"""
import tensorflow as tf

from tpu_estimator_compat.v1 import _lazy

AUTOTUNE = tf.data.experimental.AUTOTUNE


def batch_and_drop_remainder(batch_size):
    """Batches elements, dropping a final batch smaller than `batch_size`.

    Args:
      batch_size: number of consecutive elements per batch (int or scalar int64 tensor).

    Returns:
      A function from dataset to dataset, for `dataset.apply`. Its batches have a static
      leading dimension `batch_size`.
    """
    def _apply(dataset):
        return dataset.batch(batch_size, drop_remainder=True)
    return _apply


def padded_batch_and_drop_remainder(batch_size, padded_shapes, padding_values=None):
    """Like `batch_and_drop_remainder`, padding each component to `padded_shapes`.

    Returns:
      A function from dataset to dataset, for `dataset.apply`.
    """
    def _apply(dataset):
        return dataset.padded_batch(batch_size, padded_shapes, padding_values,
                                    drop_remainder=True)
    return _apply


_lazy.install(
    globals(),
    names={name: f"tensorflow:compat.v1.data.experimental.{name}"
           for name in ("map_and_batch", "parallel_interleave", "shuffle_and_repeat")},
    fallback="tensorflow:compat.v1.data.experimental",
)
