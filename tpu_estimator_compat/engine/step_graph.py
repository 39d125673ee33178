"""A step traced as a TF1 graph: only what is fetched runs, reads see the step's start values.

TF1 ran a `Session.run(fetches)`: only the ops the fetches needed ran, and ops with no
dependency between them ran in any order, reads of a variable in practice before the
optimizer's updates at the end of the step. A `tf.function` instead runs every stateful op
it traced and orders all ops on a variable by program order (automatic control
dependencies). A v1 `model_fn` that builds `minimize()` in EVAL mode then trains during
`evaluate()`, and a `tf.reshape(global_step, [1])` read after `minimize()` sees the
incremented step.

So the step is traced the TF1 way, once:

    StepGraph.trace(fn, element_spec)   fn(element) traced into a FuncGraph with NO automatic
                                        control dependencies (the model's variables are
                                        created eagerly, outside it, and captured)
    step.instantiate(element)           inside the device loop's tf.function: copies into the
                                        current graph only the ops the outputs need (their
                                        data and control inputs, transitively): the prune
                                        TF1's Session.run did. One GraphDef import of the
                                        pruned ops, in copy order (`import_ops_inline`)

The copy is made in an order that puts every op that does not depend on a variable update
before all updates: the loop graph's automatic control dependencies then order reads with
no dependency on an update before it, deterministically, which is the value TF1 read.
Reads that depend on an update (through `control_dependencies` or data) stay after it.

Copying instead of calling the pruned graph as a nested function keeps the step inline in
the loop body (a nested call was measured 1.4x slower), and the user's model_fn is not
called again for the loop: once per compiled program (per replica with CPU/GPU semantics),
as TF1 called it once per graph.
"""
import contextlib
import functools
import heapq
import re
import threading

import tensorflow as tf

from tpu_estimator_compat.tf_internals import distribute
from tpu_estimator_compat.tf_internals import graphs
from tpu_estimator_compat.tf_internals import xla

# tf_keras (and TensorFlow's own Keras code) treat a graph of this name as a TF1 graph
# (`tf.compat.v1.wrap_function`'s): legacy layers then file their updates in UPDATE_OPS (for
# the user's train op to depend on) instead of running them on the fly.
_TF1_GRAPH_NAME_PREFIX = "wrapped_function_"
# Op attributes not copied: colocation with ops of the traced graph (names that the copy
# does not keep), the mark of `outside_compilation` (read by `xla_step`).
_DROPPED_ATTRIBUTES = (graphs.COLOCATION_ATTRIBUTE, xla.OUTSIDE_COMPILATION_ATTRIBUTE)


class StepGraph:
    """One traced step: its FuncGraph, its input placeholders and its structured outputs."""

    def __init__(self, graph, inputs, outputs):
        self.graph = graph
        self._inputs = inputs  # placeholders of the flattened element, in order
        self.outputs = outputs  # nest of tensors of `graph` (None leaves: no output)
        self._pruned_ops = ops_in_copy_order(tf.nest.flatten(outputs, expand_composites=True))

    @property
    def pruned_ops(self):
        """The ops the outputs need, in copy order (the input and capture placeholders
        included): what `instantiate` copies."""
        return self._pruned_ops

    @classmethod
    def trace(cls, fn, element_spec, name="step", first_op_seed=0):
        """Traces `fn(element)` for elements of `element_spec`; returns the StepGraph.
        Its unseeded random ops take op seeds `first_op_seed`, `first_op_seed` + 1, ...

        Runs eagerly (not inside another trace). Variables `fn` creates must be created
        eagerly (under `tf.init_scope()`), as the engine's variable store does.
        """
        graph = _ReplicaCollectionsGraph(_TF1_GRAPH_NAME_PREFIX + name)
        graphs.continue_op_seeds(graph, first_op_seed)
        with graph.as_default():
            inputs = [tf.compat.v1.placeholder(spec.dtype, spec.shape)
                      for spec in tf.nest.flatten(element_spec, expand_composites=True)]
            graph.step_inputs = inputs
            graph.step_input_ops = frozenset(p.op for p in inputs)
            element = tf.nest.pack_sequence_as(element_spec, inputs, expand_composites=True)
            outputs = fn(element)
        return cls(graph, inputs, outputs)

    def instantiate(self, element, copy_ops=None):
        """Copies the pruned step into the current graph, fed `element`; returns outputs.

        `copy_ops(graph, ops, destination, copies, fetches)` makes the copies (default
        `import_ops_inline`; `xla_step` compiles them with XLA).
        """
        inputs = dict(zip((p.ref() for p in self._inputs),
                          tf.nest.flatten(element, expand_composites=True)))
        return _copy(self.graph, self._pruned_ops, inputs, self.outputs,
                     copy_ops or import_ops_inline)


