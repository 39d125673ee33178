"""The `.meta` file of a training checkpoint: the TRAIN graph as TF1 saved it.

TF1's Saver wrote `model.ckpt-N.meta` beside each checkpoint: a MetaGraphDef of the model's
graph with its SaverDef and collections, read by `tf.compat.v1.train.import_meta_graph` and
copied with the checkpoint by tools that move checkpoints by their files. The engine runs no
TF1 graph, so one is made once per compiled training step (`train_meta_graph`):

- from the traced step, on one replica: model_fn's traced graph is imported into a fresh
  `tf.Graph` whose variables, made first under their TF1 names, take the place of the
  captured eager variables; the step's collections are carried over. model_fn is not
  called again (on a deep model that call cost as much as the trace).
- on several replicas copied from replica 0's trace (the simulated TPU,
  `replica_replay.py`), from replica 0's ops alone: its all-reduces and all-gathers become
  what they compute when every replica holds the same value (a sum: the value times the
  number of replicas), so with CrossShardOptimizer's mean the graph trains as one replica
  on its input did.
- else (several replicas each calling model_fn; a capture that is neither a variable nor a
  value), the way export builds its graphs: model_fn is called in TRAIN mode in a fresh
  `tf.Graph` on placeholders shaped like one replica's input.

Either way the train op goes in the TRAIN_OP collection (as Estimator put it), and a sharded
`Saver` over the global variables (TF1 names, as in the checkpoints) supplies the SaverDef.

The GraphDef is the one `export_meta_graph(clear_devices=True)` writes (devices cleared,
`_output_shapes` added), built here in one pass: TensorFlow's own clear_devices path appends
node by node to a growing GraphDef and took time quadratic in the graph's size (11 s for
13,000 ops, the size of a small detection model's train graph; 0.2 s here).
"""
import collections.abc
import copy
import functools

import numpy as np
import tensorflow as tf

from tpu_estimator_compat import log as logging
from tpu_estimator_compat.engine import model_bridge
from tpu_estimator_compat.engine import step_graph
from tpu_estimator_compat.api.spec import ModeKeys
from tpu_estimator_compat.tf_internals import distribute
from tpu_estimator_compat.tf_internals import graphs
from tpu_estimator_compat.tf_internals import xla

_v1 = tf.compat.v1
# Op attributes not carried over: colocation with ops whose names may change, the mark of
# `outside_compilation`.
_DROPPED_ATTRIBUTES = (graphs.COLOCATION_ATTRIBUTE, xla.OUTSIDE_COMPILATION_ATTRIBUTE)


def train_meta_graph(program, traced, step, variables, runtime, replica_0=None):
    """The serialized MetaGraphDef of the TRAIN graph, or None (logged) if it cannot be
    built.

    Args:
      program: the `model_bridge.UserProgram` (model_fn and config).
      traced: the `model_step.TracedSpec` of the training step.
      step: its `step_graph.StepGraph`.
      variables: {TF1 name: variable} of the model (global and local).
      runtime: the engine's runtime (its strategy and number of replicas).
      replica_0: on several replicas copied from replica 0's trace
        (`replica_replay.ReplicaReplay.replica_0`): () -> its `ReplicaZero`.
    """
    if ((runtime.num_replicas == 1 or replica_0 is not None)
            and runtime.coordinator is None):
        try:
            return _meta_graph_of_step(traced, step, variables, runtime,
                                       replica_0() if replica_0 else None)
        except Exception as error:  # pylint: disable=broad-except
            logging.info("The .meta graph is built by calling model_fn again: making it from "
                         "the traced step failed (%s: %s).", type(error).__name__, error)
    return _meta_graph_of_model_fn(program.model_fn, program.config, traced)


