"""TensorFlow graph internals: copying a traced step into the loop body, per-replica
collections, eager execution inside graph-mode programs, the global seed."""
import contextlib
import random

import tensorflow as tf
from tensorflow.core.framework import graph_pb2
from tensorflow.core.framework import variable_pb2
from tensorflow.python.client import pywrap_tf_session as c_api
from tensorflow.python.eager import context
from tensorflow.python.eager import execute
from tensorflow.python.framework import auto_control_deps_utils
from tensorflow.python.framework import c_api_util
from tensorflow.python.framework import constant_op
from tensorflow.python.framework import func_graph as func_graph_lib
from tensorflow.python.framework import ops
from tensorflow.python.framework import random_seed
from tensorflow.python.framework import smart_cond as smart_cond_lib
from tensorflow.python.framework import tensor_util

from tpu_estimator_compat.tf_internals._symbols import Symbol, uses

_FRAMEWORK = "tensorflow.python.framework"
SYMBOLS = uses(
    Symbol("tensorflow.python.eager.context", "Context._initialized",
           "a multi-worker run in a process whose TensorFlow already started fails at once "
           "with the fix, instead of first waiting for its peers (engine/runtime.py)",
           per_instance=True),
    Symbol("tensorflow.python.eager.context", "eager_mode",
           "train/evaluate/predict/export and TPU system calls run eagerly in programs that "
           "disabled eager execution (tf1_behaviour/eager_calls.py, TF1 TPU system calls)"),
    Symbol("tensorflow.python.eager.context", "global_seed",
           "input_fn and model_fn take RunConfig.tf_random_seed as their graph seed, and the "
           "caller's global seed is restored afterwards (engine/inputs.py, model_engine.py)"),
    Symbol("tensorflow.python.eager.context", "set_global_seed",
           "as global_seed"),
    Symbol("tensorflow.python.eager.context", "context", "as global_seed"),
    Symbol("tensorflow.python.eager.context", "Context._seed",
           "the global seed set and restored without clearing the eager kernel cache "
           "(global_seed)", per_instance=True),
    Symbol("tensorflow.python.eager.context", "Context._rng",
           "as Context._seed: the op-seed sequence of the global seed; replaced by TF1's "
           "graph sequence (0, 1, ...) while input_fn runs (tf1_op_seeds)",
           per_instance=True),
    Symbol(f"{_FRAMEWORK}.random_seed", "_graph_to_seed_dict",
           "model_fn's unseeded random ops continue the op seeds input_fn's took, as in "
           "TF1's one graph (continue_op_seeds)"),
    Symbol(f"{_FRAMEWORK}.ops", "EagerTensor",
           "telling eager values from graph tensors while copying a step"),
    Symbol(f"{_FRAMEWORK}.func_graph", "FuncGraph",
           "the step graph: a TF1-style graph of one replica's model_fn, traced without "
           "automatic control dependencies (engine/step_graph.py)"),
    Symbol(f"{_FRAMEWORK}.ops", "Graph._collections",
           "per-replica v1 collections (UPDATE_OPS, LOSSES...) in the step graph",
           per_instance=True),
    Symbol(f"{_FRAMEWORK}.func_graph", "FuncGraph._function_captures",
           "values bound when the step runs (collective keys) follow the step's copy",
           per_instance=True),
    Symbol(f"{_FRAMEWORK}.ops", "Graph._functions",
           "functions the traced step calls are callable from its copy", per_instance=True),
    Symbol(f"{_FRAMEWORK}.ops", "Graph._is_function",
           "functions the traced step calls are callable from its copy"),
    Symbol(f"{_FRAMEWORK}.ops", "Graph._add_function_recursive",
           "functions the traced step calls are callable from its copy"),
    Symbol(f"{_FRAMEWORK}.ops", "Graph._create_op_internal",
           "ops of the traced step copied as they are (type, attributes, device)"),
    Symbol(f"{_FRAMEWORK}.ops", "Operation._set_device",
           "each replica's copied ops stay on the replica's device"),
    Symbol("tensorflow.python.client.pywrap_tf_session", "TF_GraphImportGraphDefWithResults",
           "a traced step copied into the loop body in one GraphDef import (import_ops)"),
    Symbol(f"{_FRAMEWORK}.c_api_util", "ScopedTFImportGraphDefOptions", "as import_ops"),
    Symbol("tensorflow.python.eager.execute", "execute",
           "a variable's random initial value computed by running the traced graph's ops "
           "eagerly (run_eagerly), not in a tf.function of its own"),
    Symbol(f"{_FRAMEWORK}.ops", "Graph._add_new_tf_operations", "as import_ops"),
    Symbol(f"{_FRAMEWORK}.ops", "Graph._get_tensor_by_tf_output", "as import_ops"),
    Symbol("tensorflow.python.client.pywrap_tf_session",
           "TF_ImportGraphDefOptionsRemapControlDependency",
           "replica 0's copies for the other replicas keep their control inputs "
           "(engine/replica_replay.py)"),
    Symbol(f"{_FRAMEWORK}.ops", "Operation._update_input",
           "the simulated TPU's `.meta` graph takes one replica's all-reduce results "
           "(engine/meta_graph.py)"),
    Symbol(f"{_FRAMEWORK}.ops", "Graph._current_control_dependencies",
           "a replica copied from replica 0 makes its merge_call under the same control "
           "dependencies (engine/replica_replay.py)"),
    Symbol(f"{_FRAMEWORK}.ops", "Graph._control_dependencies_stack",
           "`with tf.control_dependencies(update_ops): minimize()` holds under a strategy "
           "(tf1_behaviour/patches.py)"),
    Symbol(f"{_FRAMEWORK}.ops", "Operation._is_stateful",
           "a TF1 read without a dependency on an update sees the step's start value"),
    Symbol(f"{_FRAMEWORK}.auto_control_deps_utils", "RESOURCE_READ_OPS",
           "a TF1 read without a dependency on an update sees the step's start value"),
    Symbol(f"{_FRAMEWORK}.ops", "Operation.colocation_groups",
           "a copied step's ops drop the colocation attribute this reads (`_class`: names "
           "of the traced graph's ops, which the copy does not keep)"),
    Symbol(f"{_FRAMEWORK}.smart_cond", "smart_cond",
           "tf.contrib.layers' batch_norm/dropout take `is_training` as a Python bool or a "
           "tensor, as TF1's did (`tf.__internal__.smart_cond`)"),
    Symbol(f"{_FRAMEWORK}.ops", "Operation._add_control_input",
           "eval_metric_ops report their value op read after the step's update "
           "(engine/metric_values.py)"),
)

