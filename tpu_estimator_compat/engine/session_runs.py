"""What TF1's Session ran outside the device loop: fetches of the step's graph, run on the host.

Hooks (begin, after_create_session, before_run/after_run through `run_context.session`),
Scaffolds and program code build ops on the model's graph (an assign from a placeholder, a
Saver's ops, a read of a moving average) and run them with `session.run(fetches,
feed_dict)`. Here that graph is the traced step's FuncGraph, so such a run copies the ops
its fetches need, pruned at the fed tensors as TF1 pruned, into a function of its own and
calls it once, on the host; the model's variables are captured as in the step:

    subgraph = SessionRuns.prune(graph, fetches, fed)   None when a fetch needs the step's
                                                        input or all replicas (a
                                                        collective): the device loop
    subgraph.run(feeds, variable_values=None)           [numpy or None per fetch]

The same fetches and fed tensors asked again get the same subgraph, whose function is
traced once (a hook's session.run every loop costs a call, not a trace).

The hooks' ops were built for one replica (the first), so a write reaches that replica's
copy of a mirrored variable; it is then copied to every replica's copy, as the replicas'
copies are kept equal. `variable_values` stands in for the reads of the model's variables
(the values they will hold once the checkpoint is restored, while the step is traced).
"""
import dataclasses

import tensorflow as tf

from tpu_estimator_compat.engine import step_graph
from tpu_estimator_compat.tf_internals import graphs

_PLACEHOLDERS = ("Placeholder", "PlaceholderV2")
_TF_TYPE_NAMES = {"float32": "float", "float64": "double", "float16": "half"}
_MAX_PRUNED = 256
_CROSS_REPLICA_PREFIXES = ("Collective", "Nccl", "AllReduce", "CrossReplica")


@dataclasses.dataclass
class HostSubgraph:
    """The ops one `session.run` needs, ready to run on the host."""
    runs: "SessionRuns"
    graph: object
    fetches: list  # tensors and operations of `graph`
    fed: list  # tensors of `graph` the run is fed
    ops: list  # in copy order
    reads: dict  # ReadVariableOp output ref -> (tensor, model variable)
    written: list  # model variables the ops update
    function: object = None  # step_graph.ops_function of the ops, made on the first run

    @property
    def writes(self):
        """Whether running changes the model's variables or anything else (a file)."""
        return any(_has_effect(op) for op in self.ops)

    def run(self, feeds, variable_values=None):
        """Runs the ops now; `feeds`: a value per `fed` tensor; returns a value per fetch
        (None for an operation). `variable_values(variable)`: the value a read of one of
        the model's variables gets, instead of reading it (in a run that writes nothing:
        a read may be the value an assign returns)."""
        tensors = [t for t in self.fetches if isinstance(t, tf.Tensor)]
        with tf.init_scope():  # eagerly, also while a step is being traced
            if variable_values is not None and self.reads and not self.writes:
                fed = list(zip(self.fed, feeds)) + [
                    (tensor, variable_values(variable))
                    for tensor, variable in self.reads.values()]
                ops = step_graph.ops_in_copy_order(self.fetches, {t.ref() for t, _ in fed})
                values = step_graph.run_ops(self.graph, ops, tensors, fed)
            else:
                if self.function is None:
                    self.function = step_graph.ops_function(
                        self.graph, self.ops, tensors, self.fed)
                values = self.function(feeds)
            self.runs.share_writes(self.written)
        values = iter(values)
        return [next(values).numpy() if isinstance(t, tf.Tensor) else None
                for t in self.fetches]

    def written_values(self):
        """The values of the variables the ops update (`written`), now."""
        with tf.init_scope():
            return [self.runs.first_copy(variable).read_value() for variable in self.written]

    def set_written(self, values):
        """Gives every replica's copy of each `written` variable its value in `values`."""
        with tf.init_scope():
            for variable, value in zip(self.written, values):
                for copy in self.runs.copies(variable):
                    copy.assign(value)


