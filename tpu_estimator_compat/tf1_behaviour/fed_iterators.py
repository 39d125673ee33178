"""input_fns that read an initializable iterator a hook initializes, over placeholders or not:

    images = tf.placeholder(tf.float32, images_array.shape)
    iterator = tf.data.Dataset.from_tensor_slices(images).batch(8).make_initializable_iterator()
    hook.init, hook.feed_dict = iterator.initializer, {images: images_array}
    return iterator.get_next()
    # the hook's after_create_session: session.run(self.init, self.feed_dict)

or a reinitializable one (`iterator = tf.data.Iterator.from_structure(types, shapes)`,
`hook.init = iterator.make_initializer(dataset)`, one or more datasets). TF1 built that
graph, and the hook's run filled the iterator before the first step. Here input_fn runs
eagerly, where neither a placeholder nor an initializable iterator can be made (and a
reinitializable one would read its dataset at once): on that error `fed_dataset` calls
input_fn again in a TF1 graph (`tf.compat.v1.wrap_function`) and turns each of the iterator's
datasets into a function of its placeholders. Each placeholder gets a host variable of its
dtype and shape (its feed); the engine reads a dataset that builds, when its iterator first
reads (after the hooks' after_create_session), the dataset of the initializer that ran last
from the feeds' values. A hook's session run of an initializer (`run_initializers`) assigns
the fed arrays to the feeds and makes its dataset the one read; reading before any ran
raises, as TF1's uninitialized iterator did (an initializer without placeholders in the
TABLE_INITIALIZERS collection counts as run: TF1's Scaffold ran those). Running an
initializer again after the first read raises NotImplementedError: TF1 restarted the
iterator, but here its dataset is read ahead of the steps (prefetched, several steps per
device loop), so no step could be told where the restart falls.
Feedable iterators (`from_string_handle`) are refused with an error naming the fix.
"""
import contextlib
import functools
import weakref

import tensorflow as tf

_ITERATOR = tf.compat.v1.data.Iterator
_EAGER_ERRORS = ("tf.placeholder() is not compatible with eager execution",
                 "`make_initializable_iterator()` is not supported in eager mode",
                 "a reinitializable iterator's `get_next()` is served in a TF1 graph only")
_NOT_INITIALIZED = (
    "input_fn's initializable iterator was read before its initializer ran: run "
    "`iterator.initializer` (or `iterator.make_initializer(dataset)`) with a feed_dict of its "
    "placeholders' values in a hook's after_create_session (session.run(initializer, "
    "feed_dict)), as TF1 required.")
_RESTARTED = (
    "input_fn's iterator initializer ran again after the iterator was read: restarting the "
    "iterator within an Estimator call, as TF1 did, is not served (its dataset is read ahead "
    "of the steps). End the call there instead (e.g. train(steps=...)) and call again: each "
    "call runs input_fn, and its hook's initializer, afresh.")
_NOT_SERVED = (
    "input_fn makes placeholders or an initializable iterator, which TF1 fed or "
    "initialized through a session run; they are served when input_fn returns the "
    "`get_next()` tensors of an initializable iterator (`make_initializable_iterator()`, or "
    "`tf.data.Iterator.from_structure(...)` with `make_initializer(dataset)`) whose "
    "initializer a hook runs (with a feed_dict of the placeholders). Return such an "
    "iterator's tensors, or a Dataset of the data itself (e.g. "
    "`tf.data.Dataset.from_tensor_slices(arrays)`).")
_FEEDABLE = (
    "input_fn makes a feedable iterator (`tf.data.Iterator.from_string_handle`), which is not "
    "served: the engine reads input_fn's dataset itself, and no session run feeds its handle "
    "per step. Return the `get_next()` of the dataset's own iterator instead: a "
    "reinitializable iterator (`tf.data.Iterator.from_structure(...)`, "
    "`make_initializer(dataset)` run by a hook), an initializable or one-shot one, or the "
    "Dataset itself.")

_FED_INPUTS = weakref.WeakKeyDictionary()  # initializer op -> _FedInput


def needs_graph(error):
    """Whether `error` (raised by input_fn called eagerly) is a placeholder's or an
    initializable or reinitializable iterator's."""
    return isinstance(error, RuntimeError) and any(text in str(error) for text in _EAGER_ERRORS)