eager_mode = context.eager_mode
smart_cond = smart_cond_lib.smart_cond
# The op attribute naming the ops an op is colocated with.
COLOCATION_ATTRIBUTE = "_class"


@contextlib.contextmanager
def global_seed(seed, restart_op_seeds=True):
    """While active, TensorFlow's global seed is `seed` (None included): TF1's graph seed of
    the user's function. `restart_op_seeds` restarts the op-seed counter even when the seed
    is already `seed`, as each TF1 call's new graph did. The caller's seed and op-seed
    sequence are restored as they were.

    TensorFlow's setter also clears the eager kernel cache, so that seeded eager random
    ops restart their streams, as TF1's random ops did in each call's new session; that
    cost the next execution of every compiled function its kernels (70-80 ms of each
    evaluate() call on a small CNN). It is cleared only for a seed: with None, random
    kernels draw fresh randomness anyway."""
    previous = context.global_seed()
    if previous == seed and not restart_op_seeds:
        yield
        return
    eager_context = context.context()
    # (no `_rng` before a seed was first set; unused while the seed is None)
    saved = eager_context._seed, getattr(eager_context, "_rng", None)  # pylint: disable=protected-access
    if seed is None:
        eager_context._seed, eager_context._rng = None, random.Random()  # pylint: disable=protected-access
    else:
        context.set_global_seed(seed)
    try:
        yield
    finally:
        eager_context._seed, eager_context._rng = saved  # pylint: disable=protected-access


class OpSeedCount:
    """TF1's op seeds of one graph: 0, 1, 2... in the order its unseeded random ops were
    built; `used` is how many were taken. Stands in for the eager context's op-seed
    generator (whose `randint` TensorFlow calls for each unseeded eager random op)."""

    def __init__(self):
        self.used = 0

    def randint(self, low, high):  # pylint: disable=unused-argument
        seed, self.used = self.used, self.used + 1
        return seed


@contextlib.contextmanager
def tf1_op_seeds(count):
    """While active (inside `global_seed(seed)` with a seed), eager random ops without an op
    seed take their op seeds from `count` (an `OpSeedCount`), as TF1 graph ops did, instead
    of the eager context's random draws. Graphs traced meanwhile keep their own sequence."""
    eager_context = context.context()
    saved = getattr(eager_context, "_rng", None)
    eager_context._rng = count  # pylint: disable=protected-access
    try:
        yield
    finally:
        eager_context._rng = saved  # pylint: disable=protected-access


