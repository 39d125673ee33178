"""`tf.estimator.Head` (TF 2.x's v2-style heads, in TF 1.15's `tf.estimator` too): the
abstract head, and what every v2 head's `create_estimator_spec` shares.

A v2 head computes its loss with `loss_reduction` one of `tf.keras.losses.Reduction` (default
SUM_OVER_BATCH_SIZE), reports Keras metrics (`metrics()` creates them, `update_metrics()`
updates them) and trains with a Keras optimizer (`optimizer.get_updates(loss,
trainable_variables)`) or `train_op_fn(loss)`; here a v1 optimizer works too
(`optimizer.minimize(loss, global_step)`). In a model_fn on this package's Estimator the
Keras metrics' variables are local variables (reset per evaluation, never checkpointed),
each given to the Estimator as `(result, result after update)`.
"""
import abc
import inspect

import tensorflow as tf
import tf_keras

from tpu_estimator_compat.api import spec as spec_lib
from tpu_estimator_compat.api.spec import ModeKeys
from tpu_estimator_compat.canned import head_inputs
from tpu_estimator_compat.canned import heads
from tpu_estimator_compat.canned import keys

_v1 = tf.compat.v1
_MK = keys.MetricKeys
Reduction = tf_keras.losses.Reduction
# TF 1.x's names of the same reductions, as `tf.losses.Reduction` of tpu_estimator_compat.v1.
_V1_REDUCTION = {Reduction.SUM_OVER_BATCH_SIZE: _v1.losses.Reduction.SUM_OVER_BATCH_SIZE,
                 Reduction.AUTO: _v1.losses.Reduction.SUM_OVER_BATCH_SIZE,
                 Reduction.SUM: _v1.losses.Reduction.SUM,
                 _v1.losses.Reduction.SUM_OVER_BATCH_SIZE:
                     _v1.losses.Reduction.SUM_OVER_BATCH_SIZE,
                 _v1.losses.Reduction.SUM: _v1.losses.Reduction.SUM}
_LIST_ERROR = "{} should be a list or a tuple. Given type: {}."


def v1_reduction(loss_reduction):
    """The `tf.compat.v1.losses.Reduction` computing `loss_reduction` (TF 2.x's check)."""
    if loss_reduction not in _V1_REDUCTION:
        raise ValueError(f"Invalid loss_reduction: {loss_reduction}. See `tf.losses.Reduction` "
                         "for valid options.")
    return _V1_REDUCTION[loss_reduction]


def check_vocabulary(label_vocabulary):
    if label_vocabulary is not None and not isinstance(label_vocabulary, (list, tuple)):
        raise ValueError("label_vocabulary should be a list or a tuple. Given type: "
                         f"{type(label_vocabulary)}")


def v1_loss_fn(loss_fn, loss_reduction):
    """A v2 `loss_fn` (it may also take `loss_reduction`) as a v1 head calls it."""
    if loss_fn is None:
        return None
    args = [p.name for p in inspect.signature(loss_fn).parameters.values()]
    for required in ("labels", "logits"):
        if required not in args:
            raise ValueError(f"loss_fn must contain argument: {required}. Given arguments: "
                             f"{tuple(args)}")
    unexpected = sorted(set(args) - {"labels", "logits", "features", "loss_reduction"})
    if unexpected:
        raise ValueError(f"loss_fn has unexpected args: {unexpected}")
    extra = {"loss_reduction": loss_reduction} if "loss_reduction" in args else {}
    if "features" in args:
        return lambda labels, logits, features: loss_fn(labels=labels, logits=logits,
                                                        features=features, **extra)
    return lambda labels, logits: loss_fn(labels=labels, logits=logits, **extra)


def check_prediction_keys(pred_keys, valid_keys):
    for key in pred_keys:
        if key not in valid_keys:
            raise ValueError(f"Prediction key must be in PredictionKeys, given: {key}."
                             f"Valid prediction keys include {valid_keys}.")


def add_regularization(training_loss, regularization_losses):
    if regularization_losses is None:
        return training_loss
    return training_loss + tf.add_n(regularization_losses)


def _local_variables(next_creator, **kwargs):
    kwargs.update(collections=[_v1.GraphKeys.LOCAL_VARIABLES], trainable=False)
    return next_creator(**kwargs)


def metric_ops(create, update):
    """`{key: (result, result after every update)}` of the Keras metrics `create()` returns
    (made local variables), updated by `update(metrics)`."""
    with _v1.variable_creator_scope(_local_variables):
        metrics = create()
    updates = []
    for metric in metrics.values():
        metric.update_state = _recording(metric.update_state, updates)
    metrics = update(metrics)
    ops = {}
    for key, metric in metrics.items():
        value = metric.result()
        with tf.control_dependencies(updates):
            ops[key] = (value, tf.identity(metric.result()))
    return ops


