"""One train/evaluate/predict/export call of an estimator: the frozen description of the call
(`Call`), built in one place (`prepare`), handed to the host's driver of its mode.

    estimator.py (the facade: validates)
      -> train / evaluate / predict / export_saved_model here
           prepare: runtime (engine.runtime) -> batch plan (engine.batching)
                    -> input (engine.inputs) -> engine (engine.model_engine: trace)
                    -> hooks (host.hooks) -> loop size (config.tpu_config.loop_size)
           restore the checkpoint (engine.sync), start the hooks
           -> host.training / host.evaluation / host.prediction (loop_actions.run_loops)

Only this module joins the engine (device side) and the host (loops, hooks, checkpoints).
"""
import dataclasses
from typing import Any, Dict, Iterator, Mapping, Optional, Tuple

from tpu_estimator_compat import log as logging
from tpu_estimator_compat.api import spec as spec_lib
from tpu_estimator_compat.api.spec import ModeKeys
from tpu_estimator_compat.config import run_config as run_config_lib
from tpu_estimator_compat.config import tpu_config as tpu_config_lib
from tpu_estimator_compat.engine import batching
from tpu_estimator_compat.engine import input_errors
from tpu_estimator_compat.engine import input_release
from tpu_estimator_compat.engine import inputs
from tpu_estimator_compat.engine import model_bridge
from tpu_estimator_compat.engine import model_engine
from tpu_estimator_compat.engine import runtime as runtime_lib
from tpu_estimator_compat.export import saved_model as export_lib
from tpu_estimator_compat.host import evaluation
from tpu_estimator_compat.host import hooks as hooks_lib
from tpu_estimator_compat.host import multi_worker
from tpu_estimator_compat.host import parameter_server_tasks
from tpu_estimator_compat.host import prediction
from tpu_estimator_compat.host import training
from tpu_estimator_compat.state import checkpoints
from tpu_estimator_compat.state import sharing


@dataclasses.dataclass(frozen=True)
class EstimatorSetup:
    """What an estimator fixes for all its calls; built once, by the facade's constructor.

    `tpu_estimator`: TPUEstimator's policies (params keys, loop sizes, spec types), else
    Estimator's. `engines`: the `ModelEngine` of each (strategy, semantics), reused by later
    calls (their traces and variables).
    """
    config: run_config_lib.RunConfig
    program: model_bridge.UserProgram
    tpu_estimator: bool
    use_tpu: bool
    eval_on_tpu: bool
    batch_sizes: Mapping[str, Optional[int]]
    warm_start_from: Any
    export_to_tpu: bool
    export_to_cpu: bool
    export_api_version: int
    engines: Dict[Tuple[int, bool], model_engine.ModelEngine] = dataclasses.field(
        default_factory=dict)
    # False: evaluations write no 'checkpoint_path' summary (they evaluate a temporary
    # checkpoint of weights in memory, as InMemoryEvaluatorHook)
    reports_checkpoint_path: bool = True

    @property
    def model_dir(self) -> str:
        return self.config.model_dir


