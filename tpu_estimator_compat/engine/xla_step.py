"""The simulated TPU's step compiled with XLA, as a TPU compiles it.

A TPU runs the step as one XLA program per core: an op XLA cannot compile (a dynamic output
shape, `tf.py_function`, string ops) fails there, unless the model puts it on the host with
`tf.tpu.outside_compilation`. On the simulated TPU (MirroredStrategy over local devices) one
XLA program cannot span the replicas: each reads its own copy of the variables on its own
device, and the cross-replica all-reduce between them is TensorFlow's collective ops, which
XLA on the CPU does not compile. So the pruned step is copied (`StepGraph.instantiate`) as
XLA clusters, each a `tf.function(jit_compile=True)` called on its device:

    compiled    ops on a replica's device (the model, its gradients, the optimizer's updates)
    not         collective ops (the all-reduce), TF2 summary writes (a TPU program had them
                placed on the host) and ops calling functions that run either (a `tf.cond`
                around an all-reduce, `record_if`'s), ops without a replica device (the
                host's view of the step), ops that produce resource handles or use a variable
                of another device, and the ops built by `outside_compilation` (they run on the
                host, as on a TPU: the simulated cores are the host's CPU)
    copied      constants: outside the clusters and again inside each cluster using them, so
                none passes into or out of XLA (a summary's string tag feeds a host op, an
                Assert's string message a compiled one)

The compiled ops of one device form one cluster per stage: an op's stage grows by one each
time a path into it leaves XLA (a collective, a host op, another device) after passing
through a compiled op, so a replica's forward pass and gradients are one XLA program, its
update after the all-reduce another, and no cluster can wait on itself (an op making a
TensorList from constants joins its user's stage: XLA cannot pass one between clusters).
Within a cluster and between clusters the copy keeps the order of the inline copy (reads
before updates). Before any of this, `tpu_ops.check` refuses the compiled ops a TPU has no
kernel for (`units` says which ops are compiled).
"""
import functools
import heapq
import re

import tensorflow as tf

from tpu_estimator_compat.engine import step_graph
from tpu_estimator_compat.engine.runtime import SIMULATED_TPU_XLA_ENV
from tpu_estimator_compat.tf_internals import graphs
from tpu_estimator_compat.tf_internals import xla as tf_xla

# The all-reduce between replicas, and TF2 summary writes (WriteSummary, WriteScalarSummary...)
# with their writer's flush and close: op type prefixes of ops XLA leaves to TensorFlow.
_NOT_COMPILED_PREFIXES = ("Collective", "Nccl", "Write", "FlushSummaryWriter",
                          "CloseSummaryWriter")

# A cluster of these only is not compiled: nothing to check, and XLA fails on a lone NoOp
# whose call only orders other ops ("Function NoOp is not defined").
_PLUMBING = frozenset({"NoOp", "Identity", "Const"})


def copier(devices):
    """A `copy_ops` for `StepGraph.instantiate` that compiles the ops placed on `devices`
    (the replicas' devices) with XLA."""
    def copy_ops(graph, ops, destination, copies, fetches):
        consumers = {}
        for op in ops:
            for tensor in op.inputs:
                consumers.setdefault(tensor.ref(), set()).add(op)
        for tensor in fetches:
            consumers.setdefault(tensor.ref(), set()).add(None)  # the step's outputs
        op_copies = {}
        for unit, device in units(graph, ops, devices):
            if device is None:
                for op in unit:
                    op_copies[op] = step_graph.copy_op(op, destination, copies, op_copies)
            else:
                _copy_cluster(graph, unit, device, destination, copies, op_copies, consumers)
    return copy_ops


def units(graph, ops, devices):
    """`ops` of `graph` (a step's, in copy order) as the copy makes them, with XLA compiling
    on `devices` (the replicas'): (ops, canonical device of their XLA cluster) for each
    cluster, (ops, None) for ops copied as they are; each after the units it needs."""
    # Once per name: a step's thousands of ops are placed on a few devices.
    canonical = functools.lru_cache(maxsize=None)(tf_xla.canonical_device)
    devices = frozenset(canonical(d) for d in devices)
    resource_devices = {internal.ref(): canonical(external.device)
                        for external, internal in graph.captures
                        if external.dtype == tf.resource and external.device}
    host_only_functions = {}
    compiled = {op: None if _calls_host_only_ops(op.node_def, graph, host_only_functions)
                else _compiled_device(op, devices, resource_devices, canonical) for op in ops}
    for unit in _units(ops, compiled):
        device = compiled[unit[0]]
        yield unit, None if all(op.type in _PLUMBING for op in unit) else device


