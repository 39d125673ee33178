"""A model on one strategy: its variables, traced steps and loops, and checkpoint sync.

One `ModelEngine` exists per strategy an estimator uses; when train and evaluate share a
strategy they share the engine, so alternating `train()`/`evaluate()` calls neither retrace
nor restore more than needed: a checkpoint is restored only when the variables in memory
are not already its values.

How a v1 model_fn gets TF1 graph semantics (the design, and why):

    compile(mode)
      trace   StepGraph.trace(step_body)   once per mode and input signature, eagerly:
              strategy.run(model_fn per replica, or replica 0's copied on the simulated
              TPU) into a FuncGraph WITHOUT automatic control dependencies; variables
              are created eagerly under their TF1 names (variable_store) and captured;
              scaffold_fn is called in that graph after the replicas (it sees replica
              0's collections, as TF1 code saw the one replica's)
      loop    tf.function(while_loop(step.instantiate(next(iterator))))
              the pruned copy: only the ops the fetches need, reads before updates

- Why not trace model_fn in the loop's `tf.function` directly (as this engine first did):
  `tf.function` runs every stateful op it traced and orders all ops on a variable in
  program order. A model_fn that builds `minimize()`/`ema.apply()` in EVAL mode then
  trains during evaluate(), and a global step read after `minimize()` sees the increment.
  TF1 ran only what `Session.run` fetched, with reads unordered against the updates.
- Why prune by copying into the loop rather than calling the pruned graph (as
  `wrap_function(...).prune()` would): the step stays inline in the while body (a nested
  call was measured 1.4x slower), and model_fn is called once per compiled program (the
  loop instantiates the traced graph; it does not call model_fn again). On the simulated
  TPU replica 0's call builds every replica (`replica_replay`); with CPU/GPU semantics
  each replica calls model_fn, as the original's MirroredStrategy path did.
- Why the copy order matters: the loop body keeps automatic control dependencies (the
  copied ops are all needed), which order ops on a resource by creation; copying every op
  that needs no update first makes such reads see the step's start value, deterministically.
- What else a TF1 trace had that the step graph provides: per-replica collections (each
  replica's model_fn sees only its own UPDATE_OPS, losses, moving-average variables);
  tf_keras's TF1 layer behaviour (graph named as `wrap_function`'s); control dependencies
  around `minimize()` kept across the optimizer's merge_call (legacy_patches); variables
  that hash and have a TF1 `.op` in user code (tf1_variables); `Saver(var_list)` in a
  Scaffold deciding what is restored (legacy_patches.RecordedSaver); the lookup tables
  model_fn built, initialised once before the first step as the Scaffold's init op did
  (lookup_tables).
"""
import dataclasses
import functools

import tensorflow as tf

from tpu_estimator_compat.state import checkpoints
from tpu_estimator_compat.tf1_behaviour import patches as legacy_patches
from tpu_estimator_compat import log as logging
from tpu_estimator_compat.engine import embeddings as embeddings_lib
from tpu_estimator_compat.engine import hook_placement
from tpu_estimator_compat.engine import inputs
from tpu_estimator_compat.engine import lookup_tables
from tpu_estimator_compat.engine import loops
from tpu_estimator_compat.engine import memory
from tpu_estimator_compat.engine import meta_graph as meta_graph_lib
from tpu_estimator_compat.engine import model_step
from tpu_estimator_compat.engine import parameter_servers
from tpu_estimator_compat.engine import replica_replay
from tpu_estimator_compat.engine import replica_sync as replica_sync_lib
from tpu_estimator_compat.engine import session_runs
from tpu_estimator_compat.api import optimizers
from tpu_estimator_compat.engine import step_graph
from tpu_estimator_compat.engine import tpu_embedding
from tpu_estimator_compat.engine import tpu_ops
from tpu_estimator_compat.engine import xla_step
from tpu_estimator_compat.state import warm_start as warm_start_lib
from tpu_estimator_compat.api.spec import ModeKeys
from tpu_estimator_compat.engine.step_outputs import StepOutputs
from tpu_estimator_compat.engine.variable_store import VariableStore
from tpu_estimator_compat.tf_internals import graphs


