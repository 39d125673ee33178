"""input_fns that end with `return dataset.make_one_shot_iterator().get_next()`.

TF1 ran that iterator's op at every step: steps read successive batches, and evaluation
without `steps` ended when the dataset did. Called eagerly, `get_next()` gives the first
batch only, which the engine would repeat at every step. So while input_fn runs
(`recording_iterators()`), one-shot iterators (`dataset.make_one_shot_iterator()` and
`tf.compat.v1.data.make_one_shot_iterator(dataset)`) remember the elements their `get_next()`
returns, and `Recorded.dataset_of(result)` gives the iterator's dataset when input_fn
returned such an element (or its tensors rearranged: the dataset is mapped to that
structure): the engine reads that dataset instead, from its start, as TF1's iterator did.

When input_fn computed on the element (reshapes, `tf.random_normal` noise, a features dict
built from it: `dataset_of` raises `ComputedFromIterator`), `computed_dataset` calls input_fn
again in a TF1 graph, takes the ops between the iterators' `get_next()` tensors and the
returned tensors, and maps the (zipped) datasets through a copy of them: TF1 ran those ops at
every step too, random ops drawing new values each time. Ops a dataset function cannot run
(placeholders, variables, lookup tables, other iterators) raise, naming the op.
"""
import contextlib

import tensorflow as tf


class ComputedFromIterator(ValueError):
    """input_fn returned values computed from a one-shot iterator's element (or constants);
    the message says how to return a dataset instead."""


_COMPUTED = (
    "input_fn made a one-shot iterator (`make_one_shot_iterator()`) but returned values other "
    "than its `get_next()` tensors (tensors computed from them, or constants). TF1 read a new "
    "batch at every step from that iterator; here input_fn runs once, so its result would be "
    "one batch, repeated. Return the dataset itself, with .map(...) for the computation, or "
    "the iterator's tensors alone.")


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
        raise ComputedFromIterator(_COMPUTED)


def computed_dataset(call_input_fn, recorded, seed=None):
    """The dataset of what input_fn computes from its one-shot iterators' elements.

    Args:
      call_input_fn: calls input_fn (again) and returns its result.
      recorded: the `Recorded` of the eager call, whose datasets are read.
      seed: the graph-level random seed input_fn ran under in TF1 (`tf_random_seed`).

    Raises:
      ComputedFromIterator: the result does not depend on any iterator, or input_fn cannot
        be traced in a TF1 graph.
      ValueError: an op the result needs cannot run in a dataset function (named).
    """
    graph = tf.Graph()
    graph.seed = seed
    try:
        with graph.as_default(), recording_iterators() as traced:
            result = call_input_fn()
    except Exception as error:  # pylint: disable=broad-except  # explained and chained
        raise ComputedFromIterator(
            f"input_fn computes on a one-shot iterator's `get_next()`; to read a new batch "
            f"at every step it is traced in a TF1 graph, which failed ({type(error).__name__}: "
            f"{error}). Return the dataset itself, with .map(...) for the computation.") from error
    if len(traced.elements) != len(recorded.elements):
        raise ComputedFromIterator("input_fn made a different number of one-shot iterators "
                                   "when called again: it must build the same input each time.")
    boundary = {}  # get_next() tensor ref -> (iterator index, component index)
    for index, (element, _) in enumerate(traced.elements):
        for component, tensor in enumerate(tf.nest.flatten(element)):
            boundary[tensor.ref()] = (index, component)
    leaves = tf.nest.flatten(result)
    for leaf in leaves:
        if not isinstance(leaf, tf.Tensor):
            raise ComputedFromIterator(
                f"input_fn returned {leaf!r}, not a tensor, with its one-shot iterator's "
                "tensors. Return tensors only, or the dataset itself.")
    ops, used = _ops_between(leaves, boundary)
    returned = [boundary[leaf.ref()] for leaf in leaves if leaf.ref() in boundary]
    iterators_used = sorted({index for index, _ in list(used.values()) + returned})
    if not iterators_used:  # constants, or random values: one batch, repeated
        raise ComputedFromIterator(_COMPUTED)
    datasets = [recorded.elements[index][1] for index in iterators_used]
    if len({id(dataset) for dataset in datasets}) < len(datasets):
        raise ValueError(
            "input_fn calls get_next() more than once on one one-shot iterator (TF1 read "
            "several batches per step from it). Batch the dataset accordingly and call "
            "get_next() once.")
    graph_def = _graph_def_of(graph, ops)
    position = {index: place for place, index in enumerate(iterators_used)}

    def computation(*elements):
        flat = [tf.nest.flatten(element) for element in elements]
        inputs = {name: flat[position[index]][component]
                  for name, (index, component) in used.items()}
        fetched = [leaf.name for leaf in leaves if leaf.ref() not in boundary]
        outputs = iter(tf.graph_util.import_graph_def(
            graph_def, input_map=inputs, return_elements=fetched, name="input_fn"))
        values = [flat[position[boundary[leaf.ref()][0]]][boundary[leaf.ref()][1]]
                  if leaf.ref() in boundary else next(outputs) for leaf in leaves]
        return tf.nest.pack_sequence_as(result, values)
    return tf.data.Dataset.zip(tuple(datasets)).map(computation)


def _ops_between(leaves, boundary):
    """The ops `leaves` need back to the `boundary` tensors, and `{tensor name: (iterator
    index, component)}` of the boundary tensors they use. Raises for ops a dataset function
    cannot run."""
    ops, used = set(), {}
    boundary_ops = {ref.deref().op for ref in boundary}
    stack = []
    for leaf in leaves:
        if leaf.ref() in boundary:
            continue
        stack.append(leaf.op)
    while stack:
        op = stack.pop()
        if op in ops:
            continue
        _check_servable(op)
        ops.add(op)
        for tensor in op.inputs:
            if tensor.ref() in boundary:
                used[tensor.name] = boundary[tensor.ref()]
            else:
                stack.append(tensor.op)
        stack.extend(c for c in op.control_inputs if c not in boundary_ops)
    return ops, used


def _check_servable(op):
    if op.type in ("Placeholder", "PlaceholderV2"):
        problem = "a placeholder, which nothing feeds"
    elif op.type.startswith("IteratorGetNext"):
        problem = "the element of an iterator other than a one-shot iterator"
    elif any(t.dtype == tf.resource or t.dtype.base_dtype != t.dtype for t in op.outputs):
        problem = ("a variable, lookup table or other resource, which a dataset function "
                   "cannot share")
    else:
        return
    raise ValueError(
        f"input_fn computes its result from a one-shot iterator's `get_next()` with op "
        f"'{op.name}' ({op.type}): {problem}. TF1 ran these ops at every step; here they run "
        "in a dataset map function, where this op cannot. Compute it in the dataset "
        "(`dataset.map(...)` before `make_one_shot_iterator()`) or in model_fn.")


def _graph_def_of(graph, ops):
    """A GraphDef of `ops` alone (with the graph's function library); control inputs from
    ops outside them (the iterators' get_next) are dropped."""
    full = graph.as_graph_def()
    names = {op.name for op in ops}
    graph_def = tf.compat.v1.GraphDef()
    graph_def.versions.CopyFrom(full.versions)
    graph_def.library.CopyFrom(full.library)
    for node in full.node:
        if node.name in names:
            copy = graph_def.node.add()
            copy.CopyFrom(node)
            del copy.input[:]
            copy.input.extend(name for name in node.input
                              if not name.startswith("^") or name[1:] in names)
    return graph_def


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
