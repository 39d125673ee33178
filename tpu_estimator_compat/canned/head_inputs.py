"""What a head checks and converts before its loss: labels (shape, vocabulary, range),
example weights (`weight_column`) and logits, with TF 1.15's messages."""
import tensorflow as tf

_v1 = tf.compat.v1


def require_labels(labels):
    """TF1's error for a missing `labels` (TRAIN and EVAL need them)."""
    if labels is None:
        raise ValueError(
            "You must provide a labels Tensor. Given: None. Suggested troubleshooting steps: "
            "Check that your data contain your label feature. Check that your input_fn "
            "properly parses and returns labels.")


def dense_labels(labels, logits, expected_labels_dimension):
    """`labels` as a dense `[D0, ... DN, expected_labels_dimension]` tensor matching
    `logits`; `[D0, ... DN]` labels get their last dimension added."""
    require_labels(labels)
    with tf.name_scope("labels"):
        labels = _v1.convert_to_tensor_or_sparse_tensor(labels)
        if isinstance(labels, tf.SparseTensor):
            raise ValueError(
                "SparseTensor labels are not supported. labels must be a Tensor of shape "
                f"[D0, D1, ..., DN, {expected_labels_dimension}], e.g. [batch_size, "
                f"{expected_labels_dimension}]. Suggested Fix: in your input_fn, use "
                "tf.sparse.to_dense() to turn labels into a Tensor.")
        if (labels.shape.ndims is not None and logits.shape.ndims is not None
                and labels.shape.ndims == logits.shape.ndims - 1):
            labels = tf.expand_dims(labels, -1)
        message = (f"labels shape must be [D0, D1, ... DN, {expected_labels_dimension}]. "
                   "Suggested Fix: check your n_classes argument to the estimator and/or "
                   "the shape of your label.")
        last = labels.shape[-1] if labels.shape.ndims else None
        if last is not None and last != expected_labels_dimension:
            raise ValueError(
                f"Mismatched label shape. Expected labels dimension={expected_labels_dimension}."
                f"  Received {last}. Suggested Fix:If your classifier expects one-hot "
                "encoding label,check your n_classes argument to the estimator and/or the "
                "shape of your label. Otherwise, check the shape of your label.")
        expected_shape = tf.concat([tf.shape(logits)[:-1], [expected_labels_dimension]], 0)
        checks = [_v1.assert_rank_at_least(labels, 2, message=message),
                  _v1.assert_equal(expected_shape, tf.shape(labels), message=message)]
        with tf.control_dependencies(checks):
            return tf.identity(labels)


def checked_logits(logits, logits_dimension):
    """`logits` as float32, checked to be `[D0, ... DN, logits_dimension]`."""
    with tf.name_scope("logits"):
        logits = tf.cast(logits, tf.float32)
        message = "logits shape must be [D0, D1, ... DN, logits_dimension]"
        last = logits.shape[-1] if logits.shape.ndims else None
        if last is not None:
            if last != logits_dimension:
                raise ValueError(f"logits shape must be [D0, D1, ... DN, logits_dimension="
                                 f"{logits_dimension}], got {logits.shape}.")
            return logits
        with tf.control_dependencies([
                _v1.assert_rank_at_least(logits, 2, message=message),
                _v1.assert_equal(logits_dimension, tf.shape(logits)[-1], message=message)]):
            return tf.identity(logits)