def _recording(update_state, updates):
    def recording_update_state(*args, **kwargs):
        op = update_state(*args, **kwargs)
        if op is not None:
            updates.append(op)
        return op
    return recording_update_state


def replica_loss(loss, loss_reduction):
    """`loss` over the number of replicas in sync under SUM_OVER_BATCH_SIZE (a Keras
    optimizer sums the replicas' gradients), as TF 2.x's heads and canned estimators did."""
    replicas = tf.distribute.get_strategy().num_replicas_in_sync
    if loss_reduction == Reduction.SUM_OVER_BATCH_SIZE and replicas > 1:
        return loss * (1. / replicas)
    return loss


def train_op(loss, optimizer, trainable_variables, train_op_fn, update_ops,
             loss_reduction=Reduction.SUM_OVER_BATCH_SIZE):
    """TF 2.x's train op of a head: `optimizer.get_updates(loss, trainable_variables)` of a
    Keras optimizer (its `iterations` made the global step, as TF 2.x's canned estimators
    did; the loss over the replicas, `replica_loss`) or `train_op_fn(loss)`; also a v1
    optimizer's `minimize(loss, global_step)`."""
    if update_ops is not None and not isinstance(update_ops, (list, tuple)):
        raise ValueError(_LIST_ERROR.format("update_ops", type(update_ops)))
    with _v1.name_scope(""), tf.name_scope("training"):
        if optimizer is not None:
            if train_op_fn is not None:
                raise ValueError("train_op_fn and optimizer cannot both be set.")
            if isinstance(optimizer, _v1.train.Optimizer):
                op = optimizer.minimize(loss, global_step=_v1.train.get_global_step())
            else:
                op = _keras_updates(replica_loss(loss, loss_reduction), optimizer,
                                    trainable_variables)
        elif train_op_fn is not None:
            op = train_op_fn(loss)
        else:
            raise ValueError("train_op_fn and optimizer cannot both be None.")
        return tf.group(op, *update_ops) if update_ops is not None else op


def _keras_updates(loss, optimizer, trainable_variables):
    if not hasattr(optimizer, "get_updates"):
        raise ValueError(
            "The given optimizer is not a tf.keras.optimizers.Optimizer instance. Received "
            f"optimizer of type {type(optimizer)}. Use a v1 optimizer (tf.compat.v1.train.*), "
            "a legacy Keras optimizer (tf.keras.optimizers.legacy.*) with "
            "trainable_variables=, or train_op_fn=.")
    if trainable_variables is None:
        raise ValueError(f"trainable_variables cannot be None. Given {trainable_variables}")
    if not isinstance(trainable_variables, (list, tuple)):
        raise ValueError(_LIST_ERROR.format("trainable_variables", type(trainable_variables)))
    counting_steps(optimizer)
    return optimizer.get_updates(loss, trainable_variables)[0]


def counting_steps(optimizer):
    """`optimizer` (a Keras one) with the global step as its `iterations`, as TF 2.x's
    canned estimators made it (set once: an optimizer is reused by every trace)."""
    step = _v1.train.get_or_create_global_step()
    if not any(weight is step for weight in optimizer.weights):
        optimizer.iterations = step
    return optimizer


def summaries(head_name, loss, regularization_losses):
    with _v1.name_scope(""):
        _v1.summary.scalar(_summary_key(head_name, _MK.LOSS), loss)
        if regularization_losses is not None:
            _v1.summary.scalar(_summary_key(head_name, _MK.LOSS_REGULARIZATION),
                               tf.add_n(regularization_losses))


def _summary_key(head_name, key):
    return f"{key}/{head_name}" if head_name else key


class Head(abc.ABC):
    """`tf.estimator.Head`: given logits, the loss, predictions, metrics and spec of a model."""

    @property
    @abc.abstractmethod
    def name(self):
        """The head's name (suffixes its metric keys), or None."""

    @property
    @abc.abstractmethod
    def logits_dimension(self):
        """The size of the last dimension of the logits."""

    @property
    @abc.abstractmethod
    def loss_reduction(self):
        """One of `tf.losses.Reduction` (TF 2.x's)."""

    @abc.abstractmethod
    def loss(self, labels, logits, features=None, mode=None, regularization_losses=None):
        """The reduced training loss plus the regularization losses."""

    @abc.abstractmethod
    def predictions(self, logits, keys=None):
        """The dict of predictions (those of `keys`, or all)."""

    @abc.abstractmethod
    def metrics(self, regularization_losses=None):
        """A dict of new Keras metrics, by metric key."""

    @abc.abstractmethod
    def update_metrics(self, eval_metrics, features, logits, labels,
                       regularization_losses=None, mode=None):
        """`eval_metrics` updated with a batch; returns them. (TF 2.x's heads took
        `regularization_losses` fifth; `mode`, unused, is accepted by name.)"""

    def _summary_key(self, key):
        return _summary_key(self.name, key)

    def create_estimator_spec(self, features, mode, logits, labels=None, optimizer=None,
                              trainable_variables=None, train_op_fn=None, update_ops=None,
                              regularization_losses=None):
        """The `EstimatorSpec` of `mode`."""
        try:
            tpu_spec = self._create_tpu_estimator_spec(
                features, mode, logits, labels=labels, optimizer=optimizer,
                trainable_variables=trainable_variables, train_op_fn=train_op_fn,
                update_ops=update_ops, regularization_losses=regularization_losses)
        except NotImplementedError:
            raise NotImplementedError(
                "Subclasses of Head must implement `create_estimator_spec()` or "
                "_create_tpu_estimator_spec().") from None
        return tpu_spec.as_estimator_spec()

    def _create_tpu_estimator_spec(self, features, mode, logits, labels=None, optimizer=None,
                                   trainable_variables=None, train_op_fn=None,
                                   update_ops=None, regularization_losses=None):
        raise NotImplementedError("TPUEstimatorSpec not available for this model head.")