def eager_value(tensor):
    """The value of `tensor`, a tensor of a step being traced that needs no step input,
    computed now (e.g. a variable's initial value, which TF1 ran in its init op)."""
    ops = ops_in_copy_order([tensor])
    if _reads_step_input(ops):
        raise ValueError(
            f"{tensor} is computed from the model's input, so it cannot be the initial value "
            "of a variable (TF1 also ran initializers without input). Initialize the "
            "variable from constants, initializers or other variables.")
    needed = set(ops)
    captured = {internal.op: external for external, internal in tensor.graph.captures
                if internal.op in needed}
    value = graphs.run_eagerly(ops, tensor, captured)
    return run_ops(tensor.graph, ops, tensor) if value is None else value


def run_now(operations):
    """Runs `operations` (of a step being traced, needing no step input) now, once, with
    what they need (e.g. table initializers, which TF1 ran in its init op); raises a
    ValueError naming the first operation that would read the step's input."""
    if not operations:
        return
    ops = ops_in_copy_order(operations)
    if _reads_step_input(ops):
        reading = next(operation for operation in operations
                       if _reads_step_input(ops_in_copy_order([operation])))
        raise ValueError(f"{reading.name} reads the model's input.")
    run_ops(operations[0].graph, ops, None)


def run_ops(graph, ops, outputs, fed=()):
    """`outputs` of `ops` copied out of `graph` and run now in a function of their own; the
    tensors of `fed` ([(tensor of graph, value)]) replaced by their values."""
    return ops_function(graph, ops, outputs, [tensor for tensor, _ in fed])(
        [value for _, value in fed])


def ops_function(graph, ops, outputs, fed_tensors=()):
    """`run_ops` as a function of the values of `fed_tensors`, to call again and again: the
    values are arguments of its tf.function (a file name or an array is not made a
    constant of it), which traces once per shape."""
    refs = [tensor.ref() for tensor in fed_tensors]
    # A partial, not a lambda: TensorFlow warns of "retracing" when tf.functions of one code
    # object trace again and again (one per traced program or variable here).
    function = tf.function(functools.partial(_copy_fed, graph, ops, refs, outputs),
                           autograph=False)
    return lambda values: function([tf.convert_to_tensor(value, tensor.dtype)
                                    for tensor, value in zip(fed_tensors, values)])


def _copy_fed(graph, ops, refs, outputs, values):
    return _copy(graph, ops, dict(zip(refs, values)), outputs)


def _reads_step_input(ops):
    return any(op.type == "Placeholder" and not _is_capture(op) for op in ops)


def _is_capture(op):
    return any(internal.op is op for _, internal in op.graph.captures)


