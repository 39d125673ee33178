"""`tf.contrib.layers.batch_norm` with TF1's variables, statistics and update ops.

Variables (in `variable_scope(scope, 'BatchNorm')`): `beta` (if `center`), `gamma` (if
`scale`, off by default), `moving_mean`, `moving_variance` (not trainable), all float32 for
float16/bfloat16 inputs. In training the batch's own moments normalise; the moving
averages are then updated with `decay`. As in TF1, inputs of rank 2 or 4 go through the
fused kernel (unless `fused=False`), whose batch variance for the moving average carries
Bessel's correction; other ranks (and `fused=False`) use the plain moments.

The update ops go to `updates_collections` (UPDATE_OPS), or run before the output is
returned when it is None. Under a tf.distribute strategy the moving averages move towards
the mean over replicas of the per-replica batch statistics.
"""
import tensorflow as tf

from tpu_estimator_compat.tf_internals import graphs as tf_graphs
from tpu_estimator_compat.tf_internals import training as tf_training

from tpu_estimator_compat.rebuilt_apis import model_variables as _variables

_v1 = tf.compat.v1
_smart_cond = tf_graphs.smart_cond
_FUSED_DTYPES = (tf.float16, tf.bfloat16, tf.float32)


def batch_norm(inputs, decay=0.999, center=True, scale=False, epsilon=0.001,
               activation_fn=None, param_initializers=None, param_regularizers=None,
               updates_collections=_v1.GraphKeys.UPDATE_OPS, is_training=True, reuse=None,
               variables_collections=None, outputs_collections=None, trainable=True,
               batch_weights=None, fused=None, data_format="NHWC",
               zero_debias_moving_mean=False, scope=None, renorm=False,
               renorm_clipping=None, renorm_decay=0.99, adjustment=None):
    """Batch normalisation (Ioffe & Szegedy, 2015), usable as a `normalizer_fn`.

    Normalises over all axes but the channel axis (last for NHWC, 1 for NCHW).

    Args:
      is_training: Python bool or bool tensor: batch statistics and moving-average updates
        (True) or the moving averages (False).
      updates_collections: where the two update ops go; None runs them in place.
      zero_debias_moving_mean: zero-debias the moving mean (adds `moving_mean/biased` and
        `moving_mean/local_step`).
      Others: as `tf.contrib.layers.batch_norm`. `renorm_clipping` and `renorm_decay` only
        matter with `renorm`.

    Returns:
      The normalised tensor, with the shape of `inputs`.

    Raises:
      ValueError: bad `data_format`, unknown rank or channel dimension.
      NotImplementedError: `batch_weights`, `renorm` or `adjustment` given.
    """
    del renorm_clipping, renorm_decay  # Only used by renorm.
    if batch_weights is not None or renorm or adjustment is not None:
        raise NotImplementedError(
            "tf.contrib.layers.batch_norm: `batch_weights`, `renorm` and `adjustment` are not "
            "supported by tpu_estimator_compat.")
    if data_format not in ("NCHW", "NHWC"):
        raise ValueError("data_format has to be either NCHW or NHWC.")
    with _v1.variable_scope(scope, "BatchNorm", [inputs], reuse=reuse) as sc:
        inputs = tf.convert_to_tensor(inputs)
        rank = inputs.shape.rank
        if rank is None:
            raise ValueError(f"Inputs {inputs.name} has undefined rank.")
        channel_axis = 1 if data_format == "NCHW" else rank - 1
        params_shape = inputs.shape[channel_axis:channel_axis + 1]
        if not params_shape.is_fully_defined():
            raise ValueError(
                f"Inputs {inputs.name} has undefined `C` dimension {params_shape}.")
        params = _make_variables(inputs.dtype.base_dtype, params_shape, center, scale,
                                 param_initializers or {}, param_regularizers or {},
                                 variables_collections, trainable)
        use_fused = fused is not False and rank in (2, 4) and inputs.dtype in _FUSED_DTYPES
        normalize = _fused if use_fused else _plain
        outputs, mean, variance = _smart_cond(
            is_training,
            lambda: normalize(inputs, params, epsilon, data_format, channel_axis, True),
            lambda: normalize(inputs, params, epsilon, data_format, channel_axis, False))
        training_value = tf.get_static_value(is_training)
        if training_value is None or training_value:
            outputs = _update_moving_averages(
                outputs, mean, variance, params, is_training, decay, zero_debias_moving_mean,
                updates_collections)
        outputs.set_shape(inputs.shape)
        if activation_fn is not None:
            outputs = activation_fn(outputs)
        return _variables.collect_named_outputs(outputs_collections, sc.name, outputs)