class _FedInput:
    """One initializer of an iterator: its dataset, with a feed (a host variable) per
    placeholder it reads."""

    def __init__(self, iterator, index, dataset_fn, placeholders, element_spec):
        self._iterator, self._index = iterator, index  # an _Iterator, this one's place in it
        self._dataset_fn = dataset_fn  # placeholder values -> the dataset's variant
        self._element_spec = element_spec
        self._placeholders = {p.ref(): index for index, p in enumerate(placeholders)}
        with tf.init_scope():
            self.feeds = [tf.Variable(tf.zeros([d or 0 for d in p.shape.as_list()], p.dtype),
                                      trainable=False, shape=p.shape)
                          for p in placeholders]

    def initialize(self, feed_dict):
        if self._iterator.read:
            raise NotImplementedError(_RESTARTED)
        given = {key.ref(): value for key, value in (feed_dict or {}).items()
                 if isinstance(key, tf.Tensor)}
        missing = [ref.deref().name for ref in self._placeholders if ref not in given]
        if missing:
            raise tf.errors.InvalidArgumentError(
                None, None, f"You must feed a value for placeholder tensor(s) {missing} "
                "to initialize input_fn's iterator.")
        with tf.init_scope():
            for ref, index in self._placeholders.items():
                self.feeds[index].assign(tf.cast(given[ref], ref.deref().dtype))
            self._iterator.active.assign(self._index)

    def dataset(self, active):
        """The dataset, empty unless `active` is this initializer's index."""
        values = [tf.identity(feed.read_value()) for feed in self.feeds]
        dataset = tf.data.experimental.from_variant(self._dataset_fn(*values),
                                                    self._element_spec)
        return dataset.take(tf.where(tf.equal(active, self._index), tf.constant(-1, tf.int64),
                                     tf.constant(0, tf.int64)))


class _Iterator:
    """One iterator's initializers (one, or a reinitializable iterator's several), which of
    them ran last (-1: none) and whether the iterator was read."""

    def __init__(self):
        self.inputs = []
        self.read = False
        with tf.init_scope():
            self.active = tf.Variable(-1, trainable=False, dtype=tf.int64)

    def dataset(self):
        """Reads the dataset of the initializer that ran last, built when first read."""
        def build(_):
            active = tf.numpy_function(self._first_read, [self.active.read_value()], tf.int64)
            datasets = [fed.dataset(active) for fed in self.inputs]
            return functools.reduce(lambda a, b: a.concatenate(b), datasets)
        return tf.data.Dataset.range(1).flat_map(build)

    def _first_read(self, active):
        if active < 0:  # the error TF1's uninitialized iterator raised
            raise tf.errors.FailedPreconditionError(None, None, _NOT_INITIALIZED)
        self.read = True
        return active


class _RecordingIterator:
    """A graph iterator whose initializers and `get_next()` elements are recorded."""

    def __init__(self, iterator, recorded, initializers):
        self._iterator, self._recorded = iterator, recorded
        self._initializers = initializers  # [(initializer op, dataset)]

    def make_initializer(self, dataset, name=None):
        initializer = self._iterator.make_initializer(dataset, name)
        self._initializers.append((initializer, dataset))
        return initializer

    def get_next(self, name=None):
        element = self._iterator.get_next(name) if name else self._iterator.get_next()
        self._recorded.append((element, self._initializers))
        return element

    def __getattr__(self, name):
        return getattr(self._iterator, name)


class _GraphOnlyIterator:
    """An eager reinitializable iterator whose `get_next()` asks for a TF1 graph."""

    def __init__(self, iterator):
        self._iterator = iterator

    def get_next(self, name=None):
        raise RuntimeError(_EAGER_ERRORS[-1])

    def __getattr__(self, name):
        return getattr(self._iterator, name)


def _refuse_feedable(*args, **kwargs):
    raise NotImplementedError(_FEEDABLE)


@contextlib.contextmanager
def _patched(owner, replacements):
    """`owner`'s attributes replaced (by name) while the context lasts."""
    saved = {name: owner.__dict__[name] for name in replacements}
    for name, replacement in replacements.items():
        setattr(owner, name, replacement)
    try:
        yield
    finally:
        for name, value in saved.items():
            setattr(owner, name, value)


@contextlib.contextmanager
def eager_refusals():
    """While input_fn is first called (eagerly): a reinitializable iterator's `get_next()`
    raises the error that sends input_fn to `fed_dataset` (eagerly it would read its dataset
    at once, the initializer run by no hook); a feedable iterator's `from_string_handle`
    raises NotImplementedError (see _FEEDABLE)."""
    from_structure = _ITERATOR.from_structure

    def graph_only(*args, **kwargs):
        iterator = from_structure(*args, **kwargs)
        return _GraphOnlyIterator(iterator) if tf.executing_eagerly() else iterator

    with _patched(_ITERATOR, {"from_structure": staticmethod(graph_only),
                              "from_string_handle": staticmethod(_refuse_feedable)}):
        yield