def _copy(graph, ops, inputs, outputs, copy_ops=None):
    """Copies `ops` of `graph` into the current graph; `inputs` maps placeholders (refs) to
    their values; returns `outputs` (a nest of tensors of `graph`, or None) as copied."""
    destination = tf.compat.v1.get_default_graph()
    graphs.copy_functions(graph, destination)
    copies = dict(inputs)
    copied_ops = set(ops)
    for external, internal in graph.captures:
        if internal.op in copied_ops:  # only the captures the copy uses (of many variables)
            copies[internal.ref()] = destination.capture(external)
    for internal, closure in graphs.by_ref_captures(graph):
        # Values bound when the function runs (e.g. collective keys): the closure captures
        # them in the current graph.
        internal = tf.nest.flatten(internal, expand_composites=True)
        values = tf.nest.flatten(closure(), expand_composites=True)
        copies.update((i.ref(), v) for i, v in zip(internal, values))
    fetches = [t for t in tf.nest.flatten(outputs, expand_composites=True)
               if t is not None and not graphs.is_eager_tensor(t)]
    (copy_ops or copy_ops_inline)(
        graph, [op for op in ops  # not the inputs and captures
                if not (op.outputs and all(t.ref() in copies for t in op.outputs))],
        destination, copies, fetches)
    return tf.nest.map_structure(
        lambda t: t if t is None else (destination.capture(t)
                                       if graphs.is_eager_tensor(t) else copies[t.ref()]),
        outputs, expand_composites=True)


def copy_ops_inline(graph, ops, destination, copies, fetches):  # pylint: disable=unused-argument
    """Copies `ops` (of `graph`, in order) one by one into `destination`; `copies` maps the
    tensors (refs) of the ops' inputs to their copies and gets the ops' outputs, among which
    the `fetches` (tensors) are the step's outputs."""
    op_copies = {}
    for op in ops:
        op_copies[op] = copy_op(op, destination, copies, op_copies)


def import_ops_inline(graph, ops, destination, copies, fetches):
    """`copy_ops_inline` as one GraphDef import (`graphs.import_ops`): the whole step into
    the loop body several times faster than op by op (15,000 ops of a 24-layer encoder:
    4.3 s op by op). `copies` gets the copies of the `fetches` only. Under a
    `tf.control_dependencies` block, which an import would not apply, op by op."""
    if graphs.has_control_dependencies(destination):
        copy_ops_inline(graph, ops, destination, copies, fetches)
        return
    copies.update(graphs.import_ops(graph, ops, destination, dict(copies), fetches,
                                    _DROPPED_ATTRIBUTES))


class _ReplicaCollectionsGraph(graphs.KeyedCollectionsFuncGraph):
    """A FuncGraph whose v1 collections are per replica.

    TF1 traced one replica's model; here every replica's model_fn call builds into the same
    graph (on its own thread under MirroredStrategy). Each replica has its own collections,
    so what one replica's model_fn files (UPDATE_OPS, LOSSES, MOVING_AVERAGE_VARIABLES, the
    v1 variable store...) is not seen by the next. Code outside the replicas (cross-replica
    context: the step's host view, merge_call functions, scaffold_fn) sees replica 0's, as
    TF1 code saw the one replica's. Collections start empty, not shared with eager code.
    """

    def __init__(self, name):
        super().__init__(name, key=current_replica)
        self.step_inputs = []  # the placeholders of the step's flattened input, in order
        self.step_input_ops = frozenset()  # their ops

    def get_collection(self, name, scope=None):
        """Filtering by `scope` ignores the `replica_N/` name scope MirroredStrategy gives
        replica N > 0's ops: TF1 built the replica under its own names, and code filtering
        by a variable scope's name (TF-GAN's update ops, regularization losses of a scope)
        must find the same ops in every replica."""
        items = super().get_collection(name)
        if scope is None:
            return items
        pattern, prefix = re.compile(scope), f"replica_{current_replica()}/"
        return [item for item in items if hasattr(item, "name") and (
            pattern.match(item.name) or pattern.match(_without_prefix(item.name, prefix)))]


_THREAD = threading.local()


