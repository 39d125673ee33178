"""The simulated TPU's replicas 1..N-1 copied from replica 0's trace: model_fn runs once.

On a TPU one trace of model_fn built the program every core ran. The simulated TPU is a
MirroredStrategy over local devices, which calls the replica function once per replica,
each on its own thread. With a `ReplicaReplay` only replica 0 calls it; every later
replica copies replica 0's ops:

    replica 0   runs the replica function. Its ops are recorded in segments: one ending at
                each `merge_call` (CrossShardOptimizer's all-reduce, cross_replica_sum...),
                one ending with the function
    replica r   for each segment: imports a copy of its ops under `replica_r/` (one GraphDef
                import), then makes the segment's merge_call with its copies of replica
                0's arguments, under its copies of replica 0's control dependencies; in
                the end returns its copy of replica 0's outputs

MirroredStrategy runs its threads one at a time, in replica order, each up to its next
merge_call, so a segment is complete when a later replica copies it.

In a copy: ops on replica 0's device run on replica r's; a captured variable handle is
replica r's copy of the variable; the constants `replica_id_in_sync_group` made for replica
0 are r (summaries are recorded on replica 0 only, `xla.replica_id()`...); stateful random
ops with op seeds take the graph's next op seeds, as when each replica called model_fn;
replica r's collections are replica 0's with the copies in them (table initializers,
UPDATE_OPS).

What cannot be copied raises `ReplayUnsupported`; the engine then traces again, calling
model_fn once per replica: TF1 control flow (Switch/Merge, not functional), and an op of
an earlier segment changed later (a loop, cond or function call differentiated after a
merge_call gets inputs and outputs; a read given control inputs).

Replica 0's all-reduces and all-gathers are recorded too (`ReplicaZero.reductions`): the
checkpoints' `.meta` graph is made of replica 0's ops with them replaced.
"""
import contextlib
import dataclasses
import threading

import tensorflow as tf

from tpu_estimator_compat.tf_internals import distribute
from tpu_estimator_compat.tf_internals import graphs
from tpu_estimator_compat.tf1_behaviour import patches

# Ops that code may change after making them: a functional loop, branch or call gets inputs
# and outputs when it is differentiated; a variable read gets control inputs
# (`metric_values`).
_CHANGED_LATER = frozenset({"While", "StatelessWhile", "If", "StatelessIf", "Case",
                            "StatelessCase", "PartitionedCall", "StatefulPartitionedCall",
                            "ReadVariableOp"})
_TF1_CONTROL_FLOW = frozenset({"Enter", "RefEnter", "Exit", "RefExit", "Switch", "RefSwitch",
                               "Merge", "RefMerge", "NextIteration", "RefNextIteration",
                               "LoopCond"})


class ReplayUnsupported(Exception):
    """Replica 0's ops cannot be copied for the other replicas (see the module docstring)."""


@dataclasses.dataclass
class Reduction:
    """An all-reduce or all-gather replica 0 made."""
    kind: str  # "all_reduce" or "all_gather"
    argument: object  # the all-reduce's ReduceOp, the all-gather's axis
    value: object  # the nest of tensors it reduced or gathered
    result: object  # the nest replica 0 got


@dataclasses.dataclass
class ReplicaZero:
    """Replica 0's part of a step traced with copied replicas."""
    ops: list  # the ops it made
    inputs: list  # the tensors of its input
    reductions: list  # its `Reduction`s, in order


@dataclasses.dataclass
class _MergeCall:
    """A merge_call of replica 0: what it was called with, and what it returned."""
    merge_fn: object
    args: tuple
    kwargs: dict
    control_dependencies: list  # ops
    result: object = None


