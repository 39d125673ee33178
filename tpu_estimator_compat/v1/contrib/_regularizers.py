"""`tf.contrib.layers` weight regularizers: `l1_regularizer`, `l2_regularizer`."""
import numbers

import tensorflow as tf
from absl import logging


def _check_scale(scale):
    """Returns False when the regularizer is disabled (scale 0)."""
    if isinstance(scale, numbers.Integral):
        raise ValueError(f"scale cannot be an integer: {scale}")
    if isinstance(scale, numbers.Real):
        if scale < 0.0:
            raise ValueError(f"Setting a scale less than 0 on a regularizer: {scale:g}.")
        if scale == 0.0:
            logging.info("Scale of 0 disables regularizer.")
            return False
    return True


def l1_regularizer(scale, scope=None):
    """`weights -> scale * sum(|weights|)`, in a name scope `scope` or 'l1_regularizer'.

    Raises:
      ValueError: if `scale` is an integer or negative. A scale of 0.0 gives a function
        returning None (no loss).
    """
    if not _check_scale(scale):
        return lambda _: None

    def l1(weights):
        with tf.compat.v1.name_scope(scope, "l1_regularizer", [weights]) as name:
            my_scale = tf.convert_to_tensor(scale, dtype=weights.dtype.base_dtype, name="scale")
            return tf.multiply(my_scale, tf.reduce_sum(tf.abs(weights)), name=name)
    return l1


def l2_regularizer(scale, scope=None):
    """`weights -> scale * sum(weights ** 2) / 2`, in a name scope `scope` or 'l2_regularizer'.

    Raises:
      ValueError: if `scale` is an integer or negative. A scale of 0.0 gives a function
        returning None (no loss).
    """
    if not _check_scale(scale):
        return lambda _: None

    def l2(weights):
        with tf.compat.v1.name_scope(scope, "l2_regularizer", [weights]) as name:
            my_scale = tf.convert_to_tensor(scale, dtype=weights.dtype.base_dtype, name="scale")
            return tf.multiply(my_scale, tf.nn.l2_loss(weights), name=name)
    return l2
