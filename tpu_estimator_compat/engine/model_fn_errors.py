"""Errors raised inside a user's model_fn whose wording does not say the cause: a feature
key the input does not have (`KeyError: 'x'`), a loss an optimizer cannot differentiate
(an int32 loss, reported by TensorFlow as a dtype error somewhere in the gradients), an op
whose input shapes do not fit when none of its inputs came from input_fn (model_fn's own
shapes are at fault, not the input's)."""
import collections.abc
import os
import re
import sysconfig
import traceback

import tensorflow as tf

# TensorFlow's shape-inference failure names the op being built and its inputs (op names,
# `name:k` for output k, `^name` for control inputs):
# "... for '{{node dense_1/MatMul}} = MatMul[T=DT_FLOAT, ...](dense/Relu, w/read)' with input
# shapes: [8,4], [3,1]."
_FAILED_OP = re.compile(r"for '\{\{node (?P<node>[^}]+)\}\} = (?P<type>\w+)(?:\[.*\])?"
                        r"\((?P<inputs>[^()]*)\)' with input shapes")
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_LIBRARY_DIRS = tuple(os.path.join(os.path.realpath(sysconfig.get_paths()[key]), "")
                      for key in ("stdlib", "platstdlib", "purelib", "platlib"))


class MissingFeatureError(KeyError):
    """model_fn looked up a feature the input_fn or serving receiver did not give."""

    def __str__(self):
        return self.args[0]


def explain(error, features, source):
    """A clearer error to raise instead of `error` (raised while model_fn ran on the features
    from `source`), or None when there is nothing to add."""
    if isinstance(error, KeyError):
        return _missing_feature(error, features, source)
    loss = _undifferentiable_loss(error)
    if loss is not None:
        return TypeError(
            f"model_fn's loss ({loss.name}) has dtype {loss.dtype.name}: an optimizer can only "
            "differentiate a floating-point loss. Compute the loss in floating point (e.g. "
            f"loss = tf.cast(loss, tf.float32)); the features and labels from {source} are "
            f"not the cause. (TensorFlow said: {error})")
    return None


def _missing_feature(error, features, source):
    # A KeyError subclass (keras_estimator's FormattedKeyError) carries its own message.
    if type(error) is not KeyError:
        return None
    if not (isinstance(features, collections.abc.Mapping) and len(error.args) == 1):
        return None
    key = error.args[0]
    if not isinstance(key, str) or key in features:
        return None
    if source == "serving_input_receiver_fn":
        fix = ("Give the receiver's features every key model_fn reads, e.g. "
               f"ServingInputReceiver(features={{{key!r}: tensor}}, receiver_tensors=...).")
    else:
        fix = f"Return a features dict with every key model_fn reads from {source}."
    return MissingFeatureError(
        f"model_fn looked up features[{key!r}], but the features from {source} have the keys "
        f"{sorted(features, key=str)}. {fix}")


def _undifferentiable_loss(error):
    """The non-floating loss an optimizer's minimize/compute_gradients got, if the error
    was raised inside one."""
    trace = error.__traceback__
    while trace is not None:
        frame = trace.tb_frame
        loss = frame.f_locals.get("loss")
        if (frame.f_code.co_name in ("minimize", "compute_gradients") and tf.is_tensor(loss)
                and not loss.dtype.is_floating and not loss.dtype.is_complex):
            return loss
        trace = trace.tb_next
    return None


def op_built_from_model_fn_tensors(error, features, labels):
    """(node, op type, inputs) of the op TensorFlow failed to build, when the error names one
    and none of its inputs is a tensor of `features` or `labels`; else None."""
    match = _FAILED_OP.search(str(error))
    if match is None:
        return None
    inputs = [name.strip() for name in match["inputs"].split(",") if name.strip()]
    data_inputs = [name for name in inputs if not name.startswith("^")]
    given = {_input_name(t) for t in tf.nest.flatten((features, labels)) if tf.is_tensor(t)
             and hasattr(t, "op")}
    if not data_inputs or given.intersection(data_inputs):
        return None
    return match["node"], match["type"], data_inputs


def _input_name(tensor):
    """How a NodeDef names `tensor` as an input: `op` for output 0, else `op:k`."""
    index = tensor.value_index
    return tensor.op.name if index == 0 else f"{tensor.op.name}:{index}"


def user_code_line(error):
    """'FILE:LINE (`code`)' of the innermost frame of `error`'s traceback in the user's code
    (not a library's, not this package's), or None."""
    for frame in reversed(traceback.extract_tb(error.__traceback__)):
        path = os.path.realpath(frame.filename)
        parts = path.split(os.sep)
        if ("site-packages" in parts or "dist-packages" in parts
                or path.startswith(_LIBRARY_DIRS) or path.startswith(_PACKAGE_DIR + os.sep)):
            continue
        code = f" (`{frame.line}`)" if frame.line else ""
        return f"{frame.filename}:{frame.lineno}{code}"
    return None