@contextlib.contextmanager
def building_replica():
    """Enter in the replica function: this thread builds the current replica's model (also
    where it escapes the graph under `tf.init_scope()`)."""
    replica_id = distribute.local_replica_index(tf.distribute.get_replica_context())
    _THREAD.replica_id = replica_id or 0  # None: one trace builds every replica (TPUStrategy)
    try:
        yield
    finally:
        del _THREAD.replica_id


def _without_prefix(name, replica_scope):
    """`name` without the name scope `replica_scope` (at its start or after an outer scope)."""
    start = name.find(replica_scope)
    if start == 0 or (start > 0 and name[start - 1] == "/"):
        return name[:start] + name[start + len(replica_scope):]
    return name


def current_replica():
    """The replica of this process this thread builds: 0 outside replica functions, and
    wherever one trace builds all replicas (TPUStrategy)."""
    return getattr(_THREAD, "replica_id", 0)


def copy_op(op, destination, copies, op_copies):
    """Copies `op` into `destination`, its inputs from `copies` (tensor refs -> copies),
    its control inputs those of `op_copies` (ops -> copies; others are left out)."""
    inputs = [copies[t.ref()] for t in op.inputs]
    control_inputs = [op_copies[c] for c in op.control_inputs if c in op_copies]
    attrs = {key: value for key, value in op.node_def.attr.items()
             if key not in _DROPPED_ATTRIBUTES}
    with tf.control_dependencies(control_inputs):
        # On the device the op was traced on (each replica's own): without it the placer
        # put every replica's computation on the first device.
        copy = graphs.create_op(destination, op.type, inputs, [t.dtype for t in op.outputs],
                                op.name, attrs, op.op_def, device=op.device)
    for original, copied in zip(op.outputs, copy.outputs):
        copied.set_shape(original.shape)
        copies[original.ref()] = copied
    return copy


def ops_in_copy_order(fetches, fed=frozenset(), excluded=frozenset()):
    """The ops `fetches` need, inputs first; ops that need no variable update come first.
    `fed`: refs of tensors given a value (the ops they come from are needed only for their
    other outputs, as TF1's Session pruned at a feed); `excluded`: ops left out, with the
    edges to them."""
    needed = set()
    stack = [t.op if isinstance(t, tf.Tensor) else t for t in fetches
             if t is not None and not graphs.is_eager_tensor(t)  # eager: no op
             and not (isinstance(t, tf.Tensor) and t.ref() in fed)]
    while stack:
        op = stack.pop()
        if op in needed or op in excluded:
            continue
        needed.add(op)
        stack.extend(t.op for t in op.inputs if t.ref() not in fed)
        stack.extend(op.control_inputs)
    order = {op: index for index, op in enumerate(_graph_ops(needed))}
    predecessors = {op: {p for p in _predecessors(op, fed) if p in needed} for op in needed}
    waiting = {op: len(predecessors[op]) for op in needed}
    users = {op: [] for op in needed}
    for op in needed:
        for predecessor in predecessors[op]:
            users[predecessor].append(op)
    ready = [(_is_update(op), order[op], op) for op, count in waiting.items() if count == 0]
    heapq.heapify(ready)
    result = []
    while ready:
        _, _, op = heapq.heappop(ready)
        result.append(op)
        for user in users[op]:
            waiting[user] -= 1
            if waiting[user] == 0:
                heapq.heappush(ready, (_is_update(user), order[user], user))
    return result


def _graph_ops(ops):
    """`ops` in their graph's creation order."""
    if not ops:
        return []
    graph = next(iter(ops)).graph
    return [op for op in graph.get_operations() if op in ops]


def _predecessors(op, fed=frozenset()):
    return [t.op for t in op.inputs if t.ref() not in fed] + list(op.control_inputs)


def _is_update(op):
    """Whether `op` may change a resource (a variable update, a stateful call...)."""
    if op.type in graphs.RESOURCE_READ_OPS:
        return False
    return graphs.is_stateful(op) and any(t.dtype == tf.resource for t in op.inputs)