@dataclasses.dataclass(frozen=True)
class Call:
    """One train/evaluate/predict call, as `prepare` built it: where it runs (`runtime`),
    its batches (`plan`), its input (`input`, released when the call is done), the engine
    and the compiled program of its mode, its hooks, the steps of its device loops, and the
    checkpointing it starts from (`model_dir`, `warm_start_from`)."""
    mode: str
    runtime: runtime_lib.Runtime
    plan: batching.BatchPlan
    input: input_release.CallInput
    engine: model_engine.ModelEngine
    compiled: model_engine.CompiledMode
    hook_run: hooks_lib.HookRun
    loop_size: tpu_config_lib.LoopSize
    model_dir: str
    warm_start_from: Any

    @property
    def iterator(self):
        """The call's distributed input iterator."""
        return self.input.iterator

    @property
    def rows_per_replica_copy(self) -> Optional[int]:
        """With BROADCAST input only replica 0's rows count (every replica has the same)."""
        return (self.plan.model_fn_batch_size
                if self.plan.distribution == batching.Distribution.COPIED else None)

    @property
    def examples_per_step(self) -> int:
        """The examples of one global step, for the progress log."""
        plan, runtime = self.plan, self.runtime
        if plan.input_mode is None:  # CPU/GPU semantics: whole batches per replica
            return (plan.model_fn_batch_size or 0) * runtime.num_replicas
        if plan.distribution == batching.Distribution.COPIED:
            return plan.model_fn_batch_size
        return plan.model_fn_batch_size * runtime.num_replicas

    def sync(self, checkpoint_path: Optional[str]) -> None:
        """Gives the variables `checkpoint_path`'s values (or warm-started or initial ones)."""
        self.engine.sync(checkpoint_path, self.compiled, self.warm_start_from)

    def start_hooks(self) -> None:
        """Begins the hooks once the variables hold their values. Training's hooks that see
        every step read the global step each step starts with (evaluation does not move
        it)."""
        self.hook_run.start(
            self.compiled.traced.placed_hooks, self.compiled.traced.scaffold,
            every_step=self.loop_size.hooks_every_step and self.mode == ModeKeys.TRAIN)


def prepare(setup: EstimatorSetup, mode: str, input_fn, hooks, checkpoint_path,
            until_input_ends: bool = False) -> Call:
    """Builds the `Call` of `mode`: runtime, batch plan, input, engine and compiled program
    with the call's hooks placed, and the size of its loops (`until_input_ends`:
    evaluate(steps=None), see `inputs.distributed_iterator`). Raises the original's errors
    of a model_fn whose spec this estimator does not take."""
    runtime = _runtime(setup, mode)
    plan = _plan(setup, mode, runtime)
    call_input = input_release.CallInput(inputs.distributed_iterator(
        input_fn, mode, runtime, plan, setup.program, until_input_ends=until_input_ends))
    engine = _engine(setup, runtime)
    read_element = inputs.step_element_reader(runtime.strategy, call_input.iterator)
    hook_run = hooks_lib.HookRun(mode, hooks, checkpoint_path,
                                 on_variables_restored=engine.mark_changed,
                                 read_input=lambda: read_element(call_input.iterator))
    compiled = engine.compile(mode, setup.program, plan, call_input.iterator, hook_run)
    if not setup.tpu_estimator and not isinstance(compiled.traced.spec,
                                                  spec_lib.EstimatorSpec):
        raise ValueError("model_fn should return an EstimatorSpec. Got "
                         f"{type(compiled.traced.spec).__name__}; use TPUEstimator for a "
                         "TPUEstimatorSpec, or return spec.as_estimator_spec().")
    loop_size = tpu_config_lib.loop_size(
        mode, setup.config, tpu_estimator=setup.tpu_estimator,
        tpu_semantics=runtime.tpu_semantics, has_hooks=bool(hook_run.hooks),
        parameter_servers=runtime.coordinator is not None)
    if loop_size.steps_per_execution:  # closures on the workers, rounds on the chief
        compiled = dataclasses.replace(compiled, loop=compiled.loop.with_steps_per_execution(
            loop_size.steps_per_execution))
    return Call(mode=mode, runtime=runtime, plan=plan, input=call_input, engine=engine,
                compiled=compiled, hook_run=hook_run, loop_size=loop_size,
                model_dir=setup.model_dir, warm_start_from=setup.warm_start_from)


# -- train ----------------------------------------------------------------------------------
def train(setup: EstimatorSetup, input_fn, hooks, steps: Optional[int],
          max_steps: Optional[int], saving_listeners) -> None:
    """`train()` once the facade checked its arguments: skips a finished training, serves
    the chief in a parameter-server cluster's worker and ps tasks, else trains in
    model_dir, which one trainer at a time may (`sharing.training_in`)."""
    hooks = hooks_lib.validate_hooks(hooks)
    saving_listeners = hooks_lib.validate_saving_listeners(saving_listeners)
    if max_steps is not None and (sharing.latest_step(setup.model_dir) or 0) >= max_steps:
        logging.info("Skipping training since max_steps has already saved.")
        return  # without claiming model_dir: it may be read-only, or shared
    if (setup.config.task_type in ("worker", "ps")
            and runtime_lib.is_parameter_server_cluster(setup.config)):
        parameter_server_tasks.serve(setup.config, setup.model_dir, max_steps)
        return
    # One trainer per model_dir: a second one fails here, before reading or writing.
    with sharing.training_in(setup.model_dir, setup.config.is_chief) as lock:
        _train(setup, input_fn, hooks, steps, max_steps, saving_listeners, lock)


