"""Serving input receivers (`tf.estimator.export.*Receiver`) and the builders of receiver fns.

A receiver fn takes no arguments and runs in the export graph (graph mode): it makes the
placeholders a server feeds and the features the `model_fn` is built on.
"""
import collections

import tensorflow as tf

SINGLE_FEATURE_DEFAULT_NAME = "feature"
SINGLE_RECEIVER_DEFAULT_NAME = "input"
SINGLE_LABEL_DEFAULT_NAME = "label"
_SINGLE_TENSOR_DEFAULT_NAMES = {
    "feature": SINGLE_FEATURE_DEFAULT_NAME,
    "label": SINGLE_LABEL_DEFAULT_NAME,
    "receiver_tensor": SINGLE_RECEIVER_DEFAULT_NAME,
    "receiver_tensors_alternative": SINGLE_RECEIVER_DEFAULT_NAME,
}


def _check_tensor(tensor, name, error_label="feature"):
    if not isinstance(tensor, (tf.Tensor, tf.SparseTensor, tf.RaggedTensor)):
        fmt_name = f" {name}" if name else ""
        raise ValueError(
            f"{error_label}{fmt_name} must be a Tensor, SparseTensor, or RaggedTensor.")


def _check_tensor_key(name, error_label, allow_ints=False):
    if isinstance(name, str):
        return
    if not allow_ints:
        raise ValueError(f"{error_label} keys must be strings: {name}.")
    if not isinstance(name, int):
        raise ValueError(f"{error_label} keys must be strings or ints: {name}.")


def wrap_and_check_input_tensors(tensors, field_name, allow_int_keys=False):
    """A `{key: tensor}` dict from a tensor or a dict; a single tensor gets the default key.

    Args:
      tensors: a `Tensor`/`SparseTensor`/`RaggedTensor` or a dict of them.
      field_name: 'feature', 'label', 'receiver_tensor' or 'receiver_tensors_alternative'.
      allow_int_keys: whether int keys are allowed as well as strings.

    Returns:
      The given dict, or `{default name: tensor}`.

    Raises:
      ValueError: `tensors` is None, or a key or value has the wrong type.
    """
    if tensors is None:
        raise ValueError(f"{field_name}s must be defined.")
    if field_name == "feature" and isinstance(tensors, dict) and not tensors:
        raise ValueError(
            "The receiver's features are an empty dict; expected a tensor or a dict of at "
            "least one tensor, from which model_fn builds the served model. Return e.g. "
            "ServingInputReceiver(features={'x': x}, receiver_tensors={'x': x}).")
    if not isinstance(tensors, dict):
        tensors = {_SINGLE_TENSOR_DEFAULT_NAMES[field_name]: tensors}
    for name, tensor in tensors.items():
        _check_tensor_key(name, field_name, allow_ints=allow_int_keys)
        _check_tensor(tensor, name, error_label=field_name)
    return tensors


class ServingInputReceiver(collections.namedtuple(
        "ServingInputReceiver",
        ["features", "receiver_tensors", "receiver_tensors_alternatives"])):
    """What a `serving_input_receiver_fn` returns.

    Attributes:
      features: dict of string or int to tensor, passed to the model; a single tensor
        becomes `{'feature': tensor}` (use `TensorServingInputReceiver` to pass it as is).
      receiver_tensors: dict of string to tensor that a server feeds (a single tensor is
        keyed `input`); typically one placeholder of serialized `tf.Example`s.
      receiver_tensors_alternatives: dict of name to other groups of receiver tensors
        (tensor or dict), each giving `<name>:<output>` signatures; or None.
    """

    __slots__ = ()

    def __new__(cls, features, receiver_tensors, receiver_tensors_alternatives=None):
        features = wrap_and_check_input_tensors(features, "feature", allow_int_keys=True)
        receiver_tensors = wrap_and_check_input_tensors(receiver_tensors, "receiver_tensor")
        if receiver_tensors_alternatives is not None:
            if not isinstance(receiver_tensors_alternatives, dict):
                raise ValueError("receiver_tensors_alternatives must be a dict: "
                                 f"{receiver_tensors_alternatives}.")
            for name, alternative in list(receiver_tensors_alternatives.items()):
                receiver_tensors_alternatives[name] = wrap_and_check_input_tensors(
                    alternative, "receiver_tensors_alternative")
        return super().__new__(cls, features, receiver_tensors, receiver_tensors_alternatives)


class TensorServingInputReceiver(collections.namedtuple(
        "TensorServingInputReceiver",
        ["features", "receiver_tensors", "receiver_tensors_alternatives"])):
    """A `ServingInputReceiver` whose single feature tensor is passed to the model as is.

    Attributes:
      features: one tensor, passed to the `model_fn` unwrapped.
      receiver_tensors, receiver_tensors_alternatives: as in `ServingInputReceiver`.
    """

    __slots__ = ()

    def __new__(cls, features, receiver_tensors, receiver_tensors_alternatives=None):
        if features is None:
            raise ValueError("features must be defined.")
        _check_tensor(features, None)
        receiver = ServingInputReceiver(features, receiver_tensors,
                                        receiver_tensors_alternatives)
        return super().__new__(cls, receiver.features[SINGLE_FEATURE_DEFAULT_NAME],
                                receiver.receiver_tensors,
                                receiver.receiver_tensors_alternatives)


