"""`tf.contrib.layers`' own layers: the layers, initializers and regularizers TF1 TPU models use.

Layers create their variables with `tf.compat.v1.variable_scope` / `get_variable`, so
variable names equal TF1's (`LayerNorm/beta`, `fully_connected/weights`, `Conv/biases`,
`BatchNorm/moving_mean`) and TF1 checkpoints restore into them. They run wherever v1
variable scopes do: in a `tf.Graph`, or in a `tf.function` trace (the engine's model_fn).
They accept `arg_scope` (tf-slim's, which `tf.contrib.framework` and `tf.contrib.slim` serve).
Every other name of contrib's layers (`softmax`, `max_pool2d`, `separable_conv2d`, `l2_normalize`,
`optimize_loss`, `summarize_*`...) is tf-slim's `tf_slim.layers`.
"""
import tensorflow as tf

from tpu_estimator_compat.tf_internals import graphs as tf_graphs
from tpu_estimator_compat.rebuilt_apis import model_variables as _variables
from tpu_estimator_compat.rebuilt_apis.batch_norm import batch_norm
from tpu_estimator_compat.rebuilt_apis.tf_slim import tf_slim as _tf_slim
from tpu_estimator_compat.rebuilt_apis.initializers import (
    variance_scaling_initializer, xavier_initializer, xavier_initializer_conv2d)
from tpu_estimator_compat.rebuilt_apis.regularizers import l1_regularizer, l2_regularizer

__all__ = [
    "batch_norm", "conv2d", "convolution2d", "dropout", "flatten", "fully_connected",
    "l1_regularizer", "l2_regularizer", "layer_norm", "linear",
    "variance_scaling_initializer", "xavier_initializer", "xavier_initializer_conv2d",
]

_v1 = tf.compat.v1
_add_arg_scope = _tf_slim.add_arg_scope
batch_norm = _add_arg_scope(batch_norm)
_smart_cond = tf_graphs.smart_cond
_LAYER_NORM_EPSILON = 1e-12  # TF1's variance_epsilon, not configurable there either.


@_add_arg_scope
def layer_norm(inputs, center=True, scale=True, activation_fn=None, reuse=None,
               variables_collections=None, outputs_collections=None, trainable=True,
               begin_norm_axis=1, begin_params_axis=-1, scope=None):
    """Layer normalisation (Ba et al., 2016) over axes `begin_norm_axis:`.

    `(x - mean) / sqrt(variance + 1e-12) * gamma + beta`, with moments over axes
    `begin_norm_axis` to the last and `beta`/`gamma` of shape `inputs.shape[begin_params_axis:]`
    (variables `LayerNorm/beta`, `LayerNorm/gamma`, or under `scope`).

    Returns:
      A tensor with the shape and dtype of `inputs`.

    Raises:
      ValueError: unknown rank, axes not below the rank, or parameter shape not fully known.
    """
    with _v1.variable_scope(scope, "LayerNorm", [inputs], reuse=reuse) as sc:
        inputs = tf.convert_to_tensor(inputs)
        shape = inputs.shape
        rank = shape.rank
        if rank is None:
            raise ValueError(f"Inputs {inputs.name} has undefined rank.")
        if begin_norm_axis < 0:
            begin_norm_axis = rank + begin_norm_axis
        if begin_params_axis >= rank or begin_norm_axis >= rank:
            raise ValueError(
                f"begin_params_axis ({begin_params_axis}) and begin_norm_axis "
                f"({begin_norm_axis}) must be < rank(inputs) ({rank})")
        params_shape = shape[begin_params_axis:]
        if not params_shape.is_fully_defined():
            raise ValueError(f"Inputs {inputs.name}: shape(inputs)[{begin_params_axis}:] is not "
                             f"fully defined: {shape}")
        dtype = inputs.dtype.base_dtype
        beta = gamma = None
        if center:
            beta = _variables.model_variable(
                "beta", params_shape, dtype, _v1.zeros_initializer(), trainable=trainable,
                collections=_variables.variable_collections(variables_collections, "beta"))
        if scale:
            gamma = _variables.model_variable(
                "gamma", params_shape, dtype, _v1.ones_initializer(), trainable=trainable,
                collections=_variables.variable_collections(variables_collections, "gamma"))
        mean, variance = tf.nn.moments(inputs, list(range(begin_norm_axis, rank)),
                                       keepdims=True)
        outputs = tf.nn.batch_normalization(inputs, mean, variance, offset=beta, scale=gamma,
                                            variance_epsilon=_LAYER_NORM_EPSILON)
        outputs.set_shape(shape)
        if activation_fn is not None:
            outputs = activation_fn(outputs)
        return _variables.collect_named_outputs(outputs_collections, sc.name, outputs)


