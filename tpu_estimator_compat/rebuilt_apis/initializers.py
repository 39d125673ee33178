"""`tf.contrib.layers` weight initializers: `xavier_initializer`, `variance_scaling_initializer`.

They sample with the v1 random ops, so graph-level and op-level seeds act as in TF1.
"""
import math

import tensorflow as tf

_v1 = tf.compat.v1
_MODES = ("FAN_IN", "FAN_OUT", "FAN_AVG")


def variance_scaling_initializer(factor=2.0, mode="FAN_IN", uniform=False, seed=None,
                                 dtype=tf.float32):
    """An initializer whose samples have variance `factor / n`.

    `n` is the number of inputs (`FAN_IN`), outputs (`FAN_OUT`) or their mean (`FAN_AVG`)
    of a `[..., inputs, outputs]` weight; leading (receptive-field) dimensions multiply
    both. With `uniform`, samples are uniform in `+-sqrt(3 * factor / n)`; otherwise they
    are drawn from a normal with stddev `sqrt(1.3 * factor / n)` truncated at two stddevs
    (whose own stddev is close to `sqrt(factor / n)`). The default is He initialisation.

    Returns:
      A function `(shape, dtype=dtype, partition_info=None) -> Tensor` for `get_variable`.

    Raises:
      TypeError: if `dtype` is not floating point or `mode` is unknown.
    """
    dtype = tf.as_dtype(dtype)
    if not dtype.is_floating:
        raise TypeError("Cannot create initializer for non-floating point type.")
    if mode not in _MODES:
        raise TypeError(f"Unknown mode {mode} [FAN_IN, FAN_OUT, FAN_AVG]")

    def _initializer(shape, dtype=dtype, partition_info=None):
        dtype = tf.as_dtype(dtype)
        if not dtype.is_floating:
            raise TypeError("Cannot create initializer for non-floating point type.")
        full_shape = partition_info.full_shape if partition_info is not None else shape
        fan_in, fan_out = _fans([int(d) for d in full_shape])
        n = {"FAN_IN": fan_in, "FAN_OUT": fan_out, "FAN_AVG": (fan_in + fan_out) / 2.0}[mode]
        if uniform:
            limit = math.sqrt(3.0 * factor / n)
            return _v1.random_uniform(shape, -limit, limit, dtype, seed=seed)
        stddev = math.sqrt(1.3 * factor / n)
        return _v1.truncated_normal(shape, 0.0, stddev, dtype, seed=seed)

    return _initializer


def xavier_initializer(uniform=True, seed=None, dtype=tf.float32):
    """Glorot initialisation: `variance_scaling_initializer(1.0, 'FAN_AVG', uniform)`."""
    return variance_scaling_initializer(factor=1.0, mode="FAN_AVG", uniform=uniform,
                                        seed=seed, dtype=dtype)


xavier_initializer_conv2d = xavier_initializer


def _fans(shape):
    """(fan_in, fan_out) of a weight shape; a scalar counts as one in, one out."""
    if not shape:
        return 1.0, 1.0
    fan_in = float(shape[-2]) if len(shape) > 1 else float(shape[-1])
    fan_out = float(shape[-1])
    receptive_field = math.prod(shape[:-2])
    return fan_in * receptive_field, fan_out * receptive_field