class SupervisedInputReceiver(collections.namedtuple(
        "SupervisedInputReceiver", ["features", "labels", "receiver_tensors"])):
    """What a receiver fn returns for a TRAIN or EVAL export: features, labels, inputs.

    Attributes:
      features: a tensor or dict of tensors, passed to the model as is.
      labels: a tensor or dict of tensors, passed to the model as is.
      receiver_tensors: dict of string to tensor that a caller feeds.
    """

    __slots__ = ()

    def __new__(cls, features, labels, receiver_tensors):
        # Validation only: features and labels reach the model unwrapped.
        wrap_and_check_input_tensors(features, "feature", allow_int_keys=True)
        wrap_and_check_input_tensors(labels, "label", allow_int_keys=True)
        receiver_tensors = wrap_and_check_input_tensors(receiver_tensors, "receiver_tensor")
        return super().__new__(cls, features, labels, receiver_tensors)


def check_receiver(receiver, receiver_fn):
    """Raises TypeError unless a receiver fn returned a receiver (an object with `features`
    and `receiver_tensors`)."""
    if not (hasattr(receiver, "features") and hasattr(receiver, "receiver_tensors")):
        raise TypeError(
            f"serving_input_receiver_fn ({receiver_fn}) returned {type(receiver).__name__}: "
            f"{receiver!r}; expected a ServingInputReceiver (or TensorServingInputReceiver, "
            "SupervisedInputReceiver). End the function with `return tf.estimator.export."
            "ServingInputReceiver(features, receiver_tensors)`, or use "
            "build_parsing_serving_input_receiver_fn / build_raw_serving_input_receiver_fn.")


def build_parsing_serving_input_receiver_fn(feature_spec, default_batch_size=None):
    """A receiver fn that parses serialized `tf.Example`s fed as `examples`.

    Args:
      feature_spec: dict of string to `FixedLenFeature`/`VarLenFeature`/... specs.
      default_batch_size: batch size of the placeholder; None (recommended) for any.

    Returns:
      A no-argument function returning a `ServingInputReceiver`.
    """
    def serving_input_receiver_fn():
        serialized = tf.compat.v1.placeholder(
            dtype=tf.string, shape=[default_batch_size], name="input_example_tensor")
        features = tf.compat.v1.io.parse_example(serialized, feature_spec)
        return ServingInputReceiver(features, {"examples": serialized})

    return serving_input_receiver_fn


def _placeholder_like(value, default_batch_size, key):
    """A placeholder with `value`'s dtype and shape, the batch dimension replaced.

    `value` may be a graph or eager `Tensor` or a `tf.TensorSpec`. A graph tensor lends
    its op name, as in the original; others are named after their dict key.
    """
    if not hasattr(value, "dtype"):
        raise ValueError("Passed dictionary values must be tensors.")
    if isinstance(value, tf.TensorSpec):
        name = value.name
    else:
        try:
            name = value.op.name
        except AttributeError:  # Eager tensors have no op.
            name = None
    shape = tf.TensorShape([default_batch_size]).concatenate(tf.TensorShape(value.shape)[1:])
    return tf.compat.v1.placeholder(dtype=value.dtype, shape=shape,
                                    name=name or str(key))


def _placeholders_like(values, default_batch_size):
    return {key: _placeholder_like(value, default_batch_size, key)
            for key, value in values.items()}


def build_raw_serving_input_receiver_fn(features, default_batch_size=None):
    """A receiver fn whose placeholders, one per feature, are fed directly.

    Args:
      features: dict of string to `Tensor` (graph or eager) or `tf.TensorSpec`; each
        gives the dtype and the non-batch shape of one placeholder.
      default_batch_size: batch size of the placeholders; None (recommended) for any.

    Returns:
      A no-argument function returning a `ServingInputReceiver` whose features and
      receiver tensors are the same placeholders.
    """
    def serving_input_receiver_fn():
        receiver_tensors = _placeholders_like(features, default_batch_size)
        return ServingInputReceiver(receiver_tensors, receiver_tensors)

    return serving_input_receiver_fn


def build_raw_supervised_input_receiver_fn(features, labels, default_batch_size=None):
    """A receiver fn for TRAIN/EVAL exports: placeholders for raw features and labels.

    Args:
      features: a `Tensor`/`tf.TensorSpec` or a dict of them.
      labels: a `Tensor`/`tf.TensorSpec` or a dict of them.
      default_batch_size: batch size of the placeholders; None (recommended) for any.

    Returns:
      A no-argument function returning a `SupervisedInputReceiver`.

    Raises:
      ValueError: features and labels share a key.
    """
    feature_keys = features.keys() if isinstance(features, dict) else [
        SINGLE_RECEIVER_DEFAULT_NAME]
    label_keys = labels.keys() if isinstance(labels, dict) else [SINGLE_LABEL_DEFAULT_NAME]
    overlap = set(feature_keys) & set(label_keys)
    if overlap:
        raise ValueError("Features and labels must have distinct keys. Found overlapping "
                         f"keys: {overlap}")

    def _receive(values, single_key):
        if isinstance(values, dict):
            placeholders = _placeholders_like(values, default_batch_size)
            return placeholders, placeholders
        placeholder = _placeholder_like(values, default_batch_size, single_key)
        return placeholder, {single_key: placeholder}

    def supervised_input_receiver_fn():
        features_in, receiver_features = _receive(features, SINGLE_RECEIVER_DEFAULT_NAME)
        labels_in, receiver_labels = _receive(labels, SINGLE_LABEL_DEFAULT_NAME)
        return SupervisedInputReceiver(features_in, labels_in,
                                       {**receiver_features, **receiver_labels})

    return supervised_input_receiver_fn
