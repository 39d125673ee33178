"""`DNNClassifier`, `DNNRegressor` and `DNNEstimator` (TF 1.15's `tf.estimator` v1
classes; `DNNEstimator` takes a TF 1.x head such as `tf.contrib.estimator`'s): feature
columns through `input_layer`, fully connected hidden layers, a logits layer, Adagrad
(learning rate 0.05) by default, loss reduced with SUM.

Variables are TF1's: `dnn/input_from_feature_columns/input_layer/...`,
`dnn/hiddenlayer_<i>/{kernel,bias}`, `dnn/logits/{kernel,bias}`, created (through
`get_variable`, glorot-uniform kernels, zero biases, under TF1's partitioner) in the
original's order, so a seeded model starts from the original's values and checkpoints
are interchangeable (Adagrad's slots included).
"""
import tensorflow as tf

from tpu_estimator_compat.api.spec import ModeKeys
from tpu_estimator_compat.canned import feature_inputs
from tpu_estimator_compat.canned import heads
from tpu_estimator_compat.canned import model_fns
from tpu_estimator_compat.canned import optimizers
from tpu_estimator_compat.canned import partitioners
from tpu_estimator_compat.estimator import Estimator

_v1 = tf.compat.v1
_LEARNING_RATE = 0.05
_SUM = _v1.losses.Reduction.SUM


def _dense(net, units, activation=None):
    kernel = _v1.get_variable("kernel", [net.shape[-1], units],
                              initializer=_v1.glorot_uniform_initializer())
    bias = _v1.get_variable("bias", [units], initializer=_v1.zeros_initializer())
    net = tf.nn.bias_add(tf.matmul(net, kernel), bias)
    return activation(net) if activation is not None else net


def layer_summaries(value, tag):
    _v1.summary.scalar(f"{tag}/fraction_of_zero_values", tf.math.zero_fraction(value))
    _v1.summary.histogram(f"{tag}/activation", value)


def dnn_logits(features, mode, units, hidden_units, feature_columns, activation_fn,
               dropout, batch_norm, input_layer_partitioner=None):
    """The logits of the DNN, built in the current variable scope (`dnn` for the canned
    estimators)."""
    training = mode == ModeKeys.TRAIN
    with _v1.variable_scope("input_from_feature_columns", partitioner=input_layer_partitioner):
        net = feature_inputs.input_layer(features, feature_columns)
    for index, width in enumerate(hidden_units):
        with _v1.variable_scope(f"hiddenlayer_{index}") as scope:
            net = _dense(net, width, activation_fn)
            if dropout is not None and training:
                net = tf.nn.dropout(net, rate=dropout)
            if batch_norm:  # TF1's `dnn/hiddenlayer_<i>/batchnorm_<i>/...`
                net = feature_inputs.batch_norm(net, training, f"batchnorm_{index}")
        layer_summaries(net, scope.name)
    with _v1.variable_scope("logits") as scope:
        logits = _dense(net, units)
    layer_summaries(logits, scope.name)
    return logits


def dnn_model_fn(features, labels, mode, head, hidden_units, feature_columns,
                 optimizer="Adagrad", activation_fn=tf.nn.relu, dropout=None,
                 input_layer_partitioner=None, config=None, batch_norm=False):
    """The model_fn of the DNN estimators: `head`'s spec of the DNN's logits."""
    optimizer = optimizers.get_optimizer_instance(optimizer, _LEARNING_RATE)
    feature_inputs.check_features(features)
    with _v1.variable_scope("dnn", values=tuple(features.values()),
                            partitioner=partitioners.min_max(config, mode)):
        input_partitioner = partitioners.min_max(config, mode, input_layer_partitioner,
                                                 min_slice_size=64 << 20)
        logits = dnn_logits(features, mode, head.logits_dimension, hidden_units,
                            feature_columns, activation_fn, dropout, batch_norm,
                            input_partitioner)
        return head.create_estimator_spec(features=features, mode=mode, labels=labels,
                                          optimizer=optimizer, logits=logits)


class DNNClassifier(Estimator):
    """A classifier for TensorFlow DNN models (TF 1.15's `tf.estimator.DNNClassifier`):
    `n_classes=2` uses sigmoid cross entropy, more classes softmax cross entropy."""

    def __init__(self, hidden_units, feature_columns, model_dir=None, n_classes=2,
                 weight_column=None, label_vocabulary=None, optimizer="Adagrad",
                 activation_fn=tf.nn.relu, dropout=None, input_layer_partitioner=None,
                 config=None, warm_start_from=None, loss_reduction=_SUM, batch_norm=False):
        head = heads.classifier_head(n_classes, weight_column, label_vocabulary,
                                     loss_reduction)
        feature_columns = tuple(feature_columns or [])

        super().__init__(model_fn=model_fns.bind(
            dnn_model_fn, head, hidden_units=hidden_units, feature_columns=feature_columns,
            optimizer=optimizer, activation_fn=activation_fn, dropout=dropout,
            input_layer_partitioner=input_layer_partitioner, batch_norm=batch_norm),
            model_dir=model_dir, config=config, warm_start_from=warm_start_from)


class DNNRegressor(Estimator):
    """A regressor for TensorFlow DNN models (TF 1.15's `tf.estimator.DNNRegressor`):
    mean squared error on `label_dimension` outputs."""

    def __init__(self, hidden_units, feature_columns, model_dir=None, label_dimension=1,
                 weight_column=None, optimizer="Adagrad", activation_fn=tf.nn.relu,
                 dropout=None, input_layer_partitioner=None, config=None,
                 warm_start_from=None, loss_reduction=_SUM, batch_norm=False):
        head = heads.RegressionHead(label_dimension, weight_column, loss_reduction)
        feature_columns = tuple(feature_columns or [])

        super().__init__(model_fn=model_fns.bind(
            dnn_model_fn, head, hidden_units=hidden_units, feature_columns=feature_columns,
            optimizer=optimizer, activation_fn=activation_fn, dropout=dropout,
            input_layer_partitioner=input_layer_partitioner, batch_norm=batch_norm),
            model_dir=model_dir, config=config, warm_start_from=warm_start_from)


class DNNEstimator(Estimator):
    """A DNN on a given TF 1.x head (TF 1.15's `tf.estimator.DNNEstimator`), e.g.
    `head=tf.contrib.estimator.multi_label_head(n_classes)`: the head's loss, metrics and
    predictions."""

    def __init__(self, head, hidden_units, feature_columns, model_dir=None,
                 optimizer="Adagrad", activation_fn=tf.nn.relu, dropout=None,
                 input_layer_partitioner=None, config=None, warm_start_from=None,
                 batch_norm=False):
        feature_columns = tuple(feature_columns or [])

        super().__init__(model_fn=model_fns.bind(
            dnn_model_fn, model_fns.checked_head(head), hidden_units=hidden_units,
            feature_columns=feature_columns, optimizer=optimizer, activation_fn=activation_fn,
            dropout=dropout, input_layer_partitioner=input_layer_partitioner,
            batch_norm=batch_norm),
            model_dir=model_dir, config=config, warm_start_from=warm_start_from)