def continue_op_seeds(graph, first):
    """`graph`'s unseeded random ops take op seeds `first`, `first` + 1, ... (TF1's one graph
    gave model_fn's the seeds after input_fn's)."""
    random_seed._graph_to_seed_dict[graph] = first  # pylint: disable=protected-access


RESOURCE_READ_OPS = auto_control_deps_utils.RESOURCE_READ_OPS


class KeyedCollectionsFuncGraph(func_graph_lib.FuncGraph):
    """A FuncGraph whose v1 collections (`tf.compat.v1.get_collection`...) are kept apart
    per value of `key()`, each starting empty (not shared with eager code)."""

    def __init__(self, name, key):
        self._collections_key = key
        self._collections_by_key = {}
        super().__init__(name, collections={})

    @property
    def _collections(self):
        return self._collections_by_key.setdefault(self._collections_key(), {})

    @_collections.setter
    def _collections(self, value):
        self._collections_by_key[self._collections_key()] = value

    def collections_by_key(self):
        """{key: {collection name: items}}: the collections of every key, to change."""
        return self._collections_by_key

    def collection_of_every_key(self, name):
        """The items filed in collection `name` under any key, each once, in key order."""
        items, seen = [], set()
        for collections in self._collections_by_key.values():
            for item in collections.get(name, []):
                if id(item) not in seen:
                    seen.add(id(item))
                    items.append(item)
        return items


def is_eager_tensor(value):
    """Whether `value` is an eager tensor (a value, with no op)."""
    return isinstance(value, ops.EagerTensor)


def copy_functions(source, destination):
    """Makes the functions `source` calls callable from `destination`."""
    # pylint: disable=protected-access
    for function in source._functions.values():
        if not destination._is_function(function.name):
            destination._add_function_recursive(function)


def by_ref_captures(graph):
    """[(internal placeholders of one capture, closure giving its values)] of the values
    `graph` binds when it runs, not when it is traced (e.g. collective keys)."""
    captures = graph._function_captures  # pylint: disable=protected-access
    return [(captures.by_ref_internal[key], closure)
            for key, closure in captures.by_ref_external.items()]


def import_ops(source, ops_in_order, destination, mapped, fetches, dropped_attributes):
    """Copies `ops_in_order` (ops of `source`, in a topological order) into `destination`,
    the default graph, in that order, as one GraphDef import; returns {ref: copy} of the
    `fetches` (tensors of `source`).

    `mapped` ({ref of a `source` tensor: `destination` tensor}) gives the inputs the ops
    take from outside them. Control inputs from outside them are dropped, and so are the
    `dropped_attributes`; each op keeps its device and name (uniquified). TensorFlow's
    importer creates the ops in the GraphDef's order when it is topological, which keeps
    the copy order the caller chose (automatic control dependencies follow creation order).
    """
    imported = [t for t in fetches if t.ref() not in mapped]
    _, returned, _ = _import_in_order(source, ops_in_order, destination, mapped, imported,
                                      dropped_attributes)
    copies = {t.ref(): mapped[t.ref()] for t in fetches if t.ref() in mapped}
    for original, copy in zip(imported, returned):
        copy.set_shape(original.shape)
        copies[original.ref()] = copy
    return copies


def import_op_copies(source, ops_in_order, destination, mapped, dropped_attributes,
                     rewrite=None):
    """`import_ops`, returning {name of an op of `ops_in_order`: its copy}.

    `rewrite(op, node)`, if given, may change the NodeDef of each op's copy in place (its
    inputs as the copy takes them); it returns the NodeDefs of new nodes the changed node
    takes as inputs (imported just before it).
    """
    new_ops, _, origins = _import_in_order(source, ops_in_order, destination, mapped, [],
                                           dropped_attributes, rewrite)
    return {op.name: copy for op, copy in zip(origins, new_ops) if op is not None}


def _import_in_order(source, ops_in_order, destination, mapped, returned,
                     dropped_attributes, rewrite=None):
    """Imports `ops_in_order` as `import_ops` describes; returns the new ops (in that
    order), the copies of the `returned` tensors and the op each new op copies (None for
    the nodes `rewrite` added)."""
    copied = {op.name for op in ops_in_order}
    source_def = source.as_graph_def()
    nodes = {node.name: node for node in source_def.node}
    mapped_by_name = {ref.deref().name: value for ref, value in mapped.items()}
    graph_def = graph_pb2.GraphDef()
    graph_def.versions.CopyFrom(source_def.versions)
    input_map = {}
    origins = []
    for op in ops_in_order:
        node = type(nodes[op.name])()
        node.CopyFrom(nodes[op.name])
        kept = []
        for name in node.input:
            if name.startswith("^"):
                if name[1:] in copied:
                    kept.append(name)
                continue
            tensor_name = name if ":" in name else name + ":0"
            if tensor_name in mapped_by_name:
                input_map[tensor_name] = mapped_by_name[tensor_name]
            kept.append(name)
        if len(kept) != len(node.input):
            del node.input[:]
            node.input.extend(kept)
        for attribute in dropped_attributes:
            if attribute in node.attr:
                del node.attr[attribute]
        for added in rewrite(op, node) if rewrite is not None else ():
            graph_def.node.append(added)
            origins.append(None)
        graph_def.node.append(node)
        origins.append(op)
    new_ops, returned = _import(destination, graph_def, input_map, returned)
    if [op.type for op in new_ops] != [node.op for node in graph_def.node]:
        raise RuntimeError("The step's ops were not imported in the order given.")
    return new_ops, returned, origins


