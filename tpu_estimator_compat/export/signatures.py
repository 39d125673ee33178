"""The SignatureDef map of an export, built from a model's `export_outputs` and its serving
input receiver, as the original's `export_lib` built it.

Runs in graph mode, in the export graph.
"""
import collections

import tensorflow as tf

from tpu_estimator_compat import log as logging
from tpu_estimator_compat.api.spec import ModeKeys
from tpu_estimator_compat.api import export_outputs as outputs
from tpu_estimator_compat.export.receivers import SINGLE_RECEIVER_DEFAULT_NAME

_sm = tf.compat.v1.saved_model

SIGNATURE_KEY_FOR_MODE = {ModeKeys.PREDICT: outputs.DEFAULT_SERVING_KEY,
                          ModeKeys.TRAIN: "train", ModeKeys.EVAL: "eval"}
_FRIENDLY_METHOD_NAMES = {
    _sm.CLASSIFY_METHOD_NAME: "Classify",
    _sm.REGRESS_METHOD_NAME: "Regress",
    _sm.PREDICT_METHOD_NAME: "Predict",
    outputs.SUPERVISED_TRAIN_METHOD: "Train",
    outputs.SUPERVISED_EVAL_METHOD: "Eval",
}


def export_outputs_for_mode(mode, serving_export_outputs=None, predictions=None, loss=None,
                            metrics=None):
    """The `{signature_key: ExportOutput}` dict exported for `mode` ('infer'/'train'/'eval')."""
    if mode not in SIGNATURE_KEY_FOR_MODE:
        raise ValueError(f"Export output type not found for `mode`: {mode}. Expected one "
                         f"of: {list(SIGNATURE_KEY_FOR_MODE)}.")
    if mode == ModeKeys.PREDICT:
        return outputs.get_export_outputs(serving_export_outputs, predictions)
    output_class = outputs.TrainOutput if mode == ModeKeys.TRAIN else outputs.EvalOutput
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
    fetched = [t for info in signature.outputs.values() for t in _tensors_of(info, graph)]
    seen, stack = set(), [t.op for t in fetched if t.ref() not in fed]
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
                      if _sm.signature_def_utils.is_valid_signature(v)}
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
    elif outputs.DEFAULT_SERVING_KEY not in signatures:
        logging.warning("Export includes no default signature!")
