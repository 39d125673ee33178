"""What TF1's Session ran outside the device loop: fetches of the step's graph, run on the host.

Hooks (begin, after_create_session, before_run/after_run through `run_context.session`),
Scaffolds and program code build ops on the model's graph (an assign from a placeholder, a
Saver's ops, a read of a moving average) and run them with `session.run(fetches,
feed_dict)`. Here that graph is the traced step's FuncGraph, so such a run copies the ops
its fetches need, pruned at the fed tensors as TF1 pruned, into a function of its own and
calls it once, on the host; the model's variables are captured as in the step:

    SessionRuns.kind(graph, fetch, fed)                  'host': needs no step input;
                                                        'input': needs the step's input;
                                                        None: needs all replicas (a
                                                        collective): the device loop only
    subgraph = SessionRuns.prune(graph, fetches, fed,    None for a collective, or for the
                                 with_input=False)      step's input unless `with_input`
    subgraph.run(feeds, variable_values=None)           [numpy or None per fetch]

A run `with_input` is what TF1's Session.run of a train op (TF-GAN's RunTrainOpsHook) did:
its ops, pruned from the step graph, fed one step input of their own (the step's input
placeholders come last in `fed`), as TF1's run advanced the input iterator. It needs the
traced step to be the one replica's model TF1 ran (`check_input_runs`).

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

    @property
    def variables(self):
        """The model's variables the ops read or update."""
        used = [variable for _, variable in self.reads.values()] + self.written
        return list({id(variable): variable for variable in used}.values())

    def values_of(self, variables):
        """The values of `variables` (model variables), now."""
        with tf.init_scope():
            return [self.runs.first_copy(variable).read_value() for variable in variables]

    def set_values(self, variables, values):
        """Gives every replica's copy of each of `variables` its value in `values`."""
        with tf.init_scope():
            for variable, value in zip(variables, values):
                for copy in self.runs.copies(variable):
                    copy.assign(value)


class SessionRuns:
    """Prunes and runs fetches of the step graphs of one model's variables (`store`) on
    `runtime` (an `engine.runtime.Runtime`)."""

    def __init__(self, runtime, store):
        self._runtime = runtime
        self._strategy = runtime.strategy
        self._store = store
        self._pruned = {}  # (graph, fetches, fed, with_input) -> HostSubgraph, run again
        self._kinds = {}  # (graph, fetch, fed) -> `kind`

    def prune(self, graph, fetches, fed=(), with_input=False):
        """The `HostSubgraph` computing `fetches` (tensors, operations of `graph`) with the
        tensors `fed` fed (`with_input`: and the step's input placeholders), or None if only
        the device loop computes them (they need all replicas, or the step's input without
        `with_input`). Raises InvalidArgumentError for a placeholder left unfed, as TF1's
        Session did."""
        fed = list(fed) + (list(graph.step_inputs) if with_input else [])
        key = (graph, _refs(fetches), _refs(fed))
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

    def kind(self, graph, fetch, fed=()):
        """How a session.run of `fetch` (a tensor or operation of `graph`) with `fed` fed
        runs: 'input' (it needs the step's input: a run `with_input`, which
        `check_input_runs` allows), 'input_writes' (the same, and it changes variables or
        files: a train op), 'host' (it needs neither the step's input nor all replicas), or
        None (it needs all replicas: only the device loop runs it)."""
        key = (graph, _refs([fetch]), _refs(fed))
        if key not in self._kinds:
            if len(self._kinds) >= _MAX_PRUNED:  # fetches made afresh each time
                self._kinds.clear()
            ops = step_graph.ops_in_copy_order([fetch], {t.ref() for t in fed})
            if _reads_step_input(graph, ops):
                self._kinds[key] = ("input_writes" if any(map(_has_effect, ops))
                                    else "input")
            elif any(op.type.startswith(_CROSS_REPLICA_PREFIXES) for op in ops):
                self._kinds[key] = None
            else:
                self._kinds[key] = "host"
        return self._kinds[key]

    def check_input_runs(self, fetch):
        """Raises NotImplementedError unless a run of `fetch` `with_input` does what TF1's
        Session.run did: with CPU/GPU semantics on one replica (the traced step then holds
        the one model TF1 built, fed by the one input iterator)."""
        runtime = self._runtime
        if runtime.tpu_semantics:
            raise NotImplementedError(
                f"A hook's session.run() ran {fetch.name}, which needs the model's input (a "
                "train op run by a hook, as TF-GAN's RunTrainOpsHook). With use_tpu=True the "
                "original built model_fn inside the TPU loop, whose ops a Session could not "
                "run apart from it. Run it in the train_op (TF-GAN: TPUGANEstimator's joint "
                "train ops), or train with use_tpu=False.")
        if runtime.num_replicas > 1 or runtime.coordinator is not None:
            where = ("with parameter servers" if runtime.coordinator is not None
                     else f"on {runtime.num_replicas} replicas")
            raise NotImplementedError(
                f"A hook's session.run() ran {fetch.name}, which needs the model's input (a "
                f"train op run by a hook, as TF-GAN's RunTrainOpsHook), while training "
                f"{where}: tpu_estimator_compat runs such ops on their own input batch only "
                "on one device. Run it in the train_op, or train on one device (no "
                "train_distribute, no TF_CONFIG cluster).")

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
    return _reads_step_input(graph, ops) or any(
        op.type.startswith(_CROSS_REPLICA_PREFIXES) for op in ops)


def _reads_step_input(graph, ops):
    step_inputs = getattr(graph, "step_input_ops", frozenset())
    return any(op in step_inputs for op in ops)


def _refs(tensors_or_ops):
    return tuple(t.ref() if isinstance(t, tf.Tensor) else t for t in tensors_or_ops)


def _has_effect(op):
    """Whether running `op` changes state: a variable update, a file written..."""
    if op.type in graphs.RESOURCE_READ_OPS or op.type in _PLACEHOLDERS:
        return False
    return graphs.is_stateful(op) and (
        not op.outputs or any(t.dtype == tf.resource for t in op.inputs))
