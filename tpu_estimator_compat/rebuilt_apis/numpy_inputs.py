"""TF 1.x's `tf.estimator.inputs.numpy_input_fn` and `pandas_input_fn` on `tf.data`.

The original fed a queue from Python threads; here a dataset of the rows (`repeat`ed
`num_epochs` times, shuffled within `queue_capacity` rows if asked, then batched) gives the
same batches in the unshuffled case: rows in order, batches running on across epochs, the
last one partial when `num_epochs` is set (`dequeue_up_to`). The input_fn returns its
one-shot iterator's element, `(features, target)` or `features`, as the original returned
its queue's tensors (the estimator reads the dataset behind it). `num_threads` does not
change the batches (the original's threads only filled its queue) and is not used.
"""
import collections

import numpy as np
import tensorflow as tf

_TARGET = "__target_key__"
_ARRAY = "__direct_np_input__"


def numpy_input_fn(x, y=None, batch_size=128, num_epochs=1, shuffle=None,
                   queue_capacity=1000, num_threads=1):
    """An input_fn returning batches of numpy arrays as tensors.

    Args:
      x: a dict of arrays (features dict) or an array (features tensor), rows first.
      y: None, an array (labels tensor) or a dict of arrays (labels dict).
      batch_size: rows per batch.
      num_epochs: passes over the data; None repeats forever.
      shuffle: bool, required: shuffle the rows (within `queue_capacity` rows).
      queue_capacity: the shuffle buffer's size, in rows.
      num_threads: not used (kept for the original's signature).

    Returns:
      A function of no arguments returning `(features, labels)` (`features` when y is None).
    """
    del num_threads
    _check_shuffle(shuffle)

    def input_fn():
        columns = _columns(x)
        feature_keys = list(columns)
        if isinstance(y, dict):
            if not y:
                raise ValueError("y cannot be empty dict, use None instead.")
            duplicates = set(feature_keys) & set(y)
            if duplicates:
                raise ValueError(f"{len(duplicates)} duplicate keys are found in both x and y: "
                                 f"{duplicates}")
            columns.update(sorted(y.items()))
        elif y is not None:
            columns[_TARGET] = y
        _check_lengths(columns, feature_keys, y)
        batch = _batches(columns, batch_size, num_epochs, shuffle, queue_capacity)
        features = (batch[_ARRAY] if not isinstance(x, dict)
                    else {key: batch[key] for key in feature_keys})
        if y is None:
            return features
        if isinstance(y, dict):
            return features, {key: batch[key] for key in sorted(y)}
        return features, batch[_TARGET]

    return input_fn


def pandas_input_fn(x, y=None, batch_size=128, num_epochs=1, shuffle=None,
                    queue_capacity=1000, num_threads=1, target_column="target"):
    """An input_fn returning batches of a pandas DataFrame's columns as tensors.

    Args:
      x: a `pandas.DataFrame`: the features dict, one key per column.
      y: None, a `pandas.Series` (labels tensor) or a DataFrame (labels dict by column),
        with x's index.
      batch_size, num_epochs, shuffle, queue_capacity, num_threads: as `numpy_input_fn`.
      target_column: the name y's column takes among x's (must not be one of x's).

    Returns:
      A function of no arguments returning `(features, labels)` (`features` when y is None).
    """
    try:
        import pandas as pd  # pylint: disable=import-outside-toplevel
    except ImportError:
        raise TypeError("pandas_input_fn should not be called without pandas installed") \
            from None
    _check_shuffle(shuffle)
    if not isinstance(target_column, str):
        raise TypeError("target_column must be a string type")
    features = {column: x[column].values for column in x.columns}
    if y is None:
        return numpy_input_fn(features, None, batch_size, num_epochs, shuffle, queue_capacity)
    if target_column in x:
        raise ValueError(f"Cannot use name {target_column} for target column: DataFrame "
                         f"already has a column with that name: {x.columns}")
    if not np.array_equal(x.index, y.index):
        raise ValueError(f"Index for x and y are mismatched.\nIndex for x: {x.index}\n"
                         f"Index for y: {y.index}\n")
    if isinstance(y, pd.DataFrame):
        targets = {column: y[column].values for column in y.columns}
        fn = numpy_input_fn(features, {_TARGET + str(k): v for k, v in targets.items()},
                            batch_size, num_epochs, shuffle, queue_capacity)

        def input_fn():
            got_features, got_targets = fn()
            return got_features, {k: got_targets[_TARGET + str(k)] for k in targets}

        return input_fn
    return numpy_input_fn(features, y.values, batch_size, num_epochs, shuffle, queue_capacity)


def _check_shuffle(shuffle):
    if not isinstance(shuffle, bool):
        raise ValueError("shuffle must be provided and explicitly set as boolean (it is "
                         f"recommended to set it as True for training); got {shuffle}")


def _columns(x):
    if isinstance(x, dict):
        if not x:
            raise ValueError("x cannot be an empty dict")
        return collections.OrderedDict(sorted(x.items()))
    if isinstance(x, np.ndarray):
        if not x.size:
            raise ValueError("x cannot be an empty array")
        return collections.OrderedDict({_ARRAY: x})
    raise TypeError(f"x must be a dict or array; got {type(x).__name__}")


def _check_lengths(columns, feature_keys, y):
    if len({np.shape(value)[0] for value in columns.values()}) == 1:
        return
    x_shapes = {key: np.shape(columns[key]) for key in feature_keys}
    y_shapes = (None if y is None else {k: np.shape(v) for k, v in y.items()}
                if isinstance(y, dict) else np.shape(y))
    raise ValueError("Length of tensors in x and y is mismatched. All elements in x and y "
                     f"must have the same length.\nShapes in x: {x_shapes}\n"
                     f"Shapes in y: {y_shapes}\n")


def _batches(columns, batch_size, num_epochs, shuffle, queue_capacity):
    dataset = tf.data.Dataset.from_tensor_slices(dict(columns))
    if shuffle:
        dataset = dataset.shuffle(queue_capacity or len(next(iter(columns.values()))))
    dataset = dataset.repeat(num_epochs).batch(batch_size, drop_remainder=num_epochs is None)
    return tf.compat.v1.data.make_one_shot_iterator(dataset).get_next()