def _meta_graph_of_step(traced, step, variables, runtime, replica_0):
    """The serialized TRAIN MetaGraphDef made from `step`'s graph (of replica 0's ops and
    inputs `replica_0`, if given). Raises ValueError if the graph needs a capture that is
    neither a variable of `variables` nor a value."""
    source = step.graph
    strategy = runtime.strategy
    name_of_handle = distribute.variable_names_by_handle(variables, strategy)
    captured = {}  # internal placeholder's ref -> TF1 name of a variable, or an eager value
    unknown = {}  # internal placeholder's op -> another captured value
    for external, internal in source.captures:
        if id(external) in name_of_handle:
            captured[internal.ref()] = name_of_handle[id(external)]
        elif graphs.is_eager_tensor(external) and external.dtype != tf.resource:
            captured[internal.ref()] = external
        else:
            unknown[internal.op] = external
    filed = {key: source.get_collection(key) for key in source.get_all_collection_keys()}
    # the train op in TRAIN_OP, as Estimator put it
    filed[_v1.GraphKeys.TRAIN_OP] = filed.get(_v1.GraphKeys.TRAIN_OP, []) + [
        traced.spec.train_op]
    name_of_variable = {id(v): name for name, v in variables.items()}
    used = {name for name in captured.values() if isinstance(name, str)}
    used.update(name_of_variable[id(item)] for items in filed.values() for item in items
                if id(item) in name_of_variable)
    if replica_0 is None:
        if graphs.by_ref_captures(source):
            raise ValueError("the step binds values when it runs (collective keys)")
        capture_ops = {ref.deref().op for ref in captured}
        # In an order the importer keeps (creation order is not one where model code added
        # a control input to an op made earlier).
        ops = step_graph.ops_in_copy_order(
            [op for op in source.get_operations() if op not in capture_ops],
            fed=frozenset(captured))
        inputs = []
    else:
        ops = _ops_of_replica_0(source, replica_0, filed, captured, strategy)
        inputs = replica_0.inputs
    for op in ops:
        if op in unknown:
            raise ValueError(f"the step captures {unknown[op]!r}, neither a variable nor a "
                             "value")
    with tf.Graph().as_default() as graph:
        trainable = {name_of_variable.get(id(v)) for v in filed.get(
            _v1.GraphKeys.TRAINABLE_VARIABLES, [])}
        made = _graph_variables({name: variables[name] for name in sorted(used)}, trainable)
        mapped = {ref: (made[value].handle if isinstance(value, str)
                        else tf.constant(value.numpy()))
                  for ref, value in captured.items()}
        mapped.update((t.ref(), _v1.placeholder(t.dtype, t.shape)) for t in inputs)
        if replica_0 is not None:
            mapped.update(_stand_ins(replica_0))
        graphs.copy_functions(source, graph)
        copies = graphs.import_op_copies(
            source, ops, graph, mapped, _DROPPED_ATTRIBUTES,
            None if replica_0 is None else _collectives_on_one_replica(runtime.num_replicas))
        if replica_0 is not None:
            _reductions_on_one_replica(replica_0.reductions, runtime.num_replicas, mapped,
                                       copies)
        _file_collections(graph, filed, made, name_of_variable, copies)
        _file_variables_filed_nowhere(graph, made)
        return _serialized(graph)


def _ops_of_replica_0(source, replica_0, filed, captured, strategy):
    """The ops of `source` that replica 0's ops, its reductions' values and the collections
    `filed` need, in copy order, its reductions' results and the tensors in `captured` fed.
    Left out: the other replicas' ops, which the all-reduce's ops wait for (MirroredStrategy
    builds them under every replica's control dependencies), and the group and instance
    keys of other collectives it needs (`_collectives_on_one_replica` replaces those).
    Raises ValueError if replica 0 needs another replica's value."""
    values = [t for reduction in replica_0.reductions for t in _graph_tensors(reduction.value)]
    results = [t for reduction in replica_0.reductions
               for t in _graph_tensors(reduction.result)]
    fed = set(captured) | {t.ref() for t in replica_0.inputs}
    others = {_device_key(device) for device in strategy.extended.worker_devices[1:]}
    excluded = frozenset(op for op in source.get_operations()
                         if _device_key(op.device) in others)
    # the ops from the reductions' values to their results (the all-reduce), left out
    reducing = set(step_graph.ops_in_copy_order(
        [t.op for t in results], frozenset(fed | {t.ref() for t in values}), excluded))
    fetches = [op for op in replica_0.ops
               if op.type != "Placeholder" and op not in reducing] + [
        item for items in filed.values() for item in items
        if isinstance(item, (tf.Tensor, tf.Operation)) and item.graph is source] + values
    fed |= {t.ref() for t in results}
    # other collectives (assign_moving_average's mean) without their keys: `rewrite`
    # replaces them
    fed |= {t.ref() for op in step_graph.ops_in_copy_order(fetches, frozenset(fed), excluded)
            if op.type.startswith("Collective") for t in op.inputs[1:]}
    ops = step_graph.ops_in_copy_order(fetches, frozenset(fed), excluded)
    by_ref = {t.op for internal, _ in graphs.by_ref_captures(source)
              for t in tf.nest.flatten(internal, expand_composites=True)}
    for op in ops:
        for tensor in op.inputs:
            if tensor.ref() not in fed and (tensor.op in excluded or tensor.op in by_ref):
                raise ValueError(f"replica 0's {op.name} takes {tensor.name}, of another "
                                 "replica or bound when the step runs")
    return ops