def import_graph_def(graph, graph_def):
    """Imports `graph_def` into `graph` as it is (names uniquified, devices kept), without
    `tf.import_graph_def`'s per-op cost; returns the new ops."""
    return _import(graph, graph_def, {}, [])[0]


def variable_of_ops(handle, initial_value, initializer, snapshot, trainable):
    """A resource variable of the default graph made of its ops there (named as TF1 named
    them: handle tensor, initial value tensor, initializer op, snapshot tensor), as
    `import_meta_graph` makes one; filed in no collection."""
    return tf.compat.v1.Variable(variable_def=variable_pb2.VariableDef(
        variable_name=handle, initial_value_name=initial_value, initializer_name=initializer,
        snapshot_name=snapshot, trainable=trainable, is_resource=True), use_resource=True)


def import_nodes(graph, nodes, versions, input_map, control_map, prefix):
    """Imports `nodes` (NodeDefs, in a topological order) into `graph` in that order, as
    `_import` does, their names under `prefix`/; returns the new ops.

    `input_map` ({"op:index": tensor of `graph`}) and `control_map` ({op name: op of
    `graph`}) give the inputs and control inputs the nodes take from outside them.
    """
    graph_def = graph_pb2.GraphDef()
    graph_def.versions.CopyFrom(versions)
    graph_def.node.extend(nodes)
    new_ops, _ = _import(graph, graph_def, input_map, [], control_map, prefix)
    if [op.type for op in new_ops] != [node.op for node in nodes]:
        raise RuntimeError("The ops were not imported in the order given.")
    return new_ops


def _import(graph, graph_def, input_map, returned, control_map=None, prefix=""):
    """Imports `graph_def` into `graph` as it is (names uniquified, devices kept, no device
    or control-dependency scope applied; TensorFlow's `import_graph_def` applies both, at
    0.1 ms an op); returns the new ops and the copies of the `returned` tensors."""
    # pylint: disable=protected-access
    scoped_options = c_api_util.ScopedTFImportGraphDefOptions()
    options = scoped_options.options
    c_api.TF_ImportGraphDefOptionsSetPrefix(options, prefix)
    c_api.TF_ImportGraphDefOptionsSetUniquifyNames(options, True)
    c_api.TF_ImportGraphDefOptionsSetValidateColocationConstraints(options, False)
    for name, tensor in input_map.items():
        op_name, index = name.rsplit(":", 1)
        c_api.TF_ImportGraphDefOptionsAddInputMapping(options, op_name, int(index),
                                                      tensor._as_tf_output())
    for name, op in (control_map or {}).items():
        c_api.TF_ImportGraphDefOptionsRemapControlDependency(options, name, op._c_op)
    for tensor in returned:
        c_api.TF_ImportGraphDefOptionsAddReturnOutput(options, tensor.op.name,
                                                      tensor.value_index)
    with graph._mutation_lock():
        buffer = c_api.TF_NewBufferFromString(graph_def.SerializeToString())
        try:
            with graph._c_graph.get() as c_graph:
                results = c_api_util.ScopedTFImportGraphDefResults(
                    c_api.TF_GraphImportGraphDefWithResults(c_graph, buffer, options))
        finally:
            c_api.TF_DeleteBuffer(buffer)
        new_ops = graph._add_new_tf_operations(compute_devices=False)
    outputs = c_api.TF_ImportGraphDefResultsReturnOutputs(results.results)
    return new_ops, [graph._get_tensor_by_tf_output(output) for output in outputs]


# Keys (type, device, attributes) of the seeded random ops `run_eagerly` ran in this process.
_SEEDED_KERNELS_RUN = set()