@dataclasses.dataclass
class _Segment:
    """Replica 0's ops from one merge_call (or the start) to the next (or the end)."""
    ops: list  # in creation order
    merge_call: _MergeCall = None  # the merge_call ending it; None: the replica's end
    # a segment ended by a merge_call: {op that may change later: its numbers of inputs,
    # control inputs and outputs}
    input_counts: dict = None
    _prepared: "_PreparedSegment" = None

    def prepared(self, graph):
        """The segment as the replicas copy it (made on first use)."""
        if self._prepared is None:
            unsupported = sorted({op.type for op in self.ops if op.type in _TF1_CONTROL_FLOW})
            if unsupported:
                raise ReplayUnsupported(f"TF1 control flow ops ({', '.join(unsupported)})")
            captured = {internal.op: external for external, internal in graph.captures}
            placeholders = {op: captured.get(op) for op in self.ops
                            if op.type == "Placeholder"}
            copied = _topological([op for op in self.ops if op not in placeholders])
            members = set(copied)
            inputs = {t.ref(): t for op in copied for t in op.inputs if t.op not in members}
            controls = {c for op in copied for c in op.control_inputs if c not in members}
            self._prepared = _PreparedSegment(
                placeholders, copied, [op.node_def for op in copied], list(inputs.values()),
                list(controls))
        return self._prepared


@dataclasses.dataclass
class _PreparedSegment:
    placeholders: dict  # {Placeholder op: the value it captures, or None}
    copied: list  # the other ops, in a topological order
    nodes: list  # their NodeDefs
    inputs: list  # tensors of ops outside the segment that its ops take
    control_inputs: list  # ops outside the segment its ops wait for


@dataclasses.dataclass
class _Recording:
    element: object  # replica 0's input
    segments: list = dataclasses.field(default_factory=list)
    replica_id_ops: set = dataclasses.field(default_factory=set)
    reductions: list = dataclasses.field(default_factory=list)
    result: object = None
    done: bool = False