def _graph_tensors(structure):
    return [t for t in tf.nest.flatten(structure, expand_composites=True)
            if isinstance(t, tf.Tensor) and not graphs.is_eager_tensor(t)]


@functools.lru_cache(maxsize=None)  # a step's many ops are on a few devices
def _device_key(device):
    spec = tf.DeviceSpec.from_string(device)
    return spec.device_type, spec.device_index


def _collectives_on_one_replica(replicas):
    """A `rewrite` for `graphs.import_op_copies`: a collective becomes what it computes when
    each of the `replicas` replicas holds the same value (the `.meta` graph is one replica's
    graph): an all-reduce sum is the value times `replicas`, a mean, min or max the value,
    an all-gather the value repeated `replicas` times along its first axis."""
    def rewrite(op, node):
        if not op.type.startswith("Collective"):
            return []
        merge = node.attr["merge_op"].s if "merge_op" in node.attr else b""
        final = node.attr["final_op"].s if "final_op" in node.attr else b""
        dtype = copy.deepcopy(node.attr["T"])  # (kept across the ClearField below)
        value = node.input[0]
        controls = [name for name in node.input if name.startswith("^")]
        node.ClearField("attr")
        node.attr["T"].CopyFrom(dtype)
        del node.input[:]
        if op.type in ("CollectiveReduce", "CollectiveReduceV2") and (
                merge in (b"Min", b"Max") or final == b"Div"):
            node.op = "Identity"
            node.input.extend([value] + controls)
            return []
        if op.type in ("CollectiveReduce", "CollectiveReduceV2") and merge == b"Add":
            factor = _const_node(f"{node.name}/replicas", tf.make_tensor_proto(
                replicas, tf.as_dtype(dtype.type)))
            node.op = "Mul"
        elif op.type in ("CollectiveGather", "CollectiveGatherV2") and (
                op.inputs[0].shape.rank is not None):
            factor = _const_node(f"{node.name}/replicas", tf.make_tensor_proto(
                [replicas] + [1] * (op.inputs[0].shape.rank - 1), tf.int32))
            node.op = "Tile"
            node.attr["Tmultiples"].type = tf.int32.as_datatype_enum
        else:
            raise ValueError(f"{op.name} ({op.type}) has no one-replica equivalent")
        node.input.extend([value, factor.name] + controls)
        return [factor]
    return rewrite


def _const_node(name, tensor_proto):
    graph_def = _v1.GraphDef()
    _add_const(graph_def, name, tensor_proto)
    return graph_def.node[0]


def _stand_ins(replica_0):
    """{ref of a result of replica 0's reductions: a placeholder of the default graph}."""
    return {t.ref(): _v1.placeholder(t.dtype, t.shape)
            for reduction in replica_0.reductions for t in _graph_tensors(reduction.result)}