@_add_arg_scope
def fully_connected(inputs, num_outputs, activation_fn=tf.nn.relu, normalizer_fn=None,
                    normalizer_params=None, weights_initializer=xavier_initializer(),
                    weights_regularizer=None, biases_initializer=_v1.zeros_initializer(),
                    biases_regularizer=None, reuse=None, variables_collections=None,
                    outputs_collections=None, trainable=True, scope=None):
    """A dense layer on the last axis: `activation_fn(normalizer_fn(x @ weights) or + biases)`.

    Variables `fully_connected/weights` ([inputs, num_outputs]) and, unless a
    `normalizer_fn` is given or `biases_initializer` is None, `fully_connected/biases`.
    Regularizer losses go to REGULARIZATION_LOSSES. Inputs of rank > 2 are contracted on
    their last axis.

    Raises:
      ValueError: `num_outputs` not an int, or the last input dimension unknown.
    """
    if not isinstance(num_outputs, int):
        raise ValueError(f"num_outputs type should be one of {[int]}, got {type(num_outputs)}.")
    with _v1.variable_scope(scope, "fully_connected", [inputs], reuse=reuse) as sc:
        inputs = tf.convert_to_tensor(inputs)
        num_inputs = tf.compat.dimension_value(inputs.shape[-1])
        if num_inputs is None:
            raise ValueError("The last dimension of the inputs to `fully_connected` should be "
                             f"defined. Found `None` in {inputs.name} {inputs.shape}.")
        weights = _variables.model_variable(
            "weights", [num_inputs, num_outputs], inputs.dtype.base_dtype, weights_initializer,
            weights_regularizer, trainable,
            _variables.variable_collections(variables_collections, "weights"))
        if inputs.shape.rank == 2:
            outputs = tf.matmul(inputs, weights)
        else:
            outputs = tf.tensordot(inputs, weights, [[inputs.shape.rank - 1], [0]])
            outputs.set_shape(inputs.shape[:-1].concatenate([num_outputs]))
        return _finish(outputs, sc, num_outputs, None, normalizer_fn, normalizer_params,
                       biases_initializer, biases_regularizer, activation_fn,
                       variables_collections, outputs_collections, trainable)


def linear(inputs, num_outputs, **kwargs):
    """`fully_connected` without an activation function."""
    return fully_connected(inputs, num_outputs, activation_fn=None, **kwargs)