def _compiled_device(op, devices, resource_devices, canonical):
    """The canonical device whose XLA cluster `op` belongs to, or None (not compiled)."""
    if not op.device or op.type.startswith(_NOT_COMPILED_PREFIXES) or _is_free_constant(op):
        return None
    device = canonical(op.device)
    if device not in devices or _is_outside_compilation(op):
        return None
    if any(t.dtype == tf.resource for t in op.outputs):
        return None  # handles pass between devices and clusters as they are
    for tensor in op.inputs:
        if tensor.dtype == tf.resource and resource_devices.get(
                tensor.ref(), _op_device(tensor.op, canonical)) not in (device, None):
            return None  # XLA reads variables of its own device only
    return device


def _calls_host_only_ops(node_def, graph, known):
    """Whether the functions `node_def` calls (a `tf.cond`'s branches, a loop's body...) run
    ops XLA leaves to TensorFlow (`_NOT_COMPILED_PREFIXES`), at any depth; `known` memoizes
    by function name."""
    for value in node_def.attr.values():
        names = [value.func.name] if value.HasField("func") else (
            [f.name for f in value.list.func] if value.HasField("list") else [])
        for name in names:
            if name not in known:
                known[name] = False  # (recursion guard)
                function = tf_xla.graph_function(graph, name)
                body = [] if function is None else function.definition.node_def
                known[name] = any(node.op.startswith(_NOT_COMPILED_PREFIXES) or
                                  _calls_host_only_ops(node, graph, known) for node in body)
            if known[name]:
                return True
    return False


def _is_free_constant(op):
    """A constant waiting on nothing: copied outside the clusters and inside each cluster
    using it (XLA takes and returns no strings)."""
    return op.type == "Const" and not op.control_inputs


def _op_device(op, canonical):
    return canonical(op.device) if op.device else None


def _is_outside_compilation(op):
    try:
        op.get_attr(tf_xla.OUTSIDE_COMPILATION_ATTRIBUTE)
    except ValueError:
        return False
    return True


def _predecessors(op):
    return [t.op for t in op.inputs] + list(op.control_inputs)


def _units(ops, compiled):
    """`ops` (in copy order) grouped into units to copy: lists of one device's compiled ops
    of one stage (a cluster), and single ops not compiled; returned in an order where each
    unit comes after the units it needs, as close to the ops' copy order as that allows."""
    members = set(ops)
    stage, after_compiled = {}, {}
    for op in ops:
        predecessors = [p for p in _predecessors(op) if p in members]
        after_compiled[op] = compiled[op] is not None or any(after_compiled[p]
                                                             for p in predecessors)
        stage[op] = max([stage[p] + _leaves_cluster(p, op, compiled, after_compiled)
                         for p in predecessors], default=0)
    _join_list_sources_to_users(ops, compiled, stage)
    unit_of, units = {}, {}
    for op in ops:
        key = (compiled[op], stage[op]) if compiled[op] is not None else op
        unit_of[op] = key
        units.setdefault(key, []).append(op)
    position = {op: index for index, op in enumerate(ops)}
    needs = {key: {unit_of[p] for op in unit for p in _predecessors(op) if p in members}
             - {key} for key, unit in units.items()}
    users = {key: [] for key in units}
    for key, needed in needs.items():
        for other in needed:
            users[other].append(key)
    ready = [(position[unit[0]], key) for key, unit in units.items() if not needs[key]]
    heapq.heapify(ready)
    ordered = []
    while ready:
        _, key = heapq.heappop(ready)
        ordered.append(units[key])
        for user in users[key]:
            needs[user].discard(key)
            if not needs[user]:
                heapq.heappush(ready, (position[units[user][0]], user))
    return ordered


def _join_list_sources_to_users(ops, compiled, stage):
    """Moves each compiled op making a TensorList from constants only (a while loop's
    gradient accumulators, `EmptyTensorList`) into the earliest stage of its users on its
    device: XLA cannot pass a TensorList between clusters, and such an op waits on nothing.
    """
    members = set(ops)
    users = {}
    for op in ops:
        for predecessor in _predecessors(op):
            users.setdefault(predecessor, []).append(op)
    for op in ops:
        if (compiled[op] is None or not any(t.dtype == tf.variant for t in op.outputs)
                or any(p.type != "Const" for p in _predecessors(op) if p in members)):
            continue
        stages = [stage[user] for user in users.get(op, []) if compiled[user] == compiled[op]]
        if stages:
            stage[op] = min(stages)


