"""input_fns that end with `return dataset.make_one_shot_iterator().get_next()`.

TF1 ran that iterator's op at every step: steps read successive batches, and evaluation
without `steps` ended when the dataset did. Called eagerly, `get_next()` gives the first
batch only, which the engine would repeat at every step. So while input_fn runs
(`recording_iterators()`), one-shot iterators (`dataset.make_one_shot_iterator()` and
`tf.compat.v1.data.make_one_shot_iterator(dataset)`) remember the elements their `get_next()`
returns, and `Recorded.dataset_of(result)` gives the iterator's dataset when input_fn
returned such an element (or its tensors rearranged: the dataset is mapped to that
structure): the engine reads that dataset instead, from its start, as TF1's iterator did.
Other values (tensors computed from the element, constants) raise, naming the fix.
"""
import contextlib

import tensorflow as tf


class Recorded:
    """The (element, dataset) pairs that one-shot iterators returned while input_fn ran."""

    def __init__(self):
        self.elements = []

    def dataset_of(self, result):
        """The dataset that input_fn's `result` was read from, or None when input_fn made no
        one-shot iterator or returned a Dataset. When `result` rearranges the element's
        tensors (`images, labels = it.get_next(); return images, {'labels': labels}`), the
        dataset is mapped to that structure.

        Raises:
          ValueError: `result` holds values that are not the iterator's tensors (tensors
            computed from them, constants): one batch, which TF1 would have recomputed
            from a new batch at every step.
        """
        if not self.elements or isinstance(result, (tf.data.Dataset, tf.compat.v1.data.Dataset)):
            return None
        leaves = tf.nest.flatten(result)
        for element, dataset in self.elements:
            positions = {id(leaf): index for index, leaf in enumerate(tf.nest.flatten(element))}
            taken = [positions.get(id(leaf)) for leaf in leaves]
            if None in taken:
                continue
            if _same_element(result, element):
                return dataset

            def rearranged(*components):
                flat = tf.nest.flatten(components)
                return tf.nest.pack_sequence_as(result, [flat[index] for index in taken])
            return dataset.map(rearranged)
        raise ValueError(
            "input_fn made a one-shot iterator (`make_one_shot_iterator()`) but returned values "
            "other than its `get_next()` tensors (tensors computed from them, or constants). "
            "TF1 read a new batch at every step from that iterator; here input_fn runs once, "
            "so its result would be one batch, repeated. Return the dataset itself, with "
            ".map(...) for the computation, or the iterator's tensors alone.")


def _same_element(result, element):
    if isinstance(result, tuple) and isinstance(element, tuple):
        return len(result) == len(element) and all(
            _same_element(a, b) for a, b in zip(result, element))
    if isinstance(result, dict) and isinstance(element, dict):
        return result.keys() == element.keys() and all(
            _same_element(result[key], element[key]) for key in result)
    return result is element


class _RecordingIterator:
    """A one-shot iterator whose `get_next()` elements are recorded with its dataset."""

    def __init__(self, iterator, dataset, recorded):
        self._iterator = iterator
        self._dataset = dataset
        self._recorded = recorded

    def get_next(self, name=None):
        element = self._iterator.get_next(name) if name else self._iterator.get_next()
        self._recorded.elements.append((element, self._dataset))
        return element

    def __getattr__(self, name):
        return getattr(self._iterator, name)


@contextlib.contextmanager
def recording_iterators():
    """Within the block, one-shot iterators record their elements; yields the `Recorded`."""
    recorded = Recorded()
    original_method = tf.compat.v1.data.Dataset.make_one_shot_iterator
    original_function = tf.compat.v1.data.make_one_shot_iterator

    def method(dataset):
        return _RecordingIterator(original_method(dataset), dataset, recorded)

    def function(dataset):
        return _RecordingIterator(original_function(dataset), dataset, recorded)

    tf.compat.v1.data.Dataset.make_one_shot_iterator = method
    tf.compat.v1.data.make_one_shot_iterator = function
    try:
        yield recorded
    finally:
        tf.compat.v1.data.Dataset.make_one_shot_iterator = original_method
        tf.compat.v1.data.make_one_shot_iterator = original_function