def example_weights(features, weight_column, logits, allow_per_logit_weights=False):
    """The weights of `weight_column` (a feature key or a numeric column) as
    `[D0, ... DN, 1]` (or `[..., logits_dimension]` where allowed); 1. without one."""
    if weight_column is None:
        return 1.
    if isinstance(weight_column, str):
        weight_column = tf.feature_column.numeric_column(key=weight_column, shape=(1,))
    if not all(hasattr(weight_column, a) for a in ("key", "shape", "normalizer_fn")):
        raise TypeError("Weight column must be either a string or _DenseColumn. Given type: "
                        f"{type(weight_column)}. Use a feature key or "
                        "tf.feature_column.numeric_column(key).")
    with tf.name_scope("weights"):
        weights = tf.convert_to_tensor(features[weight_column.key])
        if not (weights.dtype.is_floating or weights.dtype.is_integer):
            raise ValueError(f"Weight column should be castable to float. Given dtype: "
                             f"{weights.dtype}")
        weights = tf.cast(weights, tf.float32)
        if weight_column.normalizer_fn is not None:
            weights = weight_column.normalizer_fn(weights)
        if logits.shape.ndims is not None and weights.shape.ndims == logits.shape.ndims - 1:
            weights = tf.expand_dims(weights, -1)
        supported = tf.concat([tf.shape(logits)[:-1], [1]], 0)
        matches = tf.reduce_all(tf.equal(supported, tf.shape(weights)))
        if allow_per_logit_weights:
            matches = tf.logical_or(matches,
                                    tf.reduce_all(tf.equal(tf.shape(logits), tf.shape(weights))))
            message = ("weights shape must be [D0, D1, ... DN], [D0, D1, ... DN, 1] or "
                       "[D0, D1, ... DN, logits_dimension]")
        else:
            message = "weights shape must be [D0, D1, ... DN] or [D0, D1, ... DN, 1]"
        with tf.control_dependencies([tf.debugging.Assert(
                matches, [message, "logits_shape: ", tf.shape(logits), "weights_shape: ",
                          tf.shape(weights)])]):
            return tf.identity(weights)


def in_range(labels, n_classes, message=None):
    """`labels`, asserted to be in [0, n_classes - 1]."""
    with tf.name_scope("assert_range"):
        checks = [_v1.assert_less_equal(labels, tf.cast(n_classes - 1, labels.dtype),
                                        message=message or "Labels must <= n_classes - 1"),
                  _v1.assert_non_negative(labels, message=message or "Labels must >= 0")]
        with tf.control_dependencies(checks):
            return tf.identity(labels)


def vocabulary_ids(labels, label_vocabulary):
    """String labels as their int64 index in `label_vocabulary` (-1 when not in it)."""
    if labels.dtype != tf.string:
        raise ValueError("Labels dtype should be string if there is a vocabulary. Instead got "
                         f"{labels.dtype}")
    table = tf.lookup.StaticHashTable(
        tf.lookup.KeyValueTensorInitializer(
            list(label_vocabulary), tf.range(len(label_vocabulary), dtype=tf.int64),
            key_dtype=tf.string, value_dtype=tf.int64), default_value=-1,
        name="class_id_lookup")
    return table.lookup(labels)


def class_strings(class_ids, label_vocabulary):
    """int64 class ids as their `label_vocabulary` strings ('UNK' out of range), or as
    decimal strings without a vocabulary."""
    if not label_vocabulary:
        return tf.strings.as_string(class_ids, name="str_classes")
    table = tf.lookup.StaticHashTable(
        tf.lookup.KeyValueTensorInitializer(
            tf.range(len(label_vocabulary), dtype=tf.int64), list(label_vocabulary),
            key_dtype=tf.int64, value_dtype=tf.string), default_value="UNK",
        name="class_string_lookup")
    return table.lookup(class_ids)


def all_classes(logits, n_classes, label_vocabulary=None):
    """`[batch, n_classes]`: every class's string, per example."""
    classes = (tf.constant(list(label_vocabulary)) if label_vocabulary
               else tf.strings.as_string(tf.range(n_classes)))
    return tf.tile(tf.expand_dims(classes, 0), [tf.shape(logits)[0], 1])


def all_class_ids(logits, n_classes):
    """`[batch, n_classes]`: every class id, per example."""
    return tf.tile(tf.expand_dims(tf.range(n_classes), 0), [tf.shape(logits)[0], 1])
