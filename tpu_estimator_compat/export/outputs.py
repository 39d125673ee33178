"""Export outputs (`tf.estimator.export.*Output`) and the SignatureDef map built from them.

Everything here runs in graph mode: the tensors are graph tensors of the export graph,
and SignatureDefs are built with `tf.compat.v1.saved_model` utilities.
"""
import abc
import collections

import tensorflow as tf

from tpu_estimator_compat import log as logging

_sm = tf.compat.v1.saved_model
_SIGNATURE_UTILS = _sm.signature_def_utils

DEFAULT_SERVING_KEY = _sm.DEFAULT_SERVING_SIGNATURE_DEF_KEY  # 'serving_default'
SINGLE_RECEIVER_DEFAULT_NAME = "input"

# `ModeKeys` values; spelled out because spec.py imports this module.
_TRAIN, _EVAL, _PREDICT = "train", "eval", "infer"
_SUPERVISED_TRAIN_METHOD = "tensorflow/supervised/training"
_SUPERVISED_EVAL_METHOD = "tensorflow/supervised/eval"
SIGNATURE_KEY_FOR_MODE = {_PREDICT: DEFAULT_SERVING_KEY, _TRAIN: "train", _EVAL: "eval"}
_FRIENDLY_METHOD_NAMES = {
    _sm.CLASSIFY_METHOD_NAME: "Classify",
    _sm.REGRESS_METHOD_NAME: "Regress",
    _sm.PREDICT_METHOD_NAME: "Predict",
    _SUPERVISED_TRAIN_METHOD: "Train",
    _SUPERVISED_EVAL_METHOD: "Eval",
}


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

    _METHOD_NAME = _SUPERVISED_TRAIN_METHOD


class EvalOutput(_SupervisedOutput):
    """The output of a supervised eval graph (signature method `supervised/eval`)."""

    _METHOD_NAME = _SUPERVISED_EVAL_METHOD


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


def export_outputs_for_mode(mode, serving_export_outputs=None, predictions=None, loss=None,
                            metrics=None):
    """The `{signature_key: ExportOutput}` dict exported for `mode` ('infer'/'train'/'eval')."""
    if mode not in SIGNATURE_KEY_FOR_MODE:
        raise ValueError(f"Export output type not found for `mode`: {mode}. Expected one "
                         f"of: {list(SIGNATURE_KEY_FOR_MODE)}.")
    if mode == _PREDICT:
        return get_export_outputs(serving_export_outputs, predictions)
    output_class = TrainOutput if mode == _TRAIN else EvalOutput
    return {SIGNATURE_KEY_FOR_MODE[mode]: output_class(
        loss=loss, predictions=predictions, metrics=metrics)}


def _as_receiver_dict(receiver_tensors):
    if isinstance(receiver_tensors, dict):
        return receiver_tensors
    return {SINGLE_RECEIVER_DEFAULT_NAME: receiver_tensors}


def _tensors_of(tensor_info, graph):
    """The graph tensors a `TensorInfo` names (all components of a composite)."""
    encoding = tensor_info.WhichOneof("encoding")
    if encoding == "name":
        return [graph.get_tensor_by_name(tensor_info.name)]
    if encoding == "coo_sparse":
        sparse = tensor_info.coo_sparse
        return [graph.get_tensor_by_name(name) for name in (
            sparse.values_tensor_name, sparse.indices_tensor_name,
            sparse.dense_shape_tensor_name)]
    return [t for component in tensor_info.composite_tensor.components
            for t in _tensors_of(component, graph)]


def _check_servable(inputs, signature):
    """Raises ValueError if an output needs a placeholder that is not a signature input."""
    fed_tensors = tf.nest.flatten(list(inputs.values()), expand_composites=True)
    graph = fed_tensors[0].graph
    fed = {t.ref() for t in fed_tensors}
    outputs = [t for info in signature.outputs.values() for t in _tensors_of(info, graph)]
    seen, stack = set(), [t.op for t in outputs if t.ref() not in fed]
    while stack:
        op = stack.pop()
        if op in seen:
            continue
        seen.add(op)
        if op.type == "Placeholder" and not all(t.ref() in fed for t in op.outputs):
            raise ValueError(
                f"The signature's input tensors {[t.name for t in fed_tensors]} are "
                f"insufficient to compute its output keys {list(signature.outputs)} "
                f"because of the dependency on `{op.name}` which is not given as a "
                "signature input.")
        stack.extend(t.op for t in op.inputs if t.ref() not in fed)
        stack.extend(op.control_inputs)


def build_all_signature_defs(receiver_tensors, export_outputs,
                             receiver_tensors_alternatives=None, serving_only=True):
    """The SignatureDef map of an export: one signature per (receiver, output) pair.

    Outputs fed by the main receiver are keyed by the output key; outputs fed by an
    alternative receiver by `<receiver name>:<output key>`. A signature whose output
    cannot take those inputs (e.g. Classify/Regress without a single string input) is
    left out and logged, as are (with `serving_only`) signatures TF Serving cannot serve.

    Args:
      receiver_tensors: a `Tensor` (keyed `input`) or dict of string to `Tensor`.
      export_outputs: dict of string to `ExportOutput`.
      receiver_tensors_alternatives: dict of name to a `Tensor` or dict of `Tensor`s.
      serving_only: keep only signatures valid for serving (used for PREDICT exports).

    Returns:
      dict of signature name to `SignatureDef`.

    Raises:
      ValueError: `export_outputs` is not a dict.
    """
    if not isinstance(export_outputs, dict):
        raise ValueError(f"`export_outputs` must be a dict. Received {export_outputs} with "
                         f"type {type(export_outputs).__name__}.")
    receivers = [(None, _as_receiver_dict(receiver_tensors))]
    for name, alternative in (receiver_tensors_alternatives or {}).items():
        receivers.append((name or "None", _as_receiver_dict(alternative)))
    signatures, excluded = {}, {}
    for receiver_name, inputs in receivers:
        for output_key, export_output in export_outputs.items():
            name = f"{output_key or 'None'}"
            if receiver_name is not None:
                name = f"{receiver_name}:{name}"
            try:
                signature = export_output.as_signature_def(inputs)
                _check_servable(inputs, signature)
                signatures[name] = signature
            except ValueError as e:
                excluded[name] = str(e)
    _log_signature_report(signatures, excluded)
    if serving_only:
        signatures = {k: v for k, v in signatures.items()
                      if _SIGNATURE_UTILS.is_valid_signature(v)}
    return signatures


def _log_signature_report(signatures, excluded):
    by_method = collections.OrderedDict((m, []) for m in _FRIENDLY_METHOD_NAMES)
    for name, signature in signatures.items():
        by_method.setdefault(signature.method_name, []).append(name)
    for method, names in by_method.items():
        logging.info("Signatures INCLUDED in export for %s: %s",
                     _FRIENDLY_METHOD_NAMES.get(method, method), names or "None")
    if excluded:
        logging.info("Signatures EXCLUDED from export because they cannot be be served via "
                     "TensorFlow Serving APIs:")
        for name, message in excluded.items():
            logging.info("'%s' : %s", name, message)
    if not signatures:
        logging.warning("Export includes no signatures!")
    elif DEFAULT_SERVING_KEY not in signatures:
        logging.warning("Export includes no default signature!")