class ReplicaReplay:
    """Builds the replicas of one `strategy.run` in a traced step from replica 0's ops."""

    def __init__(self, strategy, store):
        self._devices = [tf.DeviceSpec.from_string(d)
                         for d in strategy.extended.worker_devices]
        self._strategy = strategy
        self._store = store
        self._recording = None
        self._thread = threading.local()  # `.start` set on replica 0's thread while it runs
        self._graph = None
        self._device_copies = {}  # (device, replica) -> the replica's device
        self._handles = {}  # replica -> (variables seen, `_replica_handles`)

    @contextlib.contextmanager
    def active(self):
        """Enter around the `strategy.run` whose replica function calls `run`."""
        with distribute.replica_ids_observed(self._observe_replica_id), \
                distribute.reductions_observed(self._observe_reduction):
            yield

    def run(self, replica, replica_fn, element):
        """Replica `replica`'s outputs: `replica_fn(element)` on replica 0, else the copy."""
        if replica == 0:
            return self._record(replica_fn, element)
        return self._replay(replica, element)

    def replica_0(self):
        """Replica 0 in the step last traced: a `ReplicaZero`."""
        recording = self._recording
        return ReplicaZero([op for segment in recording.segments for op in segment.ops],
                           _leaves(recording.element), list(recording.reductions))

    def merge_call(self, context, merge_fn, args, kwargs):
        """The merge_call of the replica function (see `patches.patched_rebuilt_apis`)."""
        if not self._recording_here():
            return patches.original_merge_call(context, merge_fn, args, kwargs)
        merge = _MergeCall(merge_fn, args, kwargs, list(
            graphs.current_control_dependencies(self._graph)))
        self._end_segment(merge)
        merge.result = patches.original_merge_call(context, merge_fn, args, kwargs)
        self._thread.start = len(self._graph.get_operations())
        return merge.result

    def _observe_replica_id(self, value):
        if (self._recording_here() and isinstance(value, tf.Tensor)
                and not graphs.is_eager_tensor(value)):
            self._recording.replica_id_ops.add(value.op)

    def _observe_reduction(self, kind, argument, value, result):
        if self._recording_here():
            self._recording.reductions.append(Reduction(kind, argument, value, result))

    def _recording_here(self):
        """Whether this thread is replica 0's, running the replica function."""
        return getattr(self._thread, "start", None) is not None

    def _record(self, replica_fn, element):
        self._graph = tf.compat.v1.get_default_graph()
        self._recording = _Recording(element)
        self._thread.start = len(self._graph.get_operations())
        try:
            result = replica_fn(element)
            self._end_segment(None)
        finally:
            self._thread.start = None
        self._recording.result = result
        self._recording.done = True
        return result

    def _end_segment(self, merge):
        ops = self._graph.get_operations()[self._thread.start:]
        counts = None if merge is None else {op: _input_counts(op) for op in ops
                                             if op.type in _CHANGED_LATER}
        self._recording.segments.append(_Segment(ops, merge, counts))

    def _replay(self, replica, element):
        recording = self._recording
        graph = tf.compat.v1.get_default_graph()
        copies = _Copies()
        copies.add(recording.element, element)
        index = 0
        while True:
            segment = recording.segments[index]
            _check_unchanged(recording.segments[:index])
            self._copy_segment(graph, segment, replica, copies)
            merge = segment.merge_call
            if merge is None:
                break
            with tf.control_dependencies([copies.op(op)
                                          for op in merge.control_dependencies]):
                result = patches.original_merge_call(
                    tf.distribute.get_replica_context(), merge.merge_fn,
                    copies.map(merge.args), copies.map(merge.kwargs))
            copies.add(merge.result, result)
            index += 1
        if not recording.done:
            raise RuntimeError("Replica 0 has not finished its step.")
        _check_unchanged(recording.segments[:-1])
        _copy_collections(graph, replica, copies)
        return copies.map(recording.result)

    def _copy_segment(self, graph, segment, replica, copies):
        prepared = segment.prepared(graph)
        handles = self._replica_handles(replica)
        for placeholder, external in prepared.placeholders.items():
            if external is not None and id(external) in handles:
                copies.tensors[placeholder.outputs[0].ref()] = graph.capture(
                    handles[id(external)])
        input_map = {t.name: copies.tensor(t) for t in prepared.inputs}
        control_map = {op.name: copies.op(op) for op in prepared.control_inputs}
        nodes = [self._node_for_replica(node, op, replica, graph)
                 for op, node in zip(prepared.copied, prepared.nodes)]
        new_ops = graphs.import_nodes(graph, nodes, graph.graph_def_versions, input_map,
                                      control_map, f"replica_{replica}")
        copies.imported.update(zip(prepared.copied, new_ops))

    def _node_for_replica(self, node, op, replica, graph):
        """`node` (of replica 0's `op`) as replica `replica`'s copy of it."""
        copy = type(node)()
        copy.CopyFrom(node)
        copy.device = self._replica_device(node.device, replica)
        if graphs.COLOCATION_ATTRIBUTE in copy.attr:
            del copy.attr[graphs.COLOCATION_ATTRIBUTE]
        if op in self._recording.replica_id_ops:
            copy.attr["value"].tensor.CopyFrom(tf.make_tensor_proto(replica, tf.int32))
        elif _takes_op_seed(op, copy):
            with graph.as_default():
                seed, seed2 = tf.compat.v1.get_seed(None)
            if seed is not None:  # a global seed: the graph's next op seed
                copy.attr["seed"].i, copy.attr["seed2"].i = seed, seed2
        return copy

    def _replica_device(self, device, replica):
        """`device` (of an op of replica 0) for replica `replica`'s copy of the op."""
        key = (device, replica)
        if key not in self._device_copies:
            spec = tf.DeviceSpec.from_string(device)
            first = self._devices[0]
            self._device_copies[key] = (
                spec.make_merged_spec(self._devices[replica]).to_string()
                if device and (spec.device_type, spec.device_index) == (
                    first.device_type, first.device_index) else device)
        return self._device_copies[key]

    def _replica_handles(self, replica):
        """{id of replica 0's handle of a variable: replica `replica`'s handle of it}, made
        again only when the model has created variables since."""
        variables = self._store.all_variables()
        known = self._handles.get(replica)
        if known is None or known[0] != len(variables):
            handles = {}
            for variable in variables.values():
                components = self._strategy.experimental_local_results(variable)
                if len(components) > replica:
                    handles[id(components[0].handle)] = components[replica].handle
            self._handles[replica] = known = (len(variables), handles)
        return known[1]


