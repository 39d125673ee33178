"""Padding and stop signals that let EVAL and PREDICT run a finite input to its very end.

Each batch becomes `(element, signals)`: the element padded to the static batch size, and
`signals = {'mask': [B] bool (True for real rows), 'stop': [B] bool}`. After the data comes an
endless run of all-padding batches with `stop` set, so every replica (on every host) keeps
receiving batches until all of them have seen the end; the host then drops padded rows.
"""
import tensorflow as tf

MASK = "mask"
STOP = "stop"


def add_signals(dataset, batch_size):
    """The padded, signalled dataset, followed by endless stop batches."""
    real = dataset.map(lambda *element: _pad(_pack(element), batch_size, stop=False))
    return real.concatenate(_stop_batches(dataset, batch_size))


def _pack(element):
    return element if len(element) > 1 else element[0]


def _pad(element, batch_size, stop):
    rows = _batch_rows(element)
    tf.debugging.assert_less_equal(
        rows, batch_size,
        message=f"input_fn returned a batch larger than params['batch_size'] ({batch_size})")
    padded = tf.nest.map_structure(lambda t: _pad_tensor(t, batch_size, rows), element)
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
    return tf.shape(first, out_type=tf.int32)[0]


def _pad_tensor(tensor, batch_size, rows):
    padding = tf.zeros(tf.concat([[batch_size - rows], tf.shape(tensor)[1:]], 0), tensor.dtype)
    padded = tf.concat([tensor, padding], 0)
    return tf.ensure_shape(padded, [batch_size] + tensor.shape[1:].as_list())


def _stop_batches(dataset, batch_size):
    """All-padding batches with `stop` set, shaped like the data, repeated forever."""
    def zero_batch(*element):
        padded, _ = _pad(_pack(element), batch_size, stop=True)
        zeros = tf.nest.map_structure(tf.zeros_like, padded)
        return zeros, {MASK: tf.zeros([batch_size], tf.bool), STOP: tf.ones([batch_size], tf.bool)}
    return dataset.take(1).map(zero_batch).repeat()