def _reductions_on_one_replica(reductions, replicas, mapped, copies):
    """Replaces each reduction's stand-in results (in `mapped`) by what the reduction
    computes when every one of the `replicas` replicas holds replica 0's value (the `.meta`
    graph is one replica's): a sum is the value times `replicas` (of an IndexedSlices, its
    values), a mean, min or max the value, an all-gather the value `replicas` times along
    its axis."""
    def copy_of(tensor):
        if tensor.ref() in mapped:
            return mapped[tensor.ref()]
        copy = _copy_of(tensor, copies)
        if copy is None:
            raise ValueError(f"{tensor.name}, reduced across replicas, was not copied")
        return copy

    for reduction in reductions:
        value = tf.nest.map_structure(
            lambda v: copy_of(v) if isinstance(v, tf.Tensor) else v, reduction.value,
            expand_composites=True)
        kind = str(getattr(reduction.argument, "value", reduction.argument)).upper()
        if reduction.kind == "all_gather":
            result = tf.nest.map_structure(
                lambda v: tf.concat([v] * replicas, axis=reduction.argument), value)
        elif kind == "SUM":
            result = tf.nest.map_structure(lambda v: _times(v, replicas), value)
        else:
            result = value
        originals = tf.nest.flatten(reduction.result, expand_composites=True)
        substitutes = tf.nest.flatten(result, expand_composites=True)
        if len(originals) != len(substitutes):
            raise ValueError(f"the {reduction.kind} of {reduction.value} has no one-replica "
                             "equivalent of the same structure")
        for original, substitute in zip(originals, substitutes):
            if isinstance(original, tf.Tensor) and original.ref() in mapped:
                graphs.reroute(mapped[original.ref()], substitute)
                mapped[original.ref()] = substitute


def _times(value, factor):
    if isinstance(value, tf.IndexedSlices):
        return tf.IndexedSlices(value.values * factor, value.indices, value.dense_shape)
    return value * tf.cast(factor, value.dtype)


def _graph_variables(variables, trainable):
    """{name: resource variable of the default (TF1) graph} for `variables` ({TF1 name:
    variable}), each shaped and typed as its variable, its initializer setting zeros (the
    checkpoint holds the values), in no collection; trainable if its name is in `trainable`.

    Their ops (handle, initial value, initializer, snapshot read: what TF1 made for a
    resource variable) are imported as one GraphDef: creating them op by op took 3 s for a
    24-layer encoder's 1,179 variables."""
    graph_def = _v1.GraphDef()
    definitions = {}
    for name, variable in variables.items():
        dtype = variable.dtype.base_dtype
        zeros = _add_node(graph_def, f"{name}/Initializer/zeros", "Fill", dtype, [
            _add_const(graph_def, f"{name}/Initializer/zeros/shape",
                       tf.make_tensor_proto(variable.shape.as_list(), tf.int32)),
            _add_const(graph_def, f"{name}/Initializer/zeros/Const", _zero(dtype))],
            type_attribute="T")
        zeros.attr["index_type"].type = tf.int32.as_datatype_enum
        handle = _add_node(graph_def, name, "VarHandleOp", dtype, [])
        handle.attr["shape"].shape.CopyFrom(variable.shape.as_proto())
        handle.attr["shared_name"].s = name.encode()
        _add_node(graph_def, f"{name}/Assign", "AssignVariableOp", dtype, [name, zeros.name])
        read = _add_node(graph_def, f"{name}/Read/ReadVariableOp", "ReadVariableOp", dtype,
                         [name])
        definitions[name] = dict(
            handle=f"{name}:0", initial_value=f"{zeros.name}:0",
            initializer=f"{name}/Assign", snapshot=f"{read.name}:0",
            trainable=name in trainable)
    graphs.import_graph_def(_v1.get_default_graph(), graph_def)
    return {name: graphs.variable_of_ops(**definition)
            for name, definition in definitions.items()}


def _add_node(graph_def, name, op, dtype, inputs, type_attribute="dtype"):
    node = graph_def.node.add(name=name, op=op, input=inputs)
    node.attr[type_attribute].type = dtype.as_datatype_enum
    return node


def _add_const(graph_def, name, tensor_proto):
    node = _add_node(graph_def, name, "Const", tf.as_dtype(tensor_proto.dtype), [])
    node.attr["value"].tensor.CopyFrom(tensor_proto)
    return name