def _train(setup, input_fn, hooks, steps, max_steps, saving_listeners, lock):
    latest = checkpoints.latest_checkpoint(setup.model_dir)
    checkpoints.warn_of_newer_checkpoints(latest, setup.model_dir)
    call = prepare(setup, ModeKeys.TRAIN, input_fn, hooks, latest)
    with call.input:
        call.sync(latest)
        call.start_hooks()
        step = call.engine.global_step
        last_step = max_steps if max_steps is not None else (
            step + steps if steps is not None else float("inf"))

        def stopped():
            return (f"Training stopped at global step {call.engine.global_step}; "
                    + _last_checkpoint_phrase(setup.model_dir))
        with input_errors.named_input_errors(call.iterator, stopped):
            training.run_training(
                call.engine, call.compiled, call.iterator, training.TrainingPlan(
                    config=setup.config, model_dir=setup.model_dir, last_step=last_step,
                    loop_size=call.loop_size, examples_per_step=call.examples_per_step,
                    host_call_every_n_steps=(
                        setup.config.tpu_config.experimental_host_call_every_n_steps),
                    tpu_semantics=call.runtime.tpu_semantics,
                    tpu_estimator=setup.tpu_estimator),
                call.hook_run, saving_listeners, lock)


def _last_checkpoint_phrase(model_dir):
    latest = checkpoints.latest_checkpoint(model_dir)
    if latest is None:
        return "no checkpoint was written yet."
    return f"the last intact checkpoint is {latest} (a rerun resumes from it)."


# -- evaluate and predict -------------------------------------------------------------------
def evaluate(setup: EstimatorSetup, input_fn, steps: Optional[int], hooks, checkpoint_path,
             eval_dir: str) -> Dict[str, Any]:
    """`evaluate()` once the facade checked its arguments; returns the results."""
    checkpoint, call = _start_inference(setup, ModeKeys.EVAL, input_fn, hooks,
                                        checkpoint_path, until_input_ends=steps is None)
    stopped = f"Evaluation of {checkpoint or 'the initial weights'} stopped."
    with call.input, input_errors.named_input_errors(call.iterator, stopped):
        return evaluation.run_evaluation(
            call.engine, call.compiled, call.iterator, steps=steps,
            global_step=call.engine.global_step, eval_dir=eval_dir,
            checkpoint_path=checkpoint if setup.reports_checkpoint_path else None,
            rows_per_replica_copy=call.rows_per_replica_copy,
            hook_run=call.hook_run, steps_per_loop=call.loop_size.steps)


def predict(setup: EstimatorSetup, input_fn, predict_keys, hooks, checkpoint_path,
            yield_single_examples: bool) -> Iterator[Any]:
    """`predict()`: yields predictions for every input example, in input order."""
    checkpoint, call = _start_inference(setup, ModeKeys.PREDICT, input_fn, hooks,
                                        checkpoint_path)
    stopped = (f"Prediction with {checkpoint or 'the initial weights'} stopped after the "
               "predictions yielded so far.")
    with call.input, input_errors.named_input_errors(call.iterator, stopped):
        yield from prediction.generate_predictions(
            call.compiled, call.iterator, steps_per_loop=call.loop_size.steps,
            predict_keys=predict_keys, yield_single_examples=yield_single_examples,
            rows_per_replica_copy=call.rows_per_replica_copy, hook_run=call.hook_run,
            tpu_semantics=call.runtime.tpu_semantics)