class _Copies:
    """Replica 0's tensors and ops -> a replica's copies of them (themselves if none)."""

    def __init__(self):
        self.imported = {}  # replica 0's op -> its copy
        self.tensors = {}  # ref of a tensor of replica 0 -> a value taking its place
        self.ops = {}  # replica 0's op -> an op taking its place

    def tensor(self, tensor):
        found = self.tensors.get(tensor.ref())
        if found is not None:
            return found
        copy = self.imported.get(tensor.op)
        if copy is None:
            return tensor
        found = copy.outputs[tensor.value_index]
        found.set_shape(tensor.shape)  # what Python code set, beyond shape inference
        self.tensors[tensor.ref()] = found
        return found

    def op(self, op):
        copy = self.imported.get(op)
        return copy if copy is not None else self.ops.get(op, op)

    def add(self, originals, copies):
        """Pairs the leaves of two nests of the same structure."""
        for original, copy in zip(_leaves(originals), _leaves(copies)):
            if isinstance(original, tf.Operation):
                self.ops[original] = copy
            elif isinstance(original, tf.Tensor) and not graphs.is_eager_tensor(original):
                self.tensors[original.ref()] = copy
                self.ops.setdefault(original.op, copy.op)

    def map(self, structure):
        """`structure` with replica 0's tensors and ops replaced by their copies."""
        def mapped(value):
            if isinstance(value, tf.Operation):
                return self.op(value)
            if isinstance(value, tf.Tensor) and not graphs.is_eager_tensor(value):
                return self.tensor(value)
            return value
        return tf.nest.map_structure(
            lambda leaf: (tf.nest.map_structure(mapped, leaf, expand_composites=True)
                          if _is_expanded(leaf) else mapped(leaf)), structure)


def _check_unchanged(segments):
    """Raises ReplayUnsupported if replica 0 changed an op of `segments` (segments ended by
    a merge_call, which later replicas may have copied) after it ended them: a `While` or
    `If` op gets inputs or outputs when its loop or branch is differentiated."""
    for segment in segments:
        for op, counts in segment.input_counts.items():
            if _input_counts(op) != counts:
                raise ReplayUnsupported(
                    f"{op.name} was changed after a merge_call (e.g. a loop differentiated "
                    "after an all-reduce)")


def _input_counts(op):
    return len(op.inputs), len(op.control_inputs), len(op.outputs)


def _takes_op_seed(op, node):
    return ("seed" in node.attr and "seed2" in node.attr and graphs.is_stateful(op)
            and (node.attr["seed"].i or node.attr["seed2"].i))


def _is_expanded(value):
    """Whether a leaf of a nest is taken apart into its tensors (variables stay whole)."""
    return isinstance(value, (tf.IndexedSlices, tf.SparseTensor, tf.RaggedTensor))


def _leaves(structure):
    """The leaves of `structure`: tensors, the components of composite tensors, ops, and
    other values (variables included) as they are."""
    leaves = []
    for leaf in tf.nest.flatten(structure):
        leaves.extend(tf.nest.flatten(leaf, expand_composites=True) if _is_expanded(leaf)
                      else [leaf])
    return leaves


def _topological(ops):
    """`ops` in creation order, moved later where an input (or control input) among them was
    made after them (a `While` op gets inputs when its loop is differentiated)."""
    members = set(ops)
    placed, order = set(), []

    def place(op):
        stack = [(op, False)]
        while stack:
            current, expanded = stack.pop()
            if current in placed:
                continue
            if expanded:
                placed.add(current)
                order.append(current)
                continue
            stack.append((current, True))
            for before in list(current.control_inputs) + [t.op for t in current.inputs]:
                if before in members and before not in placed:
                    stack.append((before, False))
    for op in ops:
        place(op)
    return order


def _copy_collections(graph, replica, copies):
    """Replica `replica`'s collections: replica 0's, with the copies of its ops in them."""
    collections = graph.collections_by_key()
    collections[replica] = {name: [copies.map(item) for item in items]
                            for name, items in collections.get(0, {}).items()}
