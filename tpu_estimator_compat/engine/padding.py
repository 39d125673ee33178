"""Padding and stop signals that let EVAL and PREDICT run a finite input to its very end.

Each batch becomes `(element, signals)` with `signals = {'mask': [B] bool (True for real
rows), 'stop': [B] bool}`. After the data comes an endless run of stop batches, so every
replica (on every host) keeps receiving batches until all of them have seen the end (a
finite run suffices in one process, and lets the input pipeline go idle and shut down fast).

With TPU semantics shapes must be static: batches are padded with zero rows to the batch size
(mask False) and stop batches are all padding; the host drops padded rows. An input whose
shapes are already fully static (batched with `drop_remainder=True`) has no partial batch:
it is not padded, whichever dimension is the batch (resnet's `transpose_input` puts it last), and
its stop batches are full batches of zeros, with or without TPU semantics (model_fns read the
static batch size). Otherwise batches
keep their size and stop batches are a single zero row (not zero rows: oneDNN's Conv2D
mis-shapes empty batches), or zero rows for an input with no example at all. Metrics computed inside model_fn (EstimatorSpec.eval_metric_ops)
are read at the last step with real rows, so the stop batches never count.
"""
import tensorflow as tf

MASK = "mask"
STOP = "stop"


def add_signals(dataset, batch_size, pad, stop_batches=None):
    """The signalled dataset (padded to `batch_size` if `pad`), then `stop_batches` stop
    batches (None: endless)."""
    count = -1 if stop_batches is None else stop_batches
    # Fully static batches (drop_remainder=True) keep their static shapes, which model_fns
    # read (`images.shape[0]`), also without TPU semantics (where the batch must then lead
    # with `batch_size` rows: a static element of other rows is a batch of its own size; a
    # plain Estimator has no batch size: its batches' own common size then).
    static = _fully_static(dataset.element_spec)
    leading = _leading_dimensions(dataset.element_spec) if static else set()
    if batch_size is None and not pad and len(leading) == 1:
        (batch_size,) = leading
    if static and (pad or leading == {batch_size}):
        # A zip, not a map: no function is traced for each evaluate()/predict() call.
        real = tf.data.Dataset.from_tensors({MASK: tf.fill([batch_size], True),
                                             STOP: tf.fill([batch_size], False)}).repeat()
        zeros = tf.nest.map_structure(lambda spec: tf.zeros(spec.shape, spec.dtype),
                                      dataset.element_spec)
        stop = tf.data.Dataset.from_tensors((zeros, {MASK: tf.fill([batch_size], False),
                                                     STOP: tf.fill([batch_size], True)}))
        return tf.data.Dataset.zip((dataset, real)).concatenate(stop.repeat(count))
    if pad:
        real = dataset.map(lambda *element: _pad(_pack(element), batch_size, stop=False))
        return real.concatenate(_stop_batches(dataset, batch_size).repeat(count))
    real = dataset.map(lambda *element: _unpadded(_pack(element), stop=False))
    return real.concatenate(_first_or_empty_batch(dataset).map(
        lambda *element: _unpadded(
            tf.nest.map_structure(lambda t: _zeros_like(t, rows=1), _pack(element)),
            stop=True)).repeat(count))


def _leading_dimensions(element_spec):
    return {tf.compat.dimension_value(spec.shape[0]) for spec in tf.nest.flatten(element_spec)}


def _fully_static(element_spec):
    specs = tf.nest.flatten(element_spec)
    return all(isinstance(spec, tf.TensorSpec) and spec.shape.rank
               and spec.shape.is_fully_defined() for spec in specs)  # scalars: unbatched


def _unpadded(element, stop):
    rows = _batch_rows(element)
    return element, {MASK: tf.fill([rows], not stop), STOP: tf.fill([rows], stop)}


def _pack(element):
    return element if len(element) > 1 else element[0]


