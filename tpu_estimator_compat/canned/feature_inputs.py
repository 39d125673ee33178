"""Feature columns into a canned model: the DNN's input layer, the linear model's
weighted sum, batch normalization, and the check that features are a dict."""
import tensorflow as tf

from tpu_estimator_compat.rebuilt_apis import tf1_batch_norm

_v1 = tf.compat.v1


def check_features(features):
    if not isinstance(features, dict):
        raise ValueError(f"features should be a dictionary of `Tensor`s. Given type: "
                         f"{type(features)}. Return a dict {{feature key: Tensor}} from "
                         "input_fn.")


def input_layer(features, feature_columns):
    """The dense input of the DNN (`input_layer/...` variables, columns sorted by name)."""
    return _v1.feature_column.input_layer(features, list(feature_columns))


def batch_norm(net, training, name):
    """TF1's batch normalization of the DNN (momentum 0.999), variables under `name`."""
    layer = tf1_batch_norm.BatchNormalization(momentum=0.999, trainable=True, name=name,
                                              _scope=name)
    return layer(net, training=training)


def linear_model(features, feature_columns, units, sparse_combiner):
    """`(logits, bias, weights)` of the linear model (`linear_model/<column>/weights`,
    `linear_model/bias_weights`); bias and weights as lists of variables (the parts of a
    partitioned one)."""
    columns_to_variables = {}
    logits = _v1.feature_column.linear_model(
        features, list(feature_columns), units=units, sparse_combiner=sparse_combiner,
        cols_to_vars=columns_to_variables)
    bias = _parts(columns_to_variables.pop("bias"))
    weights = [part for value in columns_to_variables.values() for part in _parts(value)]
    return logits, bias, weights


def _parts(value):
    return list(value) if isinstance(value, (list, tuple)) else [value]
