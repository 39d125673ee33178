"""The model_fns of TF 2.x's V2 canned estimators (TF 2.15's `dnn_model_fn_v2`,
`_linear_model_fn_v2`, `_dnn_linear_combined_model_fn_v2`, `_baseline_model_fn_v2`): a v2
head's spec of the models' logits, trained by legacy Keras optimizers whose `iterations`
is the global step.

Default optimizers as TF 2.15 built them: the DNN's 'Adagrad' at Keras's default rate
(0.001); the linear model's 'Ftrl' at 0.2 (no optimizer at all: FTRL at min(0.2, 1 /
sqrt(number of columns))); wide & deep's Adagrad at 0.001 and FTRL at min(0.005, 1 /
sqrt(number of linear columns)) (an `iter` variable of its own); the baseline's at 0.3.
"""
import math

import tensorflow as tf
import tf_keras

from tpu_estimator_compat.api.spec import ModeKeys
from tpu_estimator_compat.canned import baseline
from tpu_estimator_compat.canned import dnn_linear_combined
from tpu_estimator_compat.canned import feature_inputs
from tpu_estimator_compat.canned import optimizers
from tpu_estimator_compat.canned import v2_head_base
from tpu_estimator_compat.canned import v2_models

_BATCH_MEAN = tf_keras.losses.Reduction.SUM_OVER_BATCH_SIZE
_LINEAR_LEARNING_RATE = 0.2
_WIDE_DEEP_DNN_LEARNING_RATE = 0.001
_WIDE_DEEP_LINEAR_LEARNING_RATE = 0.005
_BASELINE_LEARNING_RATE = 0.3


def _training_optimizer(optimizer, mode, learning_rate=None, counts_steps=True):
    """The Keras optimizer of a TRAIN step (its iterations the global step when
    `counts_steps`), None in the other modes."""
    if mode != ModeKeys.TRAIN:
        return None
    optimizer = optimizers.get_optimizer_instance_v2(optimizer, learning_rate)
    return v2_head_base.counting_steps(optimizer) if counts_steps else optimizer


def dnn_model_fn_v2(features, labels, mode, head, hidden_units, feature_columns,
                    optimizer="Adagrad", activation_fn=tf.nn.relu, dropout=None, config=None,
                    batch_norm=False):
    """The model_fn of the V2 DNN estimators."""
    del config
    feature_inputs.check_features(features)
    logits, variables, update_ops = v2_models.dnn_logits(
        features, mode, head.logits_dimension, hidden_units, feature_columns, activation_fn,
        dropout, batch_norm)
    return head.create_estimator_spec(
        features=features, mode=mode, labels=labels, logits=logits,
        optimizer=_training_optimizer(optimizer, mode), trainable_variables=variables,
        update_ops=update_ops)


def _default_linear_optimizer(feature_columns):
    rate = min(_LINEAR_LEARNING_RATE, 1.0 / math.sqrt(len(feature_columns)))
    return tf_keras.optimizers.legacy.Ftrl(learning_rate=rate)


def linear_model_fn_v2(features, labels, mode, head, feature_columns, optimizer, config,
                       sparse_combiner="sum"):
    """The model_fn of the V2 linear estimators."""
    del config
    feature_inputs.check_features(features)
    logits, variables = v2_models.linear_logits(features, head.logits_dimension,
                                                feature_columns, sparse_combiner)
    optimizer = _training_optimizer(
        optimizer or _default_linear_optimizer(feature_columns), mode, _LINEAR_LEARNING_RATE)
    return head.create_estimator_spec(features=features, mode=mode, labels=labels,
                                      logits=logits, optimizer=optimizer,
                                      trainable_variables=variables)


def dnn_linear_combined_model_fn_v2(
        features, labels, mode, head, linear_feature_columns=None, linear_optimizer="Ftrl",
        dnn_feature_columns=None, dnn_optimizer="Adagrad", dnn_hidden_units=None,
        dnn_activation_fn=tf.nn.relu, dnn_dropout=None, config=None, batch_norm=False,
        linear_sparse_combiner="sum", loss_reduction=_BATCH_MEAN):
    """The model_fn of the V2 wide & deep estimators: each optimizer trains its model's
    variables; the DNN's counts the steps (the linear one's has its own `iter`)."""
    del config
    feature_inputs.check_features(features)
    dnn_linear_combined.check_columns(linear_feature_columns, dnn_feature_columns)
    parts = []  # (logits, variables, update ops, optimizer)
    if dnn_feature_columns:
        optimizer = _training_optimizer(dnn_optimizer, mode, _WIDE_DEEP_DNN_LEARNING_RATE)
        if not dnn_hidden_units:
            raise ValueError("dnn_hidden_units must be defined when dnn_feature_columns is "
                             "specified.")
        parts.append((*v2_models.dnn_logits(
            features, mode, head.logits_dimension, dnn_hidden_units, dnn_feature_columns,
            dnn_activation_fn, dnn_dropout, batch_norm), optimizer))
    if linear_feature_columns:
        optimizer = _training_optimizer(
            linear_optimizer, mode,
            min(_WIDE_DEEP_LINEAR_LEARNING_RATE, 1. / math.sqrt(len(linear_feature_columns))),
            counts_steps=not dnn_feature_columns)
        logits, variables = v2_models.linear_logits(
            features, head.logits_dimension, linear_feature_columns, linear_sparse_combiner)
        dnn_linear_combined.linear_summaries(logits)
        parts.append((logits, variables, [], optimizer))

    def _train_op_fn(loss):
        loss = v2_head_base.replica_loss(loss, loss_reduction)
        updates = []
        for _, variables, update_ops, optimizer in parts:
            updates += optimizer.get_updates(loss, variables) + list(update_ops or [])
        return tf.group(*updates)

    return head.create_estimator_spec(
        features=features, mode=mode, labels=labels, train_op_fn=_train_op_fn,
        logits=tf.add_n([part[0] for part in parts]) if len(parts) > 1 else parts[0][0])


def baseline_model_fn_v2(features, labels, mode, head, optimizer, weight_column=None,
                         config=None, loss_reduction=_BATCH_MEAN):
    """The model_fn of the V2 baseline estimators."""
    del config
    logits, bias = baseline.baseline_logits(features, head.logits_dimension, weight_column)
    optimizer = _training_optimizer(optimizer, mode, _BASELINE_LEARNING_RATE)

    def _train_op_fn(loss):
        return optimizer.get_updates(v2_head_base.replica_loss(loss, loss_reduction), [bias])[0]

    return head.create_estimator_spec(features=features, mode=mode, logits=logits,
                                      labels=labels, train_op_fn=_train_op_fn)