class _Params:
    """beta and gamma (variables, or the constants 0 and 1) and the moving averages."""

    def __init__(self, beta, gamma, moving_mean, moving_variance):
        self.beta = beta
        self.gamma = gamma
        self.moving_mean = moving_mean
        self.moving_variance = moving_variance


def _make_variables(dtype, shape, center, scale, initializers, regularizers,
                    variables_collections, trainable):
    dtype = tf.float32 if dtype in (tf.float16, tf.bfloat16) else dtype

    def variable(name, default_initializer, **kwargs):
        return _variables.model_variable(
            name, shape, dtype, initializers.get(name, default_initializer),
            collections=_variables.variable_collections(variables_collections, name),
            **kwargs)

    beta = (variable("beta", _v1.zeros_initializer(), regularizer=regularizers.get("beta"),
                     trainable=trainable)
            if center else tf.zeros(shape, dtype))
    gamma = (variable("gamma", _v1.ones_initializer(), regularizer=regularizers.get("gamma"),
                      trainable=trainable)
             if scale else tf.ones(shape, dtype))
    # Moving averages are never partitioned: assign_moving_average cannot update parts.
    with _v1.variable_scope(_v1.get_variable_scope()) as unpartitioned:
        unpartitioned.set_partitioner(None)
        moving_mean = variable("moving_mean", _v1.zeros_initializer(), trainable=False)
        moving_variance = variable("moving_variance", _v1.ones_initializer(), trainable=False)
    return _Params(beta, gamma, moving_mean, moving_variance)


def _fused(inputs, params, epsilon, data_format, channel_axis, training):
    """The fused kernel on a 4-D view of `inputs` (rank 2 is viewed as [N, 1, 1, C])."""
    del channel_axis
    x = inputs
    if inputs.shape.rank == 2:
        channels = inputs.shape[1:2].num_elements()
        x = tf.reshape(inputs, [-1, channels, 1, 1] if data_format == "NCHW"
                       else [-1, 1, 1, channels])
    if training:
        y, mean, variance = _v1.nn.fused_batch_norm(
            x, params.gamma, params.beta, epsilon=epsilon, data_format=data_format)
    else:
        y, mean, variance = _v1.nn.fused_batch_norm(
            x, params.gamma, params.beta, mean=params.moving_mean,
            variance=params.moving_variance, epsilon=epsilon, is_training=False,
            data_format=data_format)
    if inputs.shape.rank == 2:
        y = tf.reshape(y, tf.shape(inputs))
    return y, mean, variance


def _plain(inputs, params, epsilon, data_format, channel_axis, training):
    """Moments over all axes but `channel_axis`, in the parameters' dtype."""
    del data_format
    rank = inputs.shape.rank
    broadcast = [1] * rank
    broadcast[channel_axis] = -1
    x = tf.cast(inputs, params.moving_mean.dtype.base_dtype)
    if training:
        axes = [axis for axis in range(rank) if axis != channel_axis]
        mean, variance = tf.nn.moments(x, axes)
    else:
        mean, variance = tf.identity(params.moving_mean), tf.identity(params.moving_variance)
    y = tf.nn.batch_normalization(
        x, tf.reshape(mean, broadcast), tf.reshape(variance, broadcast),
        tf.reshape(params.beta, broadcast), tf.reshape(params.gamma, broadcast), epsilon)
    return tf.cast(y, inputs.dtype), mean, variance


def _update_moving_averages(outputs, mean, variance, params, is_training, decay,
                            zero_debias_moving_mean, updates_collections):
    def updates():
        update_mean = tf_training.assign_moving_average(
            params.moving_mean, mean, decay, zero_debias=zero_debias_moving_mean)
        update_variance = tf_training.assign_moving_average(
            params.moving_variance, variance, decay, zero_debias=False)
        return update_mean, update_variance

    if updates_collections is None:
        def outputs_after_updates():
            with tf.control_dependencies(updates()):
                return tf.identity(outputs)
        return _smart_cond(is_training, outputs_after_updates, lambda: outputs)
    update_mean, update_variance = _smart_cond(
        is_training, updates,
        lambda: (tf.identity(params.moving_mean), tf.identity(params.moving_variance)))
    _v1.add_to_collections(updates_collections, update_mean)
    _v1.add_to_collections(updates_collections, update_variance)
    return outputs
