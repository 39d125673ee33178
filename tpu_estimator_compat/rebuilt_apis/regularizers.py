"""`tf.contrib.layers` weight regularizers: `l1_regularizer`, `l2_regularizer`."""
import numbers

import tensorflow as tf

from tpu_estimator_compat import log as logging


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


def _regularizer(scale, scope, default_name, penalty):
    """`weights -> scale * penalty(weights)` in a name scope (`scope` or `default_name`)."""
    if not _check_scale(scale):
        return lambda _: None

    def regularize(weights):
        with tf.compat.v1.name_scope(scope, default_name, [weights]) as name:
            my_scale = tf.convert_to_tensor(scale, dtype=weights.dtype.base_dtype, name="scale")
            return tf.multiply(my_scale, penalty(weights), name=name)
    return regularize


def l1_regularizer(scale, scope=None):
    """`weights -> scale * sum(|weights|)`, in a name scope `scope` or 'l1_regularizer'.

    Raises:
      ValueError: if `scale` is an integer or negative. A scale of 0.0 gives a function
        returning None (no loss).
    """
    return _regularizer(scale, scope, "l1_regularizer",
                        lambda weights: tf.reduce_sum(tf.abs(weights)))


def l2_regularizer(scale, scope=None):
    """`weights -> scale * sum(weights ** 2) / 2`, in a name scope `scope` or 'l2_regularizer'.

    Raises:
      ValueError: if `scale` is an integer or negative. A scale of 0.0 gives a function
        returning None (no loss).
    """
    return _regularizer(scale, scope, "l2_regularizer", tf.nn.l2_loss)
