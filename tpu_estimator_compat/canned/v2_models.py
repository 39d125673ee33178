"""The models of TF 2.x's V2 canned estimators, each returning its logits and the variables
its optimizer trains: the DNN as a Keras model (`tf.keras.layers.DenseFeatures`, then Dense
layers) and the linear model (the baseline's bias is TF 1.x's, `baseline.py`).

Variables are TF 2.15's: `dnn/input_from_feature_columns/input_layer/...`,
`dnn/hiddenlayer_<i>/{kernel,bias}` (glorot-uniform kernels, zero biases),
`dnn/logits/{kernel,bias}`, `linear/linear_model/<column>/weights`,
`linear/linear_model/bias_weights` and `baseline/bias`, unpartitioned as TF 2.x's were.
"""
import tensorflow as tf
import tf_keras

from tpu_estimator_compat.api.spec import ModeKeys
from tpu_estimator_compat.canned import dnn
from tpu_estimator_compat.canned import linear

_v1 = tf.compat.v1
_layers = tf_keras.layers


def _check_units(units):
    if not isinstance(units, int) or isinstance(units, bool):
        raise ValueError(f"units must be an int.  Given type: {type(units)}")


class _DNNModel(tf_keras.Model):
    """TF 2.15's `_DNNModelV2`: dense features, hidden layers (dropout and batch
    normalization after each where asked), logits."""

    def __init__(self, units, hidden_units, feature_columns, activation_fn, dropout,
                 batch_norm):
        super().__init__(name="dnn")
        self._input_layer = _layers.DenseFeatures(
            feature_columns=list(feature_columns),
            name="input_from_feature_columns/input_layer")
        self._hidden = []  # (dense, dropout or None, batch norm or None, name)
        for index, width in enumerate(hidden_units):
            name = f"hiddenlayer_{index}"
            self._hidden.append((
                _layers.Dense(width, activation=activation_fn, name=name,
                              kernel_initializer=_v1.glorot_uniform_initializer()),
                _layers.Dropout(rate=dropout) if dropout is not None else None,
                _layers.BatchNormalization(momentum=0.999, trainable=True,
                                           name=f"{name}/batchnorm_{index}")
                if batch_norm else None,
                name))
        self._logits = _layers.Dense(units, name="logits",
                                     kernel_initializer=_v1.glorot_uniform_initializer())

    def call(self, features, mode):  # pylint: disable=arguments-differ
        training = mode == ModeKeys.TRAIN
        net = self._input_layer(features, training=training)
        for dense, dropout, batch_norm, name in self._hidden:
            net = dense(net)
            if dropout is not None and training:
                net = dropout(net, training=True)
            if batch_norm is not None:
                net = batch_norm(net, training=training)
            dnn.layer_summaries(net, name)
        logits = self._logits(net)
        dnn.layer_summaries(logits, "logits")
        return logits


def dnn_logits(features, mode, units, hidden_units, feature_columns, activation_fn,
               dropout, batch_norm):
    """`(logits, trainable variables, update ops)` of the Keras DNN `dnn`."""
    _check_units(units)
    model = _DNNModel(units, hidden_units, feature_columns, activation_fn, dropout,
                      batch_norm)
    logits = model(features, mode)
    return logits, model.trainable_variables, model.updates


def linear_logits(features, units, feature_columns, sparse_combiner):
    """`(logits, variables)` of the linear model `linear/linear_model`."""
    with _v1.variable_scope("linear", values=tuple(features.values())):
        return linear.linear_logits_and_variables(features, units, feature_columns,
                                                  sparse_combiner)