def _leaves_cluster(predecessor, op, compiled, after_compiled):
    """1 if the edge predecessor -> op leaves a cluster (or comes from outside XLA after a
    compiled op): `op` then starts a later stage."""
    if not after_compiled[predecessor]:
        return 0
    same_cluster = compiled[op] is not None and compiled[predecessor] == compiled[op]
    return 0 if same_cluster else 1


def _copy_cluster(graph, cluster, device, destination, copies, op_copies, consumers):
    """Copies the ops of `cluster` as one `tf.function(jit_compile=True)` called on
    `device`; the call stands for each of them in `op_copies`. `consumers` maps tensor refs
    to the ops that use them (None: the step's outputs)."""
    members = set(cluster)
    constants = list({t.op: None for op in cluster for t in op.inputs
                      if _is_free_constant(t.op)})
    inputs = list({t.ref(): t for op in cluster for t in op.inputs
                   if t.op not in members and not _is_free_constant(t.op)}.values())
    control_inputs = {op_copies[c] for op in cluster for c in op.control_inputs
                      if c not in members and c in op_copies}
    outputs = [t for op in cluster for t in op.outputs
               if consumers.get(t.ref(), set()) - members]

    def xla_cluster(*args):
        cluster_graph = tf.compat.v1.get_default_graph()
        graphs.copy_functions(graph, cluster_graph)
        local = {t.ref(): arg for t, arg in zip(inputs, args)}
        local_ops = {}
        for op in constants + cluster:
            local_ops[op] = step_graph.copy_op(op, cluster_graph, local, local_ops)
        # One output at least: the call op then stands for the cluster's control edges.
        return [local[t.ref()] for t in outputs] or [tf.constant(0)]

    function = tf.function(xla_cluster, jit_compile=True, autograph=False)
    with tf.control_dependencies(sorted(control_inputs, key=lambda o: o.name)), \
            tf.device(device):
        results = function(*[copies[t.ref()] for t in inputs])
    call = results[0].op
    for original, result in zip(outputs, results):
        result.set_shape(original.shape)
        copies[original.ref()] = result
    for op in cluster:
        op_copies[op] = call


def explaining_compile_errors(loop):
    """`loop` (a device loop) raising, when XLA cannot compile an op of the step, an error
    naming the op and the ways to keep it off the TPU."""
    def run(*args, **kwargs):
        try:
            return loop(*args, **kwargs)
        except tf.errors.InvalidArgumentError as e:
            message = _explanation(e.message)
            if message is None:
                raise
            raise tf.errors.InvalidArgumentError(e.node_def, e.op, message) from e
    return run


_UNSUPPORTED = re.compile(r"Detected unsupported operations when trying to compile graph "
                          r"\S+ on XLA_\w+_JIT: ([^\n]*)")
_UNSUPPORTED_OP = re.compile(r"(\w+) \(No registered '\w+' OpKernel.*?\{\{node ([^}]+)\}\}")
_COMPILE_FAILURE = re.compile(r"XLA compilation requires|must be a compile-time constant|"
                              r"XLA can't|XLA_\w+_JIT")
_NODE = re.compile(r"\{\{node ([^}]+)\}\}")
_REPLICA_SCOPE = re.compile(r"^replica_\d+/")


def _explanation(message):
    """The message for an XLA compilation failure of the step, or None for other errors."""
    unsupported = _UNSUPPORTED.search(message)
    if unsupported:
        found = _UNSUPPORTED_OP.findall(unsupported.group(1))
        what = ", ".join(sorted({f"{op_type} (op '{_REPLICA_SCOPE.sub('', node)}')"
                                 for op_type, node in found})) or unsupported.group(1)
        cause = f"XLA cannot compile {what}"
    elif _COMPILE_FAILURE.search(message):
        nodes = sorted({_REPLICA_SCOPE.sub("", node) for node in _NODE.findall(message)})
        cause = ("XLA cannot compile " + (f"op {', '.join(map(repr, nodes))}" if nodes
                                          else "the step") + f": {message.strip()}")
    else:
        return None
    return (
        f"{cause}. A TPU compiles the training/evaluation/prediction step with XLA, and so "
        "does the simulated TPU: an op XLA cannot compile (tf.py_function, string ops, "
        "data-dependent output shapes) would fail on a TPU too. Run it on the host: build it "
        "in model_fn with tf.tpu.outside_compilation(fn, *args), or compute it in host_call "
        "(training) or eval_metrics' metric_fn (evaluation), which run on the host. "
        f"{SIMULATED_TPU_XLA_ENV}=0 runs the simulated TPU without XLA.")
