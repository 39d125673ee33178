"""input_fns that read an initializable iterator a hook initializes, over placeholders or not:

    images = tf.placeholder(tf.float32, images_array.shape)
    iterator = tf.data.Dataset.from_tensor_slices(images).batch(8).make_initializable_iterator()
    hook.init, hook.feed_dict = iterator.initializer, {images: images_array}
    return iterator.get_next()
    # the hook's after_create_session: session.run(self.init, self.feed_dict)

TF1 built that graph, and the hook's run filled the iterator with the fed arrays before the
first step. Here input_fn runs eagerly, where neither a placeholder nor an initializable
iterator can be made: on that error `fed_dataset` calls input_fn again in a TF1 graph
(`tf.compat.v1.wrap_function`) and turns the iterator's dataset into a function of its
placeholders. Each placeholder gets a host variable of its dtype and shape (its feed); the
engine reads a dataset that builds the graph's dataset from the feeds' values when its
iterator first reads, after the hooks' after_create_session. A hook's session run of the
iterator's initializer (`run_initializers`) assigns the fed arrays to the feeds; reading
before that raises, as TF1's uninitialized iterator did (an initializer without placeholders
in the TABLE_INITIALIZERS collection counts as run: TF1's Scaffold ran those). Running the
initializer again later does not restart the iterator (TF1 restarted it).
"""
import contextlib
import weakref

import tensorflow as tf

_EAGER_ERRORS = ("tf.placeholder() is not compatible with eager execution",
                 "`make_initializable_iterator()` is not supported in eager mode")
_NOT_INITIALIZED = (
    "input_fn's initializable iterator was read before its initializer ran: run "
    "`iterator.initializer` with a feed_dict of its placeholders' values in a hook's "
    "after_create_session (session.run(initializer, feed_dict)), as TF1 required.")

_FED_INPUTS = weakref.WeakKeyDictionary()  # initializer op -> _FedInput


def needs_graph(error):
    """Whether `error` (raised by input_fn called eagerly) is a placeholder's or an
    initializable iterator's."""
    return isinstance(error, RuntimeError) and any(text in str(error) for text in _EAGER_ERRORS)


class _FedInput:
    """One initializable iterator's dataset, with a feed (a host variable) per placeholder it
    reads and whether its initializer ran."""

    def __init__(self, dataset_fn, placeholders, element_spec):
        self._dataset_fn = dataset_fn  # placeholder values -> the dataset's variant
        self._element_spec = element_spec
        self._placeholders = {p.ref(): index for index, p in enumerate(placeholders)}
        with tf.init_scope():
            self.feeds = [tf.Variable(tf.zeros([d or 0 for d in p.shape.as_list()], p.dtype),
                                      trainable=False, shape=p.shape)
                          for p in placeholders]
            self.initialized = tf.Variable(False, trainable=False)

    def initialize(self, feed_dict):
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
            self.initialized.assign(True)

    def dataset(self):
        def build(_):
            check = tf.numpy_function(_check_initialized, [self.initialized], tf.bool)
            with tf.control_dependencies([check]):
                values = [tf.identity(feed.read_value()) for feed in self.feeds]
            return tf.data.experimental.from_variant(self._dataset_fn(*values),
                                                     self._element_spec)
        return tf.data.Dataset.range(1).flat_map(build)


def _check_initialized(initialized):
    if not initialized:  # the error TF1's uninitialized iterator raised
        raise tf.errors.FailedPreconditionError(None, None, _NOT_INITIALIZED)
    return True


class _RecordingIterator:
    """An initializable iterator whose `get_next()` elements are recorded."""

    def __init__(self, iterator, dataset, recorded):
        self._iterator, self._dataset, self._recorded = iterator, dataset, recorded

    def get_next(self, name=None):
        element = self._iterator.get_next(name) if name else self._iterator.get_next()
        self._recorded.append((element, self._dataset, self._iterator.initializer))
        return element

    def __getattr__(self, name):
        return getattr(self._iterator, name)


@contextlib.contextmanager
def _recording():
    recorded = []
    method = tf.compat.v1.data.Dataset.make_initializable_iterator
    function = tf.compat.v1.data.make_initializable_iterator

    def recording_method(dataset, shared_name=None):
        return _RecordingIterator(method(dataset, shared_name), dataset, recorded)

    def recording_function(dataset, shared_name=None):
        return _RecordingIterator(function(dataset, shared_name), dataset, recorded)

    tf.compat.v1.data.Dataset.make_initializable_iterator = recording_method
    tf.compat.v1.data.make_initializable_iterator = recording_function
    try:
        yield recorded
    finally:
        tf.compat.v1.data.Dataset.make_initializable_iterator = method
        tf.compat.v1.data.make_initializable_iterator = function


def fed_dataset(call_input_fn, seed=None):
    """The dataset of an input_fn that returned an initializable iterator's `get_next()`
    (over placeholders or not; see the module docstring), its element arranged as input_fn
    returned it. `call_input_fn` calls input_fn again; `seed` is the graph-level seed it ran
    under in TF1 (`tf_random_seed`).

    Raises:
      ValueError: input_fn made no initializable iterator, or returned values other than
        one iterator's `get_next()` tensors.
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
    for element, dataset, initializer in recorded:
        positions = {leaf.ref(): index for index, leaf in enumerate(tf.nest.flatten(element))
                     if isinstance(leaf, tf.Tensor)}
        taken = [positions.get(leaf.ref()) if isinstance(leaf, tf.Tensor) else None
                 for leaf in leaves]
        if None not in taken:
            break
    else:
        raise ValueError(
            "input_fn makes placeholders or an initializable iterator, which TF1 fed or "
            "initialized through a session run; they are served when input_fn returns the "
            "`get_next()` tensors of an initializable iterator "
            "(`make_initializable_iterator()`) whose initializer a hook runs (with a "
            "feed_dict of the placeholders). Return such an iterator's tensors, or a Dataset "
            "of the data itself (e.g. `tf.data.Dataset.from_tensor_slices(arrays)`).")
    variant = tf.data.experimental.to_variant(dataset)
    placeholders = _placeholders_of(variant)
    dataset_fn = wrapped.prune(feeds=placeholders, fetches=variant)
    fed = _FED_INPUTS[initializer] = _FedInput(dataset_fn, placeholders, dataset.element_spec)
    if not placeholders and initializer in wrapped.graph.get_collection(
            tf.compat.v1.GraphKeys.TABLE_INITIALIZERS):
        fed.initialize({})  # TF1's Scaffold ran the table initializers with the session

    def arranged(*components):
        flat = tf.nest.flatten(components)
        return tf.nest.pack_sequence_as(result, [flat[index] for index in taken])
    return fed.dataset().map(arranged)


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