@dataclasses.dataclass
class CompiledMode:
    """The traced step and loop of one mode for one input signature."""
    traced: model_step.TracedSpec
    step_outputs: StepOutputs  # symbolic outputs of the step, for shapes and dtypes
    loop: object  # loop(iterator, n) -> step_outputs.TrainLoopResult / InferenceLoopResult
    init_from_checkpoint_calls: list
    program: object = None  # the model_bridge.UserProgram traced
    replica_sync: object = None  # TRAIN on several replicas: a replica_sync.ReplicaSync
    kept_alive: list = dataclasses.field(default_factory=list)  # objects the step uses
    # TRAIN (not with parameter servers): the loop for calls whose every loop is one step
    # (Estimator, hooks seeing every step, iterations_per_loop=1): the step alone, no while
    # loop; traced on its first use, as `loop` is
    one_step_loop: object = None
    # TRAIN: () -> the serialized MetaGraphDef of the checkpoints' `.meta` files, or None
    build_meta_graph: object = None
    _meta_graph: object = dataclasses.field(default=None, repr=False)

    def meta_graph(self):
        """The serialized TRAIN MetaGraphDef for checkpoints' `.meta` files (built once), or
        None if it could not be built."""
        if self._meta_graph is None:
            with logging.phase("building the TRAIN graph for the checkpoints' .meta files"):
                self._meta_graph = self.build_meta_graph() or b""
        return self._meta_graph or None

    def built_meta_graph(self):
        """`meta_graph()` if it was built already, else None (without building it)."""
        return self._meta_graph or None