def _zero(dtype):
    """A scalar zero of `dtype` as a TensorProto (the empty string for strings)."""
    return tf.make_tensor_proto(b"" if dtype == tf.string else
                                np.zeros((), dtype.as_numpy_dtype), dtype)


def _copy_of(item, copies):
    """The copy of a tensor or op (or a variable's pending update, `_UnreadVariable`) of
    the step in the new graph, or None if it has none there."""
    if isinstance(item, tf.Tensor):
        op = copies.get(item.op.name)
        return None if op is None else op.outputs[item.value_index]
    operation = item if isinstance(item, tf.Operation) else getattr(item, "op", None)
    return copies.get(operation.name) if isinstance(operation, tf.Operation) else None


def _file_collections(graph, filed, made, name_of_variable, copies):
    """Files in `graph` the copies of what the step's collections (`filed`) hold: the
    variables `made` for the model's variables, the copies of tensors and ops; other
    objects are left out (as TF1's export left out what it could not serialize)."""
    for key, items in filed.items():
        present = {id(item) for item in graph.get_collection(key)}
        for item in items:
            name = name_of_variable.get(id(item))
            copy = made.get(name) if name is not None else _copy_of(item, copies)
            if copy is not None and id(copy) not in present:
                present.add(id(copy))
                graph.add_to_collection(key, copy)


def _file_variables_filed_nowhere(graph, made):
    """Puts the variables the step captured but no collection holds (optimizer slots made
    outside collections) in GLOBAL_VARIABLES, where the Saver looks."""
    filed = {id(v) for key in graph.get_all_collection_keys()
             for v in graph.get_collection(key)}
    for variable in made.values():
        if id(variable) not in filed:
            graph.add_to_collection(_v1.GraphKeys.GLOBAL_VARIABLES, variable)


def _serialized(graph):
    """`graph` (the default graph) as the MetaGraphDef Estimator's Saver wrote, serialized."""
    saver = _v1.train.Saver(sharded=True)
    return _v1.train.export_meta_graph(
        graph_def=_device_free_graph_def(graph), graph=graph,
        saver_def=saver.saver_def).SerializeToString()


def _meta_graph_of_model_fn(model_fn, config, traced):
    """The serialized MetaGraphDef of the TRAIN graph, or None (logged) if it cannot be built.

    Args:
      model_fn, config: the user's.
      traced: the `model_step.TracedSpec` of the training step (replica 0's input signature
        and params).
    """
    try:
        with tf.Graph().as_default() as graph:
            tf.compat.v1.train.get_or_create_global_step()
            features, labels = tf.nest.map_structure(
                lambda spec: None if spec is None else tf.compat.v1.placeholder(
                    spec.dtype, spec.shape),
                traced.input_signature)
            spec = model_bridge.call_model_fn(model_fn, features, labels, ModeKeys.TRAIN,
                                              _copy(traced.params), config)
            graph.add_to_collection(_v1.GraphKeys.TRAIN_OP, spec.train_op)
            return _serialized(graph)
    except Exception as error:  # pylint: disable=broad-except
        logging.warning("Checkpoints are written without a .meta graph file: building the "
                        "TRAIN graph in a TF1 graph failed (%s: %s).",
                        type(error).__name__, error)
        return None


def _copy(params):
    """A copy of the params model_fn got: a dict, or the plain Estimator's object as given."""
    params = params or {}
    return dict(params) if isinstance(params, collections.abc.Mapping) else copy.copy(params)


def _device_free_graph_def(graph):
    """`graph`'s GraphDef as `export_meta_graph(clear_devices=True)` makes it: each op's
    NodeDef without its device and with its outputs' `_output_shapes`, in creation order."""
    whole = graph.as_graph_def()
    graph_def = tf.compat.v1.GraphDef()
    graph_def.versions.CopyFrom(whole.versions)
    for op in graph.get_operations():
        node = graph_def.node.add()
        node.CopyFrom(op.node_def)
        node.device = ""
        if op.outputs:
            node.attr["_output_shapes"].list.shape.extend(
                [output.shape.as_proto() for output in op.outputs])
    graph_def.library.CopyFrom(whole.library)
    return graph_def
