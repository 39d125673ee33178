"""`DNNLinearCombinedClassifier`, `DNNLinearCombinedRegressor` and
`DNNLinearCombinedEstimator` (TF 1.15's wide & deep v1 classes; the last takes a TF 1.x head
such as `tf.contrib.estimator`'s): the sum of a DNN's logits (`dnn/...`, Adagrad with learning rate 0.001 by
default) and a linear model's (`linear/...`, FTRL with min(0.005, 1 / sqrt(number of
linear columns))), each optimizer training its own variables, then one global step."""
import math

import tensorflow as tf

from tpu_estimator_compat.canned import dnn
from tpu_estimator_compat.canned import feature_inputs
from tpu_estimator_compat.canned import heads
from tpu_estimator_compat.canned import linear
from tpu_estimator_compat.canned import model_fns
from tpu_estimator_compat.canned import optimizers
from tpu_estimator_compat.canned import partitioners
from tpu_estimator_compat.estimator import Estimator

_v1 = tf.compat.v1
_DNN_LEARNING_RATE = 0.001
_LINEAR_LEARNING_RATE = 0.005
_SUM = _v1.losses.Reduction.SUM


def _checked_optimizer(optimizer, learning_rate):
    optimizer = optimizers.get_optimizer_instance(optimizer, learning_rate)
    if isinstance(optimizer, _v1.train.SyncReplicasOptimizer):
        raise ValueError(
            "SyncReplicasOptimizer does not support multi optimizers case. Therefore, it is "
            "not supported in DNNLinearCombined model. If you want to use this optimizer, "
            "please use either DNN or Linear model.")
    return optimizer


def check_columns(linear_feature_columns, dnn_feature_columns):
    if not list(linear_feature_columns or []) + list(dnn_feature_columns or []):
        raise ValueError("Either linear_feature_columns or dnn_feature_columns must be "
                         "defined.")


def linear_summaries(logits):
    """TF1's `linear/fraction_of_zero_values` and `linear/activation` of the linear logits."""
    dnn.layer_summaries(logits, "linear")


def dnn_linear_combined_model_fn(features, labels, mode, head, linear_feature_columns=None,
                                 linear_optimizer="Ftrl", dnn_feature_columns=None,
                                 dnn_optimizer="Adagrad", dnn_hidden_units=None,
                                 dnn_activation_fn=tf.nn.relu, dnn_dropout=None,
                                 input_layer_partitioner=None, config=None, batch_norm=False,
                                 linear_sparse_combiner="sum"):
    """The model_fn of the wide & deep estimators: `head`'s spec of the summed logits."""
    feature_inputs.check_features(features)
    check_columns(linear_feature_columns, dnn_feature_columns)
    input_layer_partitioner = partitioners.min_max(config, mode, input_layer_partitioner,
                                                   min_slice_size=64 << 20)
    parts = []  # (logits, optimizer, variable scope name)
    if dnn_feature_columns:
        optimizer = _checked_optimizer(dnn_optimizer, _DNN_LEARNING_RATE)
        if not dnn_hidden_units:
            raise ValueError("dnn_hidden_units must be defined when dnn_feature_columns is "
                             "specified.")
        with _v1.variable_scope("dnn", values=tuple(features.values()),
                                partitioner=partitioners.min_max(config, mode)) as scope:
            parts.append((dnn.dnn_logits(
                features, mode, head.logits_dimension, dnn_hidden_units, dnn_feature_columns,
                dnn_activation_fn, dnn_dropout, batch_norm, input_layer_partitioner),
                          optimizer, scope.name))
    if linear_feature_columns:
        optimizer = _checked_optimizer(linear_optimizer, min(
            _LINEAR_LEARNING_RATE, 1. / math.sqrt(len(linear_feature_columns))))
        with _v1.variable_scope("linear", values=tuple(features.values()),
                                partitioner=input_layer_partitioner) as scope:
            logits = linear.linear_logits(features, head.logits_dimension,
                                          linear_feature_columns, linear_sparse_combiner)
            linear_summaries(logits)
            parts.append((logits, optimizer, scope.name))

    def _train_op_fn(loss):
        train_ops = [optimizer.minimize(loss, var_list=_v1.get_collection(
            _v1.GraphKeys.TRAINABLE_VARIABLES, scope=scope_name))
                     for _, optimizer, scope_name in parts]
        with tf.control_dependencies([tf.group(*train_ops)]):
            return _v1.assign_add(_v1.train.get_global_step(), 1).op

    return head.create_estimator_spec(
        features=features, mode=mode, labels=labels, train_op_fn=_train_op_fn,
        logits=tf.add_n([logits for logits, _, _ in parts]) if len(parts) > 1
        else parts[0][0])