@_add_arg_scope
def conv2d(inputs, num_outputs, kernel_size, stride=1, padding="SAME", data_format=None,
           rate=1, activation_fn=tf.nn.relu, normalizer_fn=None, normalizer_params=None,
           weights_initializer=xavier_initializer(), weights_regularizer=None,
           biases_initializer=_v1.zeros_initializer(), biases_regularizer=None, reuse=None,
           variables_collections=None, outputs_collections=None, trainable=True, scope=None):
    """A 2-D convolution: variables `Conv/weights` ([kh, kw, in, out]) and `Conv/biases`.

    Args:
      kernel_size, stride, rate: an int or a pair (height, width); `rate` is the dilation.
      padding: 'SAME' or 'VALID'.
      data_format: None or 'NHWC' (channels last), or 'NCHW'.
      Others: as `fully_connected`.

    Raises:
      ValueError: bad `data_format`, input rank other than 4, or unknown input channels.
    """
    if data_format not in (None, "NHWC", "NCHW"):
        raise ValueError(f"Invalid data_format: {data_format!r}")
    data_format = data_format or "NHWC"
    with _v1.variable_scope(scope, "Conv", [inputs], reuse=reuse) as sc:
        inputs = tf.convert_to_tensor(inputs)
        if inputs.shape.rank != 4:
            raise ValueError(f"Convolution not supported for input with rank "
                             f"{inputs.shape.rank}; conv2d needs rank 4.")
        num_inputs = tf.compat.dimension_value(inputs.shape[1 if data_format == "NCHW" else 3])
        if num_inputs is None:
            raise ValueError(f"The channel dimension of {inputs.name} {inputs.shape} should be "
                             "defined.")
        kernel_h, kernel_w = _pair(kernel_size, "kernel_size")
        weights = _variables.model_variable(
            "weights", [kernel_h, kernel_w, num_inputs, num_outputs], inputs.dtype.base_dtype,
            weights_initializer, weights_regularizer, trainable,
            _variables.variable_collections(variables_collections, "weights"))
        outputs = tf.nn.convolution(inputs, weights, strides=_pair(stride, "stride"),
                                    padding=padding.upper(), data_format=data_format,
                                    dilations=_pair(rate, "rate"))
        return _finish(outputs, sc, num_outputs, data_format, normalizer_fn, normalizer_params,
                       biases_initializer, biases_regularizer, activation_fn,
                       variables_collections, outputs_collections, trainable)


convolution2d = conv2d


@_add_arg_scope
def flatten(inputs, outputs_collections=None, scope=None):
    """Reshapes `[batch, d1, d2, ...]` to `[batch, d1 * d2 * ...]` (rank 1: `[batch, 1]`)."""
    with _v1.name_scope(scope, "Flatten", [inputs]) as sc:
        inputs = tf.convert_to_tensor(inputs)
        rank = inputs.shape.rank
        if rank == 1:
            outputs = tf.expand_dims(inputs, 1)
        elif rank is not None and inputs.shape[1:].is_fully_defined():
            outputs = tf.reshape(inputs, [-1, inputs.shape[1:].num_elements()])
        else:
            outputs = tf.reshape(inputs, tf.stack([tf.shape(inputs)[0], -1]))
        return _variables.collect_named_outputs(outputs_collections, sc, outputs)


@_add_arg_scope
def dropout(inputs, keep_prob=0.5, noise_shape=None, is_training=True,
            outputs_collections=None, scope=None, seed=None):
    """Keeps each element with probability `keep_prob`, scaled by `1 / keep_prob`.

    Identity when `is_training` is False (a Python bool or a bool tensor).
    """
    with _v1.variable_scope(scope, "Dropout", [inputs]) as sc:
        inputs = tf.convert_to_tensor(inputs)
        outputs = _smart_cond(
            is_training,
            lambda: _v1.nn.dropout(inputs, rate=1 - keep_prob, noise_shape=noise_shape,
                                   seed=seed),
            lambda: tf.identity(inputs))
        return _variables.collect_named_outputs(outputs_collections, sc.name, outputs)


def _finish(outputs, scope, num_outputs, data_format, normalizer_fn, normalizer_params,
            biases_initializer, biases_regularizer, activation_fn, variables_collections,
            outputs_collections, trainable):
    """Biases (or the normaliser), the activation, and the outputs collections."""
    if normalizer_fn is not None:
        outputs = normalizer_fn(outputs, **(normalizer_params or {}))
    elif biases_initializer is not None:
        biases = _variables.model_variable(
            "biases", [num_outputs], outputs.dtype.base_dtype, biases_initializer,
            biases_regularizer, trainable,
            _variables.variable_collections(variables_collections, "biases"))
        outputs = tf.nn.bias_add(outputs, biases,
                                 data_format="NCHW" if data_format == "NCHW" else None)
    if activation_fn is not None:
        outputs = activation_fn(outputs)
    return _variables.collect_named_outputs(outputs_collections, scope.name, outputs)


def _pair(value, name):
    if isinstance(value, int):
        return [value, value]
    value = list(value)
    if len(value) != 2 or not all(isinstance(v, int) for v in value):
        raise ValueError(f"`{name}` must be an int or a pair of ints. Received: {name}={value}")
    return value

