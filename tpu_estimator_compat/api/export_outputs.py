"""Export outputs (`tf.estimator.export.*Output`): the public types a model_fn returns in
`export_outputs`, each able to build its SignatureDef (`signatures.py` builds the map).

Everything here runs in graph mode: the tensors are graph tensors of the export graph,
and SignatureDefs are built with `tf.compat.v1.saved_model` utilities.
"""
import abc

import tensorflow as tf

_sm = tf.compat.v1.saved_model
_SIGNATURE_UTILS = _sm.signature_def_utils

DEFAULT_SERVING_KEY = _sm.DEFAULT_SERVING_SIGNATURE_DEF_KEY  # 'serving_default'
SUPERVISED_TRAIN_METHOD = "tensorflow/supervised/training"
SUPERVISED_EVAL_METHOD = "tensorflow/supervised/eval"


def _is_tensor(value):
    return isinstance(value, tf.Tensor)


class ExportOutput(abc.ABC):
    """One servable output of a model (a model head), turned into a SignatureDef on export."""

    _SEPARATOR_CHAR = "/"

    @abc.abstractmethod
    def as_signature_def(self, receiver_tensors):
        """Returns the SignatureDef of this output fed by `receiver_tensors`.

        Args:
          receiver_tensors: dict of string to `Tensor`, the signature's inputs.
        """

    def _check_output_key(self, key, error_label):
        if isinstance(key, tuple):  # Multi-head models key outputs by tuples.
            key = self._SEPARATOR_CHAR.join(key)
        if not isinstance(key, str):
            raise ValueError(f"{error_label} output key must be a string; got {key}.")
        return key

    def _wrap_and_check_outputs(self, outputs, single_output_default_name, error_label=None):
        """A fresh `{str: Tensor}` dict from a tensor or a dict of tensors."""
        if not isinstance(outputs, dict):
            outputs = {single_output_default_name: outputs}
        error_name = error_label or single_output_default_name
        checked = {}
        for key, value in outputs.items():
            key = self._check_output_key(key, error_name)
            if not _is_tensor(value):
                raise ValueError(f"{error_name} output value must be a Tensor; got {value}.")
            checked[key] = value
        return checked


def _single_string_input(receiver_tensors, kind):
    """The one string receiver tensor a Classify/Regress signature reads tf.Examples from."""
    if len(receiver_tensors) == 1:
        (examples,) = receiver_tensors.values()
        if tf.as_dtype(examples.dtype) == tf.string:
            return examples
    raise ValueError(f"{kind} input must be a single string Tensor; got {receiver_tensors}")


class ClassificationOutput(ExportOutput):
    """The output of a classification head: string `classes` and/or float `scores`.

    Only `classes`: top-k labels in descending order. Only `scores`: one score per class
    id. Both: zipped, each score belongs to the class at the same index.
    """

    def __init__(self, scores=None, classes=None):
        """Checks and stores the outputs.

        Args:
          scores: float `Tensor` of class scores, or None if `classes` is set.
          classes: string `Tensor` of class labels, or None if `scores` is set.

        Raises:
          ValueError: both are None, or one has the wrong type.
        """
        if scores is not None and not (_is_tensor(scores) and scores.dtype.is_floating):
            raise ValueError(f"Classification scores must be a float32 Tensor; got {scores}")
        if classes is not None and not (
                _is_tensor(classes) and tf.as_dtype(classes.dtype) == tf.string):
            raise ValueError(f"Classification classes must be a string Tensor; got {classes}")
        if scores is None and classes is None:
            raise ValueError("At least one of scores and classes must be set.")
        self._scores = scores
        self._classes = classes

    @property
    def scores(self):
        return self._scores

    @property
    def classes(self):
        return self._classes

    def as_signature_def(self, receiver_tensors):
        examples = _single_string_input(receiver_tensors, "Classification")
        return _SIGNATURE_UTILS.classification_signature_def(
            examples, self.classes, self.scores)


class RegressionOutput(ExportOutput):
    """The output of a regression head: one float `Tensor`."""

    def __init__(self, value):
        """Checks and stores the output.

        Args:
          value: float `Tensor` of predicted values.

        Raises:
          ValueError: `value` is not a floating-point `Tensor`.
        """
        if not (_is_tensor(value) and value.dtype.is_floating):
            raise ValueError(f"Regression output value must be a float32 Tensor; got {value}")
        self._value = value

    @property
    def value(self):
        return self._value

    def as_signature_def(self, receiver_tensors):
        examples = _single_string_input(receiver_tensors, "Regression")
        return _SIGNATURE_UTILS.regression_signature_def(examples, self.value)


class PredictOutput(ExportOutput):
    """The output of a generic prediction head: a tensor or a dict of named tensors."""

    _SINGLE_OUTPUT_DEFAULT_NAME = "output"

    def __init__(self, outputs):
        """Checks and stores the outputs.

        Args:
          outputs: a `Tensor` (exported as `output`) or a dict of string to `Tensor`.

        Raises:
          ValueError: a key is not a string or a value is not a `Tensor`.
        """
        self._outputs = self._wrap_and_check_outputs(
            outputs, self._SINGLE_OUTPUT_DEFAULT_NAME, error_label="Prediction")

    @property
    def outputs(self):
        return self._outputs

    def as_signature_def(self, receiver_tensors):
        return _SIGNATURE_UTILS.predict_signature_def(receiver_tensors, self.outputs)