@contextlib.contextmanager
def _recording():
    recorded = []
    method = tf.compat.v1.data.Dataset.make_initializable_iterator
    function = tf.compat.v1.data.make_initializable_iterator
    from_structure = _ITERATOR.from_structure

    def recording_method(dataset, shared_name=None):
        iterator = method(dataset, shared_name)
        return _RecordingIterator(iterator, recorded, [(iterator.initializer, dataset)])

    def recording_function(dataset, shared_name=None):
        iterator = function(dataset, shared_name)
        return _RecordingIterator(iterator, recorded, [(iterator.initializer, dataset)])

    def recording_from_structure(*args, **kwargs):
        return _RecordingIterator(from_structure(*args, **kwargs), recorded, [])

    with _patched(tf.compat.v1.data.Dataset, {"make_initializable_iterator": recording_method}), \
            _patched(tf.compat.v1.data, {"make_initializable_iterator": recording_function}), \
            _patched(_ITERATOR, {"from_structure": staticmethod(recording_from_structure),
                                 "from_string_handle": staticmethod(_refuse_feedable)}):
        yield recorded


def fed_dataset(call_input_fn, seed=None):
    """The dataset of an input_fn that returned an initializable or reinitializable
    iterator's `get_next()` (over placeholders or not; see the module docstring), its element
    arranged as input_fn returned it. `call_input_fn` calls input_fn again; `seed` is the
    graph-level seed it ran under in TF1 (`tf_random_seed`).

    Raises:
      ValueError: input_fn made no initializable iterator, or returned values other than
        one initialized iterator's `get_next()` tensors.
      NotImplementedError: input_fn made a feedable iterator.
    """
    traced = {}

    def in_graph():
        tf.compat.v1.get_default_graph().seed = seed
        with _recording() as recorded:
            traced["result"] = call_input_fn()
        traced["recorded"] = recorded
        return []

    wrapped = tf.compat.v1.wrap_function(in_graph, [])
    result, recorded = traced["result"], traced["recorded"]
    leaves = tf.nest.flatten(result)
    for element, initializers in recorded:
        positions = {leaf.ref(): index for index, leaf in enumerate(tf.nest.flatten(element))
                     if isinstance(leaf, tf.Tensor)}
        taken = [positions.get(leaf.ref()) if isinstance(leaf, tf.Tensor) else None
                 for leaf in leaves]
        if None not in taken and initializers:
            break
    else:
        raise ValueError(_NOT_SERVED)
    iterator = _Iterator()
    table_initializers = wrapped.graph.get_collection(tf.compat.v1.GraphKeys.TABLE_INITIALIZERS)
    for index, (initializer, dataset) in enumerate(initializers):
        variant = tf.data.experimental.to_variant(dataset)
        placeholders = _placeholders_of(variant)
        dataset_fn = wrapped.prune(feeds=placeholders, fetches=variant)
        fed = _FED_INPUTS[initializer] = _FedInput(iterator, index, dataset_fn, placeholders,
                                                   dataset.element_spec)
        iterator.inputs.append(fed)
        if not placeholders and initializer in table_initializers:
            fed.initialize({})  # TF1's Scaffold ran the table initializers with the session

    def arranged(*components):
        flat = tf.nest.flatten(components)
        return tf.nest.pack_sequence_as(result, [flat[index] for index in taken])
    return iterator.dataset().map(arranged)


def _placeholders_of(tensor):
    """The placeholders `tensor` depends on, by name."""
    found, seen, stack = [], set(), [tensor.op]
    while stack:
        op = stack.pop()
        if op in seen:
            continue
        seen.add(op)
        if op.type in ("Placeholder", "PlaceholderV2"):
            found.append(op.outputs[0])
        stack.extend(t.op for t in op.inputs)
        stack.extend(op.control_inputs)
    return sorted(found, key=lambda t: t.name)


def run_initializers(fetches, feed_dict):
    """What a session run of input_fns' iterator initializers does: the fed values reach
    their datasets. True when `fetches` (an op or a list of ops) are all such initializers;
    False (nothing done) otherwise."""
    ops = fetches if isinstance(fetches, (list, tuple)) else [fetches]
    if not ops or not all(isinstance(op, tf.Operation) and op in _FED_INPUTS for op in ops):
        return False
    for op in ops:
        _FED_INPUTS[op].initialize(feed_dict)
    return True