def _start_inference(setup, mode, input_fn, hooks, checkpoint_path, until_input_ends=False):
    """The `Call` of an evaluate/predict call, its variables holding `checkpoint_path`
    (default: the latest checkpoint) and its hooks begun; returns (the checkpoint read or
    None, the call)."""
    hooks = hooks_lib.validate_hooks(hooks)
    chosen = sharing.choose_checkpoint(checkpoint_path, setup.model_dir)
    if chosen.path is None:
        logging.info("Could not find trained model in model_dir: %s, running "
                     "initialization to %s. No checkpoint there: the results come from "
                     "untrained initial weights (train first, or pass checkpoint_path).",
                     setup.model_dir, "evaluate" if mode == ModeKeys.EVAL else "predict")
    call = prepare(setup, mode, input_fn, hooks, chosen.path, until_input_ends)
    # A trainer beside this process may delete the chosen checkpoint meanwhile.
    checkpoint = chosen.read(call.sync)
    call.start_hooks()
    return checkpoint, call


# -- export ---------------------------------------------------------------------------------
def export_saved_model(setup: EstimatorSetup, export_dir_base, serving_input_receiver_fn,
                       assets_extra, as_text, checkpoint_path, mode, strip_default_attrs):
    """Exports `checkpoint_path` (default: the latest checkpoint, else warm_start_from's);
    returns the export's path."""
    # A trainer beside this process may delete the latest checkpoint meanwhile.
    chosen = sharing.choose_checkpoint(checkpoint_path, setup.model_dir)
    if chosen.path is None:  # no checkpoint: warm_start_from's, else the original's error
        chosen = sharing.ChosenCheckpoint(export_lib.resolve_checkpoint_path(
            setup.model_dir, None, setup.warm_start_from))
    return chosen.load(lambda path: _export_checkpoint(
        setup, path, export_dir_base, serving_input_receiver_fn, assets_extra, as_text, mode,
        strip_default_attrs))[1]


def _export_checkpoint(setup, checkpoint, export_dir_base, serving_input_receiver_fn,
                       assets_extra, as_text, mode, strip_default_attrs):
    # Several workers: only the chief (or the evaluator task) writes the export; the
    # others export into a temporary directory that is removed (multi_worker.export_dir_for).
    with multi_worker.export_dir_for(run_config_lib.writes_model_dir(setup.config),
                                      export_dir_base) as target:
        return export_lib.export_saved_model(export_lib.ExportPlan(
            model_fn=setup.program.model_fn, user_params=setup.program.params,
            config=setup.config, checkpoint_path=checkpoint, export_dir_base=target,
            serving_input_receiver_fn=serving_input_receiver_fn, assets_extra=assets_extra,
            as_text=as_text, export_to_cpu=setup.export_to_cpu,
            export_to_tpu=setup.export_to_tpu, mode=mode,
            strip_default_attrs=strip_default_attrs,
            export_saved_model_api_version=setup.export_api_version,
            add_use_tpu_param=setup.tpu_estimator))


# -- where a call runs ----------------------------------------------------------------------
def _runtime(setup, mode):
    use_tpu = setup.use_tpu and (mode != ModeKeys.EVAL or setup.eval_on_tpu)
    distribute = setup.config.train_distribute
    if mode != ModeKeys.TRAIN:  # TPU semantics evaluate on the training replicas too
        distribute = setup.config.eval_distribute or (distribute if use_tpu else None)
    return runtime_lib.select_runtime(setup.config, use_tpu, distribute,
                                      training=mode == ModeKeys.TRAIN)


def _engine(setup, runtime):
    key = (id(runtime.strategy), runtime.tpu_semantics)
    if key not in setup.engines:
        setup.engines[key] = model_engine.ModelEngine(runtime)
    return setup.engines[key]


def _plan(setup, mode, runtime):
    master = ""  # only named in TPU errors: without a TPU, no cluster resolver is asked
    if runtime.tpu_semantics:
        master = (setup.config.evaluation_master if mode == ModeKeys.EVAL
                  else setup.config.master)
    return batching.plan_batches(setup.batch_sizes[mode], mode, runtime,
                                 setup.config.tpu_config, master)