class SessionRuns:
    """Prunes and runs fetches of the step graphs of one model's variables (`store`)."""

    def __init__(self, strategy, store):
        self._strategy = strategy
        self._store = store
        self._pruned = {}  # (graph, fetches, fed) -> HostSubgraph, run again when asked again

    def prune(self, graph, fetches, fed=()):
        """The `HostSubgraph` computing `fetches` (tensors, operations of `graph`) with the
        tensors `fed` fed, or None if only the device loop computes them (they need the
        step's input or all replicas). Raises InvalidArgumentError for a placeholder left
        unfed, as TF1's Session did."""
        fed = list(fed)
        key = (graph, tuple(f.ref() if isinstance(f, tf.Tensor) else f for f in fetches),
               tuple(t.ref() for t in fed))
        if key in self._pruned:
            return self._pruned[key]
        ops = step_graph.ops_in_copy_order(fetches, {t.ref() for t in fed})
        if _needs_device_loop(graph, ops):
            return None
        captured = {internal.op: external for external, internal in graph.captures}
        for op in ops:
            if op.type in _PLACEHOLDERS and op not in captured:
                output = op.outputs[0]
                shape = output.shape.as_list() if output.shape.rank is not None else "<unknown>"
                raise tf.errors.InvalidArgumentError(
                    None, op,
                    f"You must feed a value for placeholder tensor '{op.name}' with dtype "
                    f"{_TF_TYPE_NAMES.get(output.dtype.name, output.dtype.name)} and shape "
                    f"{shape}".replace("None", "?"))
        owners = self._owners()
        reads, written = {}, []
        for op in ops:
            handles = [captured.get(t.op) for t in op.inputs if t.dtype == tf.resource]
            variables = [owners[id(h)] for h in handles if id(h) in owners]
            if op.type in graphs.RESOURCE_READ_OPS and variables and op.outputs:
                reads[op.outputs[0].ref()] = (op.outputs[0], variables[0])
            elif _has_effect(op):
                written += [v for v in variables if all(v is not w for w in written)]
        if len(self._pruned) >= _MAX_PRUNED:  # fetches made afresh each time (identities)
            self._pruned.clear()
        self._pruned[key] = HostSubgraph(self, graph, list(fetches), fed, ops, reads, written)
        return self._pruned[key]

    def needs_device_loop(self, graph, fetches, fed=()):
        """Whether `fetches` with `fed` fed need the step's input or all replicas (what
        `prune` answers with None), without preparing a run."""
        return _needs_device_loop(graph, step_graph.ops_in_copy_order(
            fetches, {t.ref() for t in fed}))

    def _owners(self):
        """{id(a replica's variable handle): the model's variable}."""
        return {id(copy.handle): variable
                for variable in self._store.named_variables().values()
                for copy in self.copies(variable)}

    def copies(self, variable):
        """The replicas' copies of one of the model's variables (itself, if not mirrored)."""
        return self._strategy.experimental_local_results(variable)

    def first_copy(self, variable):
        return self.copies(variable)[0]

    def share_writes(self, variables):
        """Copies the first replica's value of each variable in `variables` (written by a
        host run, on that replica's copy) to the other replicas' copies."""
        for variable in variables:
            first, *others = self.copies(variable)
            for other in others:
                other.assign(first.read_value())
        if variables:
            self._store.restored()


def _needs_device_loop(graph, ops):
    step_inputs = getattr(graph, "step_input_ops", frozenset())
    return any(op in step_inputs or op.type.startswith(_CROSS_REPLICA_PREFIXES) for op in ops)


def _has_effect(op):
    """Whether running `op` changes state: a variable update, a file written..."""
    if op.type in graphs.RESOURCE_READ_OPS or op.type in _PLACEHOLDERS:
        return False
    return graphs.is_stateful(op) and (
        not op.outputs or any(t.dtype == tf.resource for t in op.inputs))