def _pad(element, batch_size, stop):
    """Pads each tensor that may have fewer rows than `batch_size` to `batch_size` rows; the
    mask counts the rows of the first such tensor. A tensor whose static first dimension is
    at least the batch size (a part batched with drop_remainder=True, possibly k times the
    batch size: the unlabeled part of a semi-supervised input) is full and stays as it is."""
    def short(tensor):  # may have fewer rows than the batch size
        rows = tf.compat.dimension_value(tensor.shape[0]) if tensor.shape.rank else batch_size
        return rows is None or rows < batch_size

    to_pad = [t for t in tf.nest.flatten(element) if short(t)]
    rows = _batch_rows(to_pad[0] if to_pad else element)
    padded = tf.nest.map_structure(
        lambda t: _pad_tensor(t, batch_size) if short(t) else t, element)
    mask = tf.range(batch_size) < rows
    signals = {MASK: tf.logical_and(mask, not stop),
               STOP: tf.fill([batch_size], tf.constant(stop))}
    return padded, signals


def _batch_rows(element):
    first = tf.nest.flatten(element)[0]
    if first.shape.rank == 0:
        raise ValueError(
            f"input_fn returned a scalar ({first}); evaluate and predict need batched "
            "features: batch the dataset (dataset.batch(params['batch_size'])).")
    return _rows(first)


def _pad_tensor(tensor, batch_size):
    rows = _rows(tensor)
    check = tf.debugging.assert_less_equal(
        rows, batch_size,
        message=f"input_fn returned a batch larger than params['batch_size'] ({batch_size}) "
                f"in a tensor of shape {tensor.shape.as_list()}. A part of the batch that is "
                "larger (e.g. k times the batch size of unlabeled examples) needs a static "
                "first dimension: batch it with drop_remainder=True")
    if isinstance(tensor, tf.SparseTensor):  # ids of embedding columns: no ids in padding
        with tf.control_dependencies([check]):
            return _sparse_with_rows(tensor, batch_size)
    with tf.control_dependencies([check]):
        padding = tf.zeros(tf.concat([[batch_size - rows], tf.shape(tensor)[1:]], 0),
                           tensor.dtype)
    padded = tf.concat([tensor, padding], 0)
    return tf.ensure_shape(padded, [batch_size] + tensor.shape[1:].as_list())


def _rows(tensor):
    if isinstance(tensor, tf.SparseTensor):
        return tf.cast(tensor.dense_shape[0], tf.int32)
    return tf.shape(tensor, out_type=tf.int32)[0]


def _sparse_with_rows(sparse, rows, keep_values=True):
    """`sparse` with `rows` rows (its values kept, or none)."""
    dense_shape = tf.concat([tf.reshape(tf.cast(rows, tf.int64), [1]),
                             sparse.dense_shape[1:]], 0)
    if keep_values:
        return tf.SparseTensor(sparse.indices, sparse.values, dense_shape)
    return tf.SparseTensor(sparse.indices[:0], sparse.values[:0], dense_shape)


def _zeros_like(tensor, rows=None):
    """Zeros shaped like `tensor` (its first `rows` rows only, if given); a SparseTensor
    with no values."""
    if isinstance(tensor, tf.SparseTensor):
        return _sparse_with_rows(tensor, _rows(tensor) if rows is None else rows,
                                 keep_values=False)
    return tf.zeros_like(tensor if rows is None else tensor[:rows])


def _first_or_empty_batch(dataset):
    """The dataset's first batch or, for an input with no example, a batch of zero rows
    shaped by its element spec (tensors with a static first dimension keep it): the model of
    the stop batches, which must exist even then."""
    specs = tf.nest.flatten(dataset.element_spec)
    if not all(isinstance(spec, tf.TensorSpec) and spec.shape.rank for spec in specs):
        return dataset.take(1)  # no empty stand-in for ragged, sparse or scalar elements
    empty = tf.nest.pack_sequence_as(dataset.element_spec, [  # static first dims kept
        tf.zeros([d or 0 for d in spec.shape.as_list()], spec.dtype) for spec in specs])
    return dataset.take(1).concatenate(tf.data.Dataset.from_tensors(empty)).take(1)


def _stop_batches(dataset, batch_size):
    """One all-padding batch with `stop` set, shaped like the data."""
    def zero_batch(*element):
        padded, _ = _pad(_pack(element), batch_size, stop=True)
        zeros = tf.nest.map_structure(_zeros_like, padded)
        return zeros, {MASK: tf.zeros([batch_size], tf.bool), STOP: tf.ones([batch_size], tf.bool)}
    return _first_or_empty_batch(dataset).map(zero_batch)
