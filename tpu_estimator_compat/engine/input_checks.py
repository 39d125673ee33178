"""Checks on `input_fn` and what it returns, before any step runs.

`input_fn` may return a `tf.data.Dataset` whose elements are `features` or
`(features, labels)`, or a `(features, labels)` pair of tensors, or features alone (a tensor
or a dict of tensors). Anything else gets an error naming what was returned and what to
return instead, rather than a crash deep inside the input pipeline or a silent misreading
(a Python list stacked into one features tensor, a 3-tuple taken for features).
"""
import inspect

import tensorflow as tf

_EXPECTED = ("a tf.data.Dataset of features or (features, labels), or a (features, labels) "
             "tuple of tensors, or features alone (a tensor or a dict of tensors)")


def check_input_fn(input_fn):
    """Raises TypeError unless `input_fn` is callable (e.g. `train(None)`)."""
    if not callable(input_fn):
        raise TypeError(
            f"input_fn must be a function returning {_EXPECTED}; got "
            f"{type(input_fn).__name__}: {input_fn!r}. Pass the function itself, e.g. "
            "estimator.train(input_fn=my_input_fn, steps=...), not its result or None.")


def check_result(result):
    """Checks what input_fn returned when it is not a Dataset (tensors, arrays or lists).

    Raises:
      TypeError: a generator, a list, Datasets inside a tuple/dict, or a tuple that is not a
        (features, labels) pair.
    """
    if inspect.isgenerator(result) or inspect.isasyncgen(result):
        raise TypeError(
            f"input_fn returned a Python generator ({result!r}); expected {_EXPECTED}. Wrap "
            "the generator in a Dataset: tf.data.Dataset.from_generator(my_generator, "
            "output_signature=...) and return that.")
    if isinstance(result, list):
        raise TypeError(
            f"input_fn returned a Python list of {len(result)} items; expected {_EXPECTED}. "
            "A list would be stacked into one features tensor: return a tuple "
            "(features, labels), or a dict of features.")
    datasets = [path for path, value in _paths(result)
                if isinstance(value, (tf.data.Dataset, tf.compat.v1.data.Dataset))]
    if datasets:
        kind = "dict" if isinstance(result, dict) else type(result).__name__
        raise TypeError(
            f"input_fn returned a {kind} holding tf.data.Datasets (at {', '.join(datasets)}); "
            f"expected {_EXPECTED}. Return one Dataset whose elements are (features, labels): "
            "tf.data.Dataset.zip((features_dataset, labels_dataset)).")
    _check_no_none(result, lambda value: value is None, "input_fn returned")
    if isinstance(result, tuple) and len(result) != 2:
        raise TypeError(
            f"input_fn returned a tuple of {len(result)} items; expected {_EXPECTED}. Return "
            "(features, labels), with any further tensors inside the features dict.")


def to_tensors(result):
    """`tf.data.Dataset.from_tensors(result)`, with an error naming input_fn for values that
    are not tensors (non-rectangular lists, mixed types)."""
    try:
        return tf.data.Dataset.from_tensors(result)
    except (ValueError, TypeError) as error:
        raise ValueError(
            f"input_fn returned values that cannot be converted to tensors ({error}); got "
            f"{_describe(result)}. Expected tensors, numpy arrays or rectangular nested lists "
            "(every row of the same length and type): pad the rows to one length, or return "
            "a tf.data.Dataset (tf.data.Dataset.from_tensor_slices / ragged.batch).") from None


def check_element_spec(element_spec):
    """Raises TypeError for dataset elements that are neither features nor
    (features, labels): tuples of another length, or nested Datasets."""
    nested = [path for path, spec in _paths(element_spec)
              if isinstance(spec, tf.data.DatasetSpec)]
    if nested:
        raise TypeError(
            f"input_fn's dataset has Datasets as elements (at {', '.join(nested)}); expected "
            "elements that are features or (features, labels) tensors. Combine the datasets "
            "with tf.data.Dataset.zip((features_dataset, labels_dataset)) instead of nesting "
            "them.")
    _check_no_none(element_spec, lambda spec: type(spec).__name__ == "NoneTensorSpec",
                   "input_fn's dataset elements hold")
    if isinstance(element_spec, tuple) and len(element_spec) != 2:
        raise TypeError(
            f"input_fn's dataset elements are tuples of {len(element_spec)} items "
            f"({element_spec}); expected features, or a (features, labels) pair. Put the "
            "extra tensors into the features dict, e.g. dataset.map(lambda a, b, y: "
            "({'a': a, 'b': b}, y)).")


def _check_no_none(structure, is_none, what):
    """Raises TypeError naming the features (or labels' parts) that are None; labels may be
    None as a whole (`(features, None)`)."""
    labels_path = "input_fn()[1]" if isinstance(structure, tuple) else None
    nones = [path for path, leaf in _paths(structure)
             if is_none(leaf) and path != labels_path]
    if nones:
        raise TypeError(
            f"{what} None at {', '.join(nones)}; every feature (and every part of the labels) "
            "must be a tensor. Drop that key from the dict, or give it a tensor value (e.g. "
            "tf.zeros([batch_size])).")


def _paths(structure, prefix="input_fn()"):
    """(path, leaf) pairs of a nest of dicts, tuples and lists, the leaves included."""
    if isinstance(structure, dict):
        for key in structure:
            yield from _paths(structure[key], f"{prefix}[{key!r}]")
    elif isinstance(structure, (tuple, list)):
        for index, value in enumerate(structure):
            yield from _paths(value, f"{prefix}[{index}]")
    else:
        yield prefix, structure


def _describe(result):
    text = repr(result)
    return text if len(text) <= 200 else text[:200] + "..."