class V1BackedHead(Head):
    """A v2 head computing with the TF 1.x head `self._head` (same loss arithmetic)."""

    def __init__(self, loss_reduction, v1_head):
        self._loss_reduction = loss_reduction
        self._head = v1_head

    @property
    def name(self):
        return self._head.name

    @property
    def logits_dimension(self):
        return self._head.logits_dimension

    @property
    def loss_reduction(self):
        return self._loss_reduction

    def _loss_spec(self, labels, logits, features):
        logits = head_inputs.checked_logits(logits, self.logits_dimension)
        return logits, self._head.create_loss(features or {}, None, logits, labels)

    def loss(self, labels, logits, features=None, mode=None, regularization_losses=None):
        del mode
        _, spec = self._loss_spec(labels, logits, features)
        return add_regularization(spec.training_loss, regularization_losses)

    def predictions(self, logits, keys=None):
        valid_keys = list(self._valid_prediction_keys())
        if keys:
            check_prediction_keys(keys, valid_keys)
        logits = head_inputs.checked_logits(logits, self.logits_dimension)
        with tf.name_scope("predictions"):
            predictions = self._all_predictions(logits)
        return {k: v for k, v in predictions.items() if k in (keys or valid_keys)}

    def _all_predictions(self, logits):
        return self._head._predictions(logits)  # pylint: disable=protected-access

    def update_metrics(self, eval_metrics, features, logits, labels,
                       regularization_losses=None, mode=None):
        del mode
        logits, spec = self._loss_spec(labels, logits, features)
        self._update(eval_metrics, spec, self._all_predictions(logits))
        if regularization_losses is not None:
            eval_metrics[self._summary_key(_MK.LOSS_REGULARIZATION)].update_state(
                values=tf.add_n(regularization_losses))
        return eval_metrics

    def _create_tpu_estimator_spec(self, features, mode, logits, labels=None, optimizer=None,
                                   trainable_variables=None, train_op_fn=None,
                                   update_ops=None, regularization_losses=None):
        with tf.name_scope(self.name or "head"):
            predictions = self.predictions(logits)
            if mode == ModeKeys.PREDICT:
                return spec_lib.TPUEstimatorSpec(
                    mode, predictions=predictions,
                    export_outputs=self._head._export_outputs(  # pylint: disable=protected-access
                        predictions))
            logits, spec = self._loss_spec(labels, logits, features)
            loss = add_regularization(spec.training_loss, regularization_losses)
            if mode == ModeKeys.EVAL:
                tensors = {"logits": logits, "unreduced_loss": spec.unreduced_loss,
                           "weights": tf.convert_to_tensor(spec.weights, tf.float32),
                           "labels": spec.processed_labels}
                if regularization_losses is not None:
                    tensors["regularization_loss"] = tf.add_n(regularization_losses)
                return spec_lib.TPUEstimatorSpec(
                    mode, predictions=predictions, loss=loss,
                    eval_metrics=(self._metric_fn(regularization_losses is not None), tensors))
            op = train_op(loss, optimizer, trainable_variables, train_op_fn, update_ops,
                          self.loss_reduction)
        summaries(self.name, loss, regularization_losses)
        return spec_lib.TPUEstimatorSpec(mode, predictions=predictions, loss=loss, train_op=op)

    def _metric_fn(self, regularized):
        def metric_fn(logits, unreduced_loss, weights, labels, regularization_loss=None):
            spec = heads.LossSpec(None, unreduced_loss, weights, labels)

            def update(metrics):
                self._update(metrics, spec, self._all_predictions(logits))
                if regularization_loss is not None:
                    metrics[self._summary_key(_MK.LOSS_REGULARIZATION)].update_state(
                        values=regularization_loss)
                return metrics

            return metric_ops(lambda: self.metrics([0.] if regularized else None), update)
        return metric_fn