class ModelEngine:
    """Variables and compiled functions of one model on one runtime (strategy)."""

    def __init__(self, runtime):
        self.runtime = runtime
        self.store = VariableStore(runtime.strategy)
        self.session_runs = session_runs.SessionRuns(runtime, self.store)
        self._compiled = {}
        self._synced = None  # (checkpoint path, variable names) whose values are in memory
        self._initialized = frozenset()  # names whose initial values have been set
        self._embeddings = None  # the TPU embedding tables (TPU semantics), made on first use

    @property
    def global_step(self):
        return int(self.store.global_step.numpy())

    def compile(self, mode, program, plan, iterator, hooks=hook_placement.NO_HOOKS):
        """Traces the model for `mode` on `iterator`'s element spec (once per signature).

        The trace also places `hooks` (a `hook_placement.HookPlacement`), so traces are
        cached per `hooks.trace_key` (set of `hooks=` objects) too. New hook objects reuse
        a trace of the same signature when it computes all they fetch (StopAtStepHook,
        hooks fetching what an earlier set fetched...); otherwise the model is traced
        again, keeping the latest hooked trace per signature.
        """
        # (a trace per first op seed of model_fn: input_fn's unseeded random ops took those
        # before it, as in TF1's graph)
        base = (mode, plan, (repr(iterator.element_spec), inputs.op_seeds_used(iterator)))
        key = base + (hooks.trace_key,)
        if key in self._compiled:
            return self._compiled[key]
        for other in [k for k in self._compiled if k[:3] == base]:
            compiled = self._compiled[other]
            if hooks.reuse(compiled.traced.placed_hooks):
                del self._compiled[other]  # the trace now serves this set of hooks
                self._compiled[key] = compiled
                return compiled
        if hooks.trace_key:  # hooks passed afresh each call must not pile up traces
            for stale in [k for k in self._compiled if k[:3] == base and k[3]]:
                del self._compiled[stale]
        try:
            self._compiled[key] = self._trace(mode, program, plan, iterator, hooks,
                                              self._replica_replay())
        except replica_replay.ReplayUnsupported as error:
            logging.info("Calling model_fn once per replica: replica 0's graph cannot be "
                         "copied to the others (%s).", error)
            self._compiled[key] = self._trace(mode, program, plan, iterator, hooks)
        return self._compiled[key]

    def _replica_replay(self):
        """A `ReplicaReplay` where model_fn is called once for every replica (the simulated
        TPU: one replica per core), else None (model_fn is called once per replica, as the
        original's MirroredStrategy path called it)."""
        runtime = self.runtime
        if (runtime.tpu_semantics and not runtime.model_parallel
                and runtime.coordinator is None
                and isinstance(runtime.strategy, tf.distribute.MirroredStrategy)
                and len(runtime.strategy.extended.worker_devices) > 1):
            return replica_replay.ReplicaReplay(runtime.strategy, self.store)
        return None

    def _trace(self, mode, program, plan, iterator, hooks, replay=None):
        traced = model_step.TracedSpec(placed_hooks=hooks.new_trace(self.store, self.session_runs))
        init_calls = []
        embeddings = self._tpu_embeddings(program, plan)
        before_replicas = embeddings.before_replicas(mode) if embeddings else None
        replica_fn = model_step.make_replica_fn(
            program.model_fn, mode, self.runtime, plan, program, traced, embeddings)
        kept_alive = []
        step_body = loops.make_step_body(self.runtime.strategy, self.store, replica_fn,
                                         init_calls, kept_alive,
                                         after_replicas=traced.build_scaffold,
                                         tpu_semantics=self.runtime.tpu_semantics,
                                         before_replicas=before_replicas, replay=replay)
        optimizers.reset_cross_shard_optimizer_usage()
        logging.info("Calling model_fn.")  # the original's lines around its model_fn call
        with logging.phase("calling model_fn for the %s step", mode), \
                graphs.global_seed(program.config.tf_random_seed, restart_op_seeds=False), \
                self.runtime.strategy.scope(), \
                self.store.creating_variables():
            step = step_graph.StepGraph.trace(
                step_body, inputs.step_element_spec(self.runtime.strategy, iterator),
                first_op_seed=inputs.op_seeds_used(iterator))
        logging.info("Done calling model_fn.")
        with logging.phase("building the %s step from model_fn's graph", mode):
            lookup_tables.initialize(step, self.runtime.tpu_semantics)
            step_outputs = step.outputs
            replica_sync = None
            if mode == ModeKeys.TRAIN:
                self._explain_gradient_aggregation()
                replica_sync = replica_sync_lib.ReplicaSync.for_step(
                    self.runtime.strategy, self.store, step.pruned_ops, step.graph.captures,
                    optimizers.synchronized_variables(), self.runtime.tpu_semantics)
            make_loop = (loops.make_train_loop if mode == ModeKeys.TRAIN
                         else loops.make_inference_loop)
            instantiate = step.instantiate
            compile_with_xla = self.runtime.compile_with_xla and not (
                embeddings and mode != ModeKeys.TRAIN)
            if self.runtime.compile_with_xla and not compile_with_xla:
                logging.info("The %s step with TPU embeddings is not compiled with XLA on the "
                             "simulated TPU (docs/how-it-works.md: Where it runs).", mode)
            if compile_with_xla:
                logging.info("Compiling the %s step with XLA, as a TPU does (%s=0 turns it "
                             "off).", mode, xla_step.SIMULATED_TPU_XLA_ENV)
                devices = self.runtime.strategy.extended.worker_devices
                tpu_ops.check(step, devices, mode)
                copy_ops = xla_step.copier(devices)
                instantiate = functools.partial(step.instantiate, copy_ops=copy_ops)
            read_element = inputs.step_element_reader(self.runtime.strategy, iterator)
            loop = make_loop(instantiate, step_outputs, read_element)
            build_meta_graph = (functools.partial(
                meta_graph_lib.train_meta_graph, program, traced, step,
                self.store.all_variables(), self.runtime,
                replay.replica_0 if replay else None) if mode == ModeKeys.TRAIN else None)
            if self.runtime.coordinator is not None:  # the workers run it (parameter servers)
                parameter_servers.log_placement(self.store.model_variables())
                return CompiledMode(traced, step_outputs,
                                    parameter_servers.CoordinatedLoop(self.runtime.coordinator,
                                                                      loop),
                                    init_calls, program, replica_sync, kept_alive,
                                    build_meta_graph=build_meta_graph)

            def explained(loop):
                if compile_with_xla:
                    loop = xla_step.explaining_compile_errors(loop)
                return _first_run_logged(memory.explaining_out_of_memory(
                    loop, mode, plan.model_fn_batch_size, self.runtime.num_replicas), mode)
            one_step_loop = (explained(loops.make_train_loop(instantiate, step_outputs,
                                                             read_element, one_step=True))
                             if mode == ModeKeys.TRAIN else None)
            return CompiledMode(traced, step_outputs, explained(loop), init_calls, program,
                                replica_sync, kept_alive, one_step_loop=one_step_loop,
                                build_meta_graph=build_meta_graph)

    def _tpu_embeddings(self, program, plan):
        """The TPU embeddings of `program`'s EmbeddingConfigSpec under TPU semantics (tables
        created once): TensorFlow 2's TPUEmbedding on a TPU, mirrored tables elsewhere; else
        None: with CPU/GPU semantics model_fn's columns look up in ordinary variables, as the
        original's `use_tpu=False`."""
        spec = program.embedding_config_spec
        if spec is None or not self.runtime.tpu_semantics:
            return None
        if self._embeddings is None:
            kind = (tpu_embedding.TpuEmbeddingOnTpu
                    if tpu_embedding.runs_on_tpu(self.runtime.strategy)
                    else embeddings_lib.TpuEmbeddings)
            self._embeddings = kind(spec, self.store)
        self._embeddings.create_tables(self.runtime.strategy, plan.model_fn_batch_size)
        return self._embeddings

    def _explain_gradient_aggregation(self):
        replicas = self.runtime.num_replicas
        if replicas > 1 and not optimizers.cross_shard_optimizer_used():
            if self.runtime.tpu_semantics:
                logging.warning(
                    "The optimizer is not wrapped in CrossShardOptimizer: as on a TPU, each "
                    "of the %d replicas applies its own gradients to its own copy of the "
                    "weights, and after every loop all copies take replica 0's values. Wrap "
                    "it in tf.compat.v1.tpu.CrossShardOptimizer(opt) to average the "
                    "replicas' gradients.", replicas)
            else:
                logging.warning(
                    "The optimizer is not wrapped in CrossShardOptimizer: on %d replicas its "
                    "gradients are SUMMED across replicas, so each step moves the weights as "
                    "far as %d single-replica steps would. Wrap it in "
                    "tf.compat.v1.tpu.CrossShardOptimizer(opt) to average them.", replicas,
                    replicas)

    def sync(self, checkpoint_path, compiled, warm_start_from=None):
        """Makes the variables hold `checkpoint_path`'s values (restoring only if they do not
        already). Variables seen for the first time with no checkpoint get what the
        original's initializers gave them: warm starting and recorded
        `init_from_checkpoint` calls apply to them, once.
        """
        variables = self.store.named_variables()
        names = frozenset(variables)
        if checkpoint_path is not None:
            restore_map = compiled.traced.restore_map()
            state = (checkpoint_path, names if restore_map is None else
                     frozenset((name, id(v)) for name, v in restore_map.items()))
            if self._synced != state:
                logging.info("Restoring parameters from %s", checkpoint_path)
                with logging.phase("restoring parameters from %s", checkpoint_path):
                    checkpoints.restore(variables if restore_map is None else restore_map,
                                        checkpoint_path)
                self.store.restored()
                self._synced = state
        else:
            fresh = {name: v for name, v in variables.items() if name not in self._initialized}
            if fresh and warm_start_from is not None:
                warm_start_lib.warm_start(fresh, [n for n in self.store.trainable_names()
                                                  if n in fresh], warm_start_from)
            for call in compiled.init_from_checkpoint_calls if fresh else ():
                existing = {name: v for name, v in fresh.items()
                            if call.variable_names is None or name in call.variable_names}
                warm_start_lib.init_from_checkpoint(
                    call.ckpt_dir_or_file, call.assignment_map, existing)
        self._initialized |= names

    def mark_synced(self, checkpoint_path):
        """Records that the variables in memory are exactly `checkpoint_path`'s."""
        self._synced = (checkpoint_path, frozenset(self.store.named_variables()))

    def mark_changed(self):
        self._synced = None


def _first_run_logged(loop, mode):
    """`loop`, saying before its first run that the run compiles it (seconds to minutes of
    silence otherwise)."""
    first = True

    def run(iterator, steps):
        nonlocal first
        if first:
            logging.info("Compiling the %s loop: its first run includes the compilation.", mode)
            first = False
            with logging.phase("compiling and running the first %s loop", mode):
                return loop(iterator, steps)
        return loop(iterator, steps)
    return run