class _SupervisedOutput(ExportOutput):
    """Loss, predictions and metrics of a training or eval graph (`train`/`eval` exports)."""

    LOSS_NAME = "loss"
    PREDICTIONS_NAME = "predictions"
    METRICS_NAME = "metrics"
    METRIC_VALUE_SUFFIX = "value"
    METRIC_UPDATE_SUFFIX = "update_op"
    _METHOD_NAME = None

    def __init__(self, loss=None, predictions=None, metrics=None):
        """Checks and stores the outputs under `loss/`, `predictions/` and `metrics/` keys.

        Args:
          loss: a `Tensor` or a dict of them.
          predictions: a `Tensor` or a dict of them.
          metrics: a `(value, update_op)` tuple or a dict of them.

        Raises:
          ValueError: a key is not a string, or a value has the wrong type.
        """
        self._loss = self._predictions = self._metrics = None
        if loss is not None:
            self._loss = self._prefixed(
                self._wrap_and_check_outputs(loss, self.LOSS_NAME), self.LOSS_NAME)
        if predictions is not None:
            self._predictions = self._prefixed(
                self._wrap_and_check_outputs(predictions, self.PREDICTIONS_NAME),
                self.PREDICTIONS_NAME)
        if metrics is not None:
            self._metrics = self._wrap_and_check_metrics(metrics)

    def _prefix_key(self, key, prefix):
        return key if key.startswith(prefix) else prefix + self._SEPARATOR_CHAR + key

    def _prefixed(self, outputs, prefix):
        return {self._prefix_key(key, prefix): value for key, value in outputs.items()}

    def _wrap_and_check_metrics(self, metrics):
        if not isinstance(metrics, dict):
            metrics = {self.METRICS_NAME: metrics}
        outputs = {}
        for key, (value, update_op) in metrics.items():
            key = self._prefix_key(self._check_output_key(key, self.METRICS_NAME),
                                   self.METRICS_NAME)
            if not _is_tensor(value):
                raise ValueError(f"{key} output value must be a Tensor; got {value}.")
            if not (_is_tensor(update_op) or isinstance(update_op, tf.Operation)):
                raise ValueError(
                    f"{key} update_op must be a Tensor or Operation; got {update_op}.")
            if not _is_tensor(update_op):
                # SignatureDefs hold tensors only: wrap the op in an empty constant.
                with tf.control_dependencies([update_op]):
                    update_op = tf.constant([], name="metric_op_wrapper")
            outputs[key + self._SEPARATOR_CHAR + self.METRIC_VALUE_SUFFIX] = value
            outputs[key + self._SEPARATOR_CHAR + self.METRIC_UPDATE_SUFFIX] = update_op
        return outputs

    @property
    def loss(self):
        return self._loss

    @property
    def predictions(self):
        return self._predictions

    @property
    def metrics(self):
        return self._metrics

    def as_signature_def(self, receiver_tensors):
        if not receiver_tensors:
            raise ValueError(f"{self._METHOD_NAME} `inputs` cannot be None or empty.")
        outputs = {}
        for group in (self.loss, self.predictions, self.metrics):
            outputs.update(group or {})
        return _SIGNATURE_UTILS.build_signature_def(
            {k: _sm.build_tensor_info(t) for k, t in receiver_tensors.items()},
            {k: _sm.build_tensor_info(t) for k, t in outputs.items()},
            self._METHOD_NAME)


class TrainOutput(_SupervisedOutput):
    """The output of a supervised training graph (signature method `supervised/training`)."""

    _METHOD_NAME = SUPERVISED_TRAIN_METHOD


class EvalOutput(_SupervisedOutput):
    """The output of a supervised eval graph (signature method `supervised/eval`)."""

    _METHOD_NAME = SUPERVISED_EVAL_METHOD


def get_export_outputs(export_outputs, predictions):
    """Validates `export_outputs`, or makes the default `{'serving_default': PredictOutput}`.

    A single output under another key is also registered as `serving_default`.

    Args:
      export_outputs: dict of string to `ExportOutput`, or None.
      predictions: a `Tensor` or dict of them, used when `export_outputs` is None.

    Returns:
      The validated dict (the given one, updated in place, as the original did).

    Raises:
      TypeError: `export_outputs` is not a dict of `ExportOutput`.
      ValueError: several outputs and none is `serving_default`.
    """
    if export_outputs is None:
        export_outputs = {DEFAULT_SERVING_KEY: PredictOutput(predictions)}
    if not isinstance(export_outputs, dict):
        raise TypeError(f"`export_outputs` must be dict, received: {export_outputs}.")
    for value in export_outputs.values():
        if not isinstance(value, ExportOutput):
            raise TypeError(
                "Values in `export_outputs` must be ExportOutput objects, "
                f"received: {export_outputs}.")
    if len(export_outputs) == 1:
        (only,) = export_outputs.values()
        export_outputs.setdefault(DEFAULT_SERVING_KEY, only)
    elif DEFAULT_SERVING_KEY not in export_outputs:
        raise ValueError(
            "Multiple `export_outputs` were provided, but none of them are specified as "
            "the default. Use`tf.saved_model.DEFAULT_SERVING_SIGNATURE_DEF_KEY` to specify "
            "a default.")
    return export_outputs