def run_eagerly(ops_in_order, fetch, captured):
    """`fetch`'s value, computed now by running `ops_in_order` (graph ops, in a topological
    order) as eager ops, or None where that would not give what the graph gives.

    `captured` ({op of a capture placeholder: its eager value}) feeds captures. None when
    an op takes a function or a tensor attribute (but a constant), or is stateful other than
    a variable read or a random op, or is a seeded random op with the attributes of one
    run before in this process: an eager kernel is cached by its attributes, so it would
    continue its sequence where a graph's op (a fresh kernel) starts it (an unseeded one
    draws any sequence anyway).
    """
    values = {}
    for op in ops_in_order:
        if op in captured:
            values[op.outputs[0].ref()] = captured[op]
            continue
        outputs = _run_op_eagerly(op, [values[t.ref()] for t in op.inputs])
        if outputs is None:
            return None
        values.update((t.ref(), value) for t, value in zip(op.outputs, outputs))
    return values[fetch.ref()]


def _run_op_eagerly(op, inputs):
    if op.type == "Const":
        return [constant_op.constant(tensor_util.MakeNdarray(op.get_attr("value")),
                                     dtype=op.outputs[0].dtype)]
    own_attributes = sorted((name, value) for name, value in op.node_def.attr.items()
                            if not name.startswith("_"))  # not internal marks (colocation)
    attributes = []
    for name, value in own_attributes:
        converted = _eager_attribute(value)
        if converted is _NOT_EAGER:
            return None
        attributes.extend((name, converted))
    if "seed2" in op.node_def.attr:
        if not op.get_attr("seed") and not op.get_attr("seed2"):  # unseeded: any sequence
            return _execute(op, inputs, attributes)
        key = (op.type, op.device, tuple((name, value.SerializeToString(deterministic=True))
                                         for name, value in own_attributes))
        if key in _SEEDED_KERNELS_RUN:
            return None
        _SEEDED_KERNELS_RUN.add(key)
    elif is_stateful(op) and op.type != "ReadVariableOp":
        return None
    return _execute(op, inputs, attributes)


def _execute(op, inputs, attributes):
    with ops.device(op.device or None):
        return execute.execute(op.type, len(op.outputs), inputs, tuple(attributes),
                               context.context())


_NOT_EAGER = object()  # an attribute value an eager op cannot be given here


def _eager_attribute(value):
    """An AttrValue as an eager op takes it; `_NOT_EAGER` for a function, a tensor or a
    placeholder."""
    field = value.WhichOneof("value")
    if field in ("i", "f", "b", "s", "type"):
        return getattr(value, field)
    if field == "shape":
        return _eager_shape(value.shape)
    if field == "list":
        listed = value.list
        if listed.func or listed.tensor:
            return _NOT_EAGER
        if listed.shape:
            return [_eager_shape(shape) for shape in listed.shape]
        return list(listed.type or listed.i or listed.f or listed.s or listed.b)
    return _NOT_EAGER


def _eager_shape(shape):
    return None if shape.unknown_rank else [dim.size for dim in shape.dim]


def create_op(graph, op_type, inputs, dtypes, name, attrs, op_def, device):
    """Creates an op in `graph` as given (attributes and op_def as they are, on `device`
    when given), without TensorFlow's defaults (`compute_device=False` applies no device
    scope)."""
    # pylint: disable=protected-access
    op = graph._create_op_internal(op_type, inputs, dtypes=dtypes, name=name, attrs=attrs,
                                   op_def=op_def, compute_device=False)
    if device:
        op._set_device(device)
    return op


def is_stateful(op):
    """Whether `op`'s kernel has side effects (its op def says so)."""
    return op._is_stateful  # pylint: disable=protected-access


def add_control_input(op, control_op):
    """Makes `op` (already built) run after `control_op`."""
    op._add_control_input(control_op)  # pylint: disable=protected-access


def reroute(old, new):
    """Makes every op that takes tensor `old` take `new` instead."""
    for op in old.consumers():
        for index, tensor in enumerate(op.inputs):
            if tensor is old:
                op._update_input(index, new)  # pylint: disable=protected-access


def has_control_dependencies(graph):
    """Whether a `tf.control_dependencies` block is active in `graph` now."""
    return bool(graph._control_dependencies_stack)  # pylint: disable=protected-access


def current_control_dependencies(graph):
    """The ops the `tf.control_dependencies` blocks active in `graph` now add as control
    inputs to new ops."""
    return graph._current_control_dependencies()  # pylint: disable=protected-access


def tensorflow_started():
    """Whether this process's TensorFlow runtime has started (its first operation ran, or
    its devices were listed): device and collective configuration is fixed from then on."""
    return bool(getattr(context.context(), "_initialized", False))
