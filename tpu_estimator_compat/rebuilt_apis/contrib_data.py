"""`tf.contrib.data`'s own transformations for `dataset.apply(...)`, with TF1 semantics."""
import tensorflow as tf

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