class DNNLinearCombinedClassifier(Estimator):
    """Wide & deep classifier (TF 1.15's `tf.estimator.DNNLinearCombinedClassifier`)."""

    def __init__(self, model_dir=None, linear_feature_columns=None, linear_optimizer="Ftrl",
                 dnn_feature_columns=None, dnn_optimizer="Adagrad", dnn_hidden_units=None,
                 dnn_activation_fn=tf.nn.relu, dnn_dropout=None, n_classes=2,
                 weight_column=None, label_vocabulary=None, input_layer_partitioner=None,
                 config=None, warm_start_from=None, loss_reduction=_SUM, batch_norm=False,
                 linear_sparse_combiner="sum"):
        check_columns(linear_feature_columns, dnn_feature_columns)
        head = heads.classifier_head(n_classes, weight_column, label_vocabulary,
                                     loss_reduction)

        super().__init__(model_fn=model_fns.bind(
            dnn_linear_combined_model_fn, head, linear_feature_columns=linear_feature_columns,
            linear_optimizer=linear_optimizer, dnn_feature_columns=dnn_feature_columns,
            dnn_optimizer=dnn_optimizer, dnn_hidden_units=dnn_hidden_units,
            dnn_activation_fn=dnn_activation_fn, dnn_dropout=dnn_dropout,
            input_layer_partitioner=input_layer_partitioner, batch_norm=batch_norm,
            linear_sparse_combiner=linear_sparse_combiner),
            model_dir=model_dir, config=config, warm_start_from=warm_start_from)


class DNNLinearCombinedRegressor(Estimator):
    """Wide & deep regressor (TF 1.15's `tf.estimator.DNNLinearCombinedRegressor`)."""

    def __init__(self, model_dir=None, linear_feature_columns=None, linear_optimizer="Ftrl",
                 dnn_feature_columns=None, dnn_optimizer="Adagrad", dnn_hidden_units=None,
                 dnn_activation_fn=tf.nn.relu, dnn_dropout=None, label_dimension=1,
                 weight_column=None, input_layer_partitioner=None, config=None,
                 warm_start_from=None, loss_reduction=_SUM, batch_norm=False,
                 linear_sparse_combiner="sum"):
        check_columns(linear_feature_columns, dnn_feature_columns)
        head = heads.RegressionHead(label_dimension, weight_column, loss_reduction)

        super().__init__(model_fn=model_fns.bind(
            dnn_linear_combined_model_fn, head, linear_feature_columns=linear_feature_columns,
            linear_optimizer=linear_optimizer, dnn_feature_columns=dnn_feature_columns,
            dnn_optimizer=dnn_optimizer, dnn_hidden_units=dnn_hidden_units,
            dnn_activation_fn=dnn_activation_fn, dnn_dropout=dnn_dropout,
            input_layer_partitioner=input_layer_partitioner, batch_norm=batch_norm,
            linear_sparse_combiner=linear_sparse_combiner),
            model_dir=model_dir, config=config, warm_start_from=warm_start_from)


class DNNLinearCombinedEstimator(Estimator):
    """Wide & deep on a given TF 1.x head (TF 1.15's
    `tf.estimator.DNNLinearCombinedEstimator`), e.g.
    `head=tf.contrib.estimator.multi_class_head(n_classes)`; `batch_norm` (after TF 1.15's
    arguments) as TF 2.x's `tf.compat.v1.estimator.DNNLinearCombinedEstimator` added it."""

    def __init__(self, head, model_dir=None, linear_feature_columns=None,
                 linear_optimizer="Ftrl", dnn_feature_columns=None, dnn_optimizer="Adagrad",
                 dnn_hidden_units=None, dnn_activation_fn=tf.nn.relu, dnn_dropout=None,
                 input_layer_partitioner=None, config=None, linear_sparse_combiner="sum",
                 batch_norm=False):
        check_columns(linear_feature_columns, dnn_feature_columns)

        super().__init__(model_fn=model_fns.bind(
            dnn_linear_combined_model_fn, model_fns.checked_head(head),
            linear_feature_columns=linear_feature_columns, linear_optimizer=linear_optimizer,
            dnn_feature_columns=dnn_feature_columns, dnn_optimizer=dnn_optimizer,
            dnn_hidden_units=dnn_hidden_units, dnn_activation_fn=dnn_activation_fn,
            dnn_dropout=dnn_dropout, input_layer_partitioner=input_layer_partitioner,
            batch_norm=batch_norm, linear_sparse_combiner=linear_sparse_combiner),
            model_dir=model_dir, config=config)
