"""`TPUEstimator` and `Estimator`: the public facade. Methods validate, then orchestrate:

    runtime (strategy) -> batch plan -> distributed input -> engine (trace, sync) -> loop driver

`Estimator` holds the shared machinery with Estimator's rules; `TPUEstimator` subclasses it
(as in TF1) and overrides the policies: params keys, batch sizes, checks, steps per loop.

The mechanics live in the modules named in each step; this file stays short on purpose.
"""
import collections.abc
import copy
import dataclasses
import os


from tpu_estimator_compat.engine import batching
from tpu_estimator_compat.state import checkpoints
from tpu_estimator_compat.state import sharing
from tpu_estimator_compat.config import model_dir as model_dir_lib
from tpu_estimator_compat.config import config_line
from tpu_estimator_compat.config import run_config as run_config_lib
from tpu_estimator_compat.config.run_config import RunConfig
from tpu_estimator_compat.config.tpu_config import InputPipelineConfig
from tpu_estimator_compat.config import tpu_config as tpu_config_lib
from tpu_estimator_compat.tf1_behaviour import eager_calls
from tpu_estimator_compat.tf1_behaviour import process_patches
from tpu_estimator_compat.engine import model_engine as engine_lib
from tpu_estimator_compat.host import evaluation
from tpu_estimator_compat.export import saved_model as export_lib
from tpu_estimator_compat.host import hooks as hooks_lib
from tpu_estimator_compat.engine import input_checks
from tpu_estimator_compat.engine import input_errors
from tpu_estimator_compat.engine import input_release
from tpu_estimator_compat.engine import inputs
from tpu_estimator_compat import log as logging
from tpu_estimator_compat.engine import model_bridge
from tpu_estimator_compat.host import multi_worker
from tpu_estimator_compat.host import parameter_server_tasks
from tpu_estimator_compat.host import prediction
from tpu_estimator_compat.engine import runtime as runtime_lib
from tpu_estimator_compat.api import spec as spec_lib
from tpu_estimator_compat.host import training
from tpu_estimator_compat.api.spec import ModeKeys

_RESERVED_PARAMS_KEYS = ["batch_size", "context"]


class Estimator:
    """`tf.estimator.Estimator`: a `model_fn` returning `EstimatorSpec`s, on CPU/GPU.

    Estimator's rules: `params` reach input_fn/model_fn as given (a copy; no `batch_size`,
    `context` or `use_tpu` keys), neither function needs a `params` argument,
    `train(steps=None, max_steps=None)` trains until the input ends, `evaluate(steps=None)`
    evaluates the whole input. It runs on one device, or under
    `RunConfig(train_distribute=..., eval_distribute=...)` with whole batches per replica.
    As Estimator's one step per `Session.run`, every device loop runs one step, so training
    hooks fire once per step and checkpoints/logs fall on the exact steps configured
    (`tpu_config.iterations_per_loop` is not used). `evaluate` runs all its steps in one
    loop (evaluation hooks see one before_run/after_run, not one per batch).

    Args:
      model_fn: `(features, labels, mode, params, config)` (any subset with `features`),
        returning an `EstimatorSpec`.
      model_dir: where checkpoints and summaries go (else `config.model_dir`, else a
        temporary directory).
      config: a `RunConfig`, or None for the default one.
      params: passed to model_fn and input_fn as given (a deep copy per call).
      warm_start_from: a checkpoint or SavedModel path, or `WarmStartSettings`.
    """

    _ADDS_TPU_PARAMS = False

    def __init__(self, model_fn, model_dir=None, config=None, params=None,
                 warm_start_from=None):
        model_bridge.validate_model_fn_signature(model_fn)
        _check_params(params)
        self._init_common(model_fn, model_dir, config,
                          copy.deepcopy(params) if params is not None else {}, warm_start_from)

    def _init_common(self, model_fn, model_dir, config, params, warm_start_from,
                     use_tpu=False, batch_sizes=None, eval_on_tpu=False, export_to_tpu=False,
                     export_to_cpu=True, export_api_version=1, embedding_config_spec=None):
        # The user's code the engine runs is TF1 code: TF1 shapes, hashable variables.
        process_patches.install()
        self._config = model_dir_lib.resolve_model_dir(config, model_dir)
        logging.info("Using config: %s", config_line.using_config(
            self._config, tpu_estimator=self._ADDS_TPU_PARAMS))
        self._program = model_bridge.UserProgram(model_fn, params, self._config,
                                                 adds_tpu_params=self._ADDS_TPU_PARAMS,
                                                 embedding_config_spec=embedding_config_spec)
        self._use_tpu = bool(use_tpu)
        self._batch_sizes = dict(batch_sizes or dict.fromkeys(
            (ModeKeys.TRAIN, ModeKeys.EVAL, ModeKeys.PREDICT)))
        self._eval_on_tpu = eval_on_tpu
        self._export_to_tpu = export_to_tpu
        self._export_to_cpu = export_to_cpu
        self._warm_start_from = warm_start_from
        self._export_api_version = export_api_version
        self._engines = {}

    # -- properties -------------------------------------------------------------------------
    @property
    def model_dir(self):
        return self._config.model_dir

    @property
    def config(self):
        return copy.deepcopy(self._config)

    @property
    def params(self):
        return copy.deepcopy(self._program.params)

    @property
    def model_fn(self):
        return self._program.model_fn

    # -- train ------------------------------------------------------------------------------
    @eager_calls.eager
    def train(self, input_fn, hooks=None, steps=None, max_steps=None, saving_listeners=None):
        """Trains for `steps` more steps or up to `max_steps`; returns self.

        `hooks` (and the spec's `training_hooks`) run once per device loop (see
        `hooks.py`); `saving_listeners` are called around every checkpoint save. In the
        `worker` and `ps` tasks of a TF_CONFIG cluster with parameter servers, serves the
        chief until training reaches `max_steps` (`parameter_server_tasks.py`).
        """
        _check_train_steps(steps, max_steps, self._use_tpu)
        input_checks.check_input_fn(input_fn)
        self._check_user_fns(input_fn, ModeKeys.TRAIN)
        hooks = hooks_lib.validate_hooks(hooks)
        saving_listeners = hooks_lib.validate_saving_listeners(saving_listeners)
        if max_steps is not None and (sharing.latest_step(self.model_dir) or 0) >= max_steps:
            logging.info("Skipping training since max_steps has already saved.")
            return self  # without claiming model_dir: it may be read-only, or shared
        if self._serves_parameter_server_training():  # the chief drives this task
            parameter_server_tasks.serve(self._config, self.model_dir, max_steps)
            return self
        # One trainer per model_dir: a second one fails here, before reading or writing.
        with sharing.training_in(self.model_dir, self._config.is_chief) as lock:
            self._train(input_fn, hooks, steps, max_steps, saving_listeners, lock)
        return self

    def _train(self, input_fn, hooks, steps, max_steps, saving_listeners, lock):
        latest = checkpoints.latest_checkpoint(self.model_dir)
        checkpoints.warn_of_newer_checkpoints(latest, self.model_dir)
        hook_run = hooks_lib.HookRun(ModeKeys.TRAIN, hooks, latest)
        runtime, plan, call_input, engine, compiled = self._prepare(ModeKeys.TRAIN, input_fn,
                                                                    hook_run)
        loop_size = self._loop_size(ModeKeys.TRAIN, runtime, hook_run)
        hook_run.every_step = loop_size.hooks_every_step
        if loop_size.steps_per_execution:  # closures on the workers, rounds on the chief
            compiled = dataclasses.replace(compiled, loop=compiled.loop.with_steps_per_execution(
                loop_size.steps_per_execution))
        with call_input:
            engine.sync(latest, compiled, self._warm_start_from)
            hook_run.start(compiled.traced.placed_hooks, compiled.traced.scaffold)
            step = engine.global_step
            last_step = max_steps if max_steps is not None else (
                step + steps if steps is not None else float("inf"))
            def stopped():
                return (f"Training stopped at global step {engine.global_step}; "
                        + _last_checkpoint_phrase(self.model_dir))
            with input_errors.named_input_errors(call_input.iterator, stopped):
                training.run_training(
                    engine, compiled, call_input.iterator, training.TrainingPlan(
                        config=self._config, model_dir=self.model_dir, last_step=last_step,
                        loop_size=loop_size,
                        examples_per_step=self._examples_per_step(plan, runtime),
                        host_call_every_n_steps=(
                            self._config.tpu_config.experimental_host_call_every_n_steps),
                        tpu_semantics=runtime.tpu_semantics,
                        tpu_estimator=self._ADDS_TPU_PARAMS),
                    hook_run, saving_listeners, lock)

    # -- evaluate ---------------------------------------------------------------------------
    @eager_calls.eager
    def evaluate(self, input_fn, steps=None, hooks=None, checkpoint_path=None, name=None):
        """Evaluates the latest checkpoint (or `checkpoint_path`) on `steps` batches, or on
        the whole input when `steps` is None (every path, multi-replica included).

        All steps run in one device loop: `hooks` and the spec's `evaluation_hooks` see one
        before_run/after_run; where hooks run every step (`_hooks_run_every_step`), they see
        one per step.
        """
        self._check_eval_steps(steps)
        checkpoint, plan, call_input, engine, compiled, hook_run = self._start_inference(
            ModeKeys.EVAL, input_fn, hooks, checkpoint_path, until_input_ends=steps is None)
        stopped = f"Evaluation of {checkpoint or 'the initial weights'} stopped."
        with call_input, input_errors.named_input_errors(call_input.iterator, stopped):
            return evaluation.run_evaluation(
                engine, compiled, call_input.iterator, steps=steps,
                global_step=engine.global_step, eval_dir=self.eval_dir(name),
                checkpoint_path=checkpoint, rows_per_replica_copy=_rows_per_replica_copy(plan),
                hook_run=hook_run,
                steps_per_loop=self._loop_size(ModeKeys.EVAL, engine.runtime, hook_run).steps)

    # -- predict ----------------------------------------------------------------------------
    @eager_calls.eager_generator
    def predict(self, input_fn, predict_keys=None, hooks=None, checkpoint_path=None,
                yield_single_examples=True):
        """Yields predictions for every input example, in input order (forever from an
        endless input, as the original: `next(estimator.predict(...))` takes the first).

        `hooks` and the spec's `prediction_hooks` run once per device loop.
        """
        checkpoint, plan, call_input, engine, compiled, hook_run = self._start_inference(
            ModeKeys.PREDICT, input_fn, hooks, checkpoint_path, until_input_ends=False)
        steps_per_loop = self._loop_size(ModeKeys.PREDICT, engine.runtime, hook_run).steps
        stopped = (f"Prediction with {checkpoint or 'the initial weights'} stopped after the "
                   "predictions yielded so far.")
        with call_input, input_errors.named_input_errors(call_input.iterator, stopped):
            yield from prediction.generate_predictions(
                compiled, call_input.iterator, steps_per_loop=steps_per_loop,
                predict_keys=predict_keys, yield_single_examples=yield_single_examples,
                rows_per_replica_copy=_rows_per_replica_copy(plan), hook_run=hook_run,
                tpu_semantics=engine.runtime.tpu_semantics)

    # -- export -----------------------------------------------------------------------------
    def export_saved_model(self, export_dir_base, serving_input_receiver_fn,
                           assets_extra=None, as_text=False, checkpoint_path=None,
                           experimental_mode=ModeKeys.PREDICT):
        """Writes a SavedModel with a CPU (`serve`) MetaGraph and, for a TPUEstimator, a TPU
        (`serve, tpu`) one."""
        return self._export(export_dir_base, serving_input_receiver_fn, assets_extra, as_text,
                            checkpoint_path, experimental_mode, strip_default_attrs=True)

    def export_savedmodel(self, export_dir_base, serving_input_receiver_fn,
                          assets_extra=None, as_text=False, checkpoint_path=None,
                          strip_default_attrs=False):
        """The deprecated name of `export_saved_model`."""
        return self._export(export_dir_base, serving_input_receiver_fn, assets_extra, as_text,
                            checkpoint_path, ModeKeys.PREDICT, strip_default_attrs)

    @eager_calls.eager
    def _export(self, export_dir_base, serving_input_receiver_fn, assets_extra, as_text,
                checkpoint_path, mode, strip_default_attrs):
        if not serving_input_receiver_fn:
            raise ValueError("An input_receiver_fn must be defined.")
        # A trainer beside this process may delete the latest checkpoint meanwhile.
        chosen = sharing.choose_checkpoint(checkpoint_path, self.model_dir)
        if chosen.path is None:  # no checkpoint: warm_start_from's, else the original's error
            chosen = sharing.ChosenCheckpoint(export_lib.resolve_checkpoint_path(
                self.model_dir, None, self._warm_start_from))
        return chosen.load(lambda path: self._export_checkpoint(
            path, export_dir_base, serving_input_receiver_fn, assets_extra, as_text, mode,
            strip_default_attrs))[1]

    def _export_checkpoint(self, checkpoint, export_dir_base, serving_input_receiver_fn,
                           assets_extra, as_text, mode, strip_default_attrs):
        # Several workers: only the chief (or the evaluator task) writes the export; the
        # others export into a temporary directory that is removed (multi_worker.export_dir_for).
        with multi_worker.export_dir_for(run_config_lib.writes_model_dir(self._config),
                                          export_dir_base) as target:
            return export_lib.export_saved_model(export_lib.ExportPlan(
                self._program.model_fn, user_params=self._program.params, config=self._config,
                checkpoint_path=checkpoint, export_dir_base=target,
                serving_input_receiver_fn=serving_input_receiver_fn, assets_extra=assets_extra,
                as_text=as_text, export_to_cpu=self._export_to_cpu,
                export_to_tpu=self._export_to_tpu, mode=mode,
                strip_default_attrs=strip_default_attrs,
                export_saved_model_api_version=self._export_api_version,
                add_use_tpu_param=self._ADDS_TPU_PARAMS))

    # -- checkpoints ------------------------------------------------------------------------
    def latest_checkpoint(self):
        return checkpoints.latest_checkpoint(self.model_dir)

    def get_variable_names(self):
        return sharing.load_latest(self.model_dir, checkpoints.list_variable_names)

    def get_variable_value(self, name):
        return sharing.load_latest(self.model_dir,
                                   lambda path: checkpoints.load_variable(path, name))

    def eval_dir(self, name=None):
        return os.path.join(self.model_dir, "eval" if not name else "eval_" + name)

    # -- policies (Estimator's; TPUEstimator overrides) ------------------------------------
    def _check_user_fns(self, input_fn, mode):
        """Estimator calls input_fn/model_fn with whatever arguments they declare."""

    def _check_eval_steps(self, steps):
        if steps is not None and steps <= 0:
            raise ValueError(f"Must specify steps > 0, given: {steps}")

    def _check_spec(self, compiled):
        if not isinstance(compiled.traced.spec, spec_lib.EstimatorSpec):
            raise ValueError("model_fn should return an EstimatorSpec. Got "
                             f"{type(compiled.traced.spec).__name__}; use TPUEstimator for a "
                             "TPUEstimatorSpec, or return spec.as_estimator_spec().")

    def _loop_size(self, mode, runtime, hook_run):
        """The steps of each device loop of this call (`tpu_config.loop_size`)."""
        return tpu_config_lib.loop_size(
            mode, self._config, tpu_estimator=self._ADDS_TPU_PARAMS,
            tpu_semantics=runtime.tpu_semantics, has_hooks=bool(hook_run.hooks),
            parameter_servers=runtime.coordinator is not None)

    def _serves_parameter_server_training(self):
        return (self._config.task_type in ("worker", "ps")
                and runtime_lib.is_parameter_server_cluster(self._config))

    # -- internals --------------------------------------------------------------------------
    def _start_inference(self, mode, input_fn, hooks, checkpoint_path, until_input_ends=True):
        """Checks, input, compiled model and hooks of an evaluate/predict call, with the
        variables holding `checkpoint_path` (default: the latest checkpoint)."""
        input_checks.check_input_fn(input_fn)
        self._check_user_fns(input_fn, mode)
        hooks = hooks_lib.validate_hooks(hooks)
        chosen = sharing.choose_checkpoint(checkpoint_path, self.model_dir)
        checkpoint = chosen.path
        if checkpoint is None:
            logging.info("Could not find trained model in model_dir: %s, running "
                         "initialization to %s. No checkpoint there: the results come from "
                         "untrained initial weights (train first, or pass checkpoint_path).",
                         self.model_dir, "evaluate" if mode == ModeKeys.EVAL else "predict")
        hook_run = hooks_lib.HookRun(mode, hooks, checkpoint)
        _, plan, call_input, engine, compiled = self._prepare(mode, input_fn, hook_run,
                                                              until_input_ends)
        # A trainer beside this process may delete the chosen checkpoint meanwhile.
        checkpoint = chosen.read(
            lambda path: engine.sync(path, compiled, self._warm_start_from))
        hook_run.start(compiled.traced.placed_hooks, compiled.traced.scaffold)
        return checkpoint, plan, call_input, engine, compiled, hook_run

    def _prepare(self, mode, input_fn, hook_run, until_input_ends=False):
        """Runtime, batch plan, input (an `input_release.CallInput`), engine and compiled
        model for one call, with the call's hooks placed (`until_input_ends`:
        evaluate(steps=None), see `inputs.distributed_iterator`)."""
        runtime = self._runtime(mode)
        plan = self._plan(mode, runtime)
        call_input = input_release.CallInput(inputs.distributed_iterator(
            input_fn, mode, runtime, plan, self._program, until_input_ends=until_input_ends))
        engine = self._engine(runtime)
        hook_run.on_variables_restored = engine.mark_changed  # a hook's Saver restored
        compiled = engine.compile(mode, self._program, plan, call_input.iterator, hook_run)
        self._check_spec(compiled)
        return runtime, plan, call_input, engine, compiled

    def _runtime(self, mode):
        use_tpu = self._use_tpu and (mode != ModeKeys.EVAL or self._eval_on_tpu)
        distribute = self._config.train_distribute
        if mode != ModeKeys.TRAIN:  # TPU semantics evaluate on the training replicas too
            distribute = self._config.eval_distribute or (distribute if use_tpu else None)
        return runtime_lib.select_runtime(self._config, use_tpu, distribute,
                                          training=mode == ModeKeys.TRAIN)

    def _engine(self, runtime):
        key = (id(runtime.strategy), runtime.tpu_semantics)
        if key not in self._engines:
            self._engines[key] = engine_lib.ModelEngine(runtime)
        return self._engines[key]

    def _plan(self, mode, runtime):
        master = ""  # only named in TPU errors: without a TPU, no cluster resolver is asked
        if runtime.tpu_semantics:
            master = (self._config.evaluation_master if mode == ModeKeys.EVAL
                      else self._config.master)
        return batching.plan_batches(self._batch_sizes[mode], mode, runtime,
                                     self._config.tpu_config, master)

    @staticmethod
    def _examples_per_step(plan, runtime):
        if plan.input_mode is None:  # CPU/GPU semantics: whole batches per replica
            return (plan.model_fn_batch_size or 0) * runtime.num_replicas
        if plan.distribution == batching.Distribution.COPIED:
            return plan.model_fn_batch_size
        return plan.model_fn_batch_size * runtime.num_replicas


class TPUEstimator(Estimator):
    """Estimator with TPU semantics, running on TF2 tf.distribute strategies.

    See docs/how-it-works.md for what runs where; arguments are the original's. Hooks run once per
    device loop of `iterations_per_loop` steps, as the original's once per Session.run.
    """

    _ADDS_TPU_PARAMS = True

    def __init__(self, model_fn=None, model_dir=None, config=None, params=None, use_tpu=True,
                 train_batch_size=None, eval_batch_size=None, predict_batch_size=None,
                 batch_axis=None, eval_on_tpu=True, export_to_tpu=True, export_to_cpu=True,
                 warm_start_from=None, embedding_config_spec=None,
                 export_saved_model_api_version=1):
        if config is None or not isinstance(config, RunConfig):
            raise ValueError("`config` must be provided with type `tpu_config.RunConfig`")
        _check_params(params)
        if params is not None and any(k in params for k in _RESERVED_PARAMS_KEYS):
            raise ValueError(f"{_RESERVED_PARAMS_KEYS} are reserved keys but existed in params "
                             f"{params}.")
        model_bridge.validate_model_fn_signature(model_fn)
        if use_tpu:
            if train_batch_size is None:
                raise ValueError("`train_batch_size` cannot be `None`")
            for name, value in (("train_batch_size", train_batch_size),
                                ("eval_batch_size", eval_batch_size),
                                ("predict_batch_size", predict_batch_size)):
                _check_batch_size(name, value)
            if (config.tpu_config.per_host_input_for_training
                    == InputPipelineConfig.PER_SHARD_V1
                    and config.tpu_config.num_cores_per_replica):
                raise ValueError(
                    "Model parallelism only supports per host input for training. Please "
                    "adjust TPURunconfig.per_host_input_for_training.")
            if embedding_config_spec and config.tpu_config.per_host_input_for_training not in (
                    InputPipelineConfig.PER_HOST_V1, InputPipelineConfig.PER_HOST_V2):
                raise ValueError(
                    "Only PER_HOST_V1 and PER_HOST_V2 is supported when using TPU Embedding; "
                    f"got {config.tpu_config.per_host_input_for_training}.")
        eval_on_tpu_ignored = eval_on_tpu and not use_tpu
        eval_on_tpu = eval_on_tpu and use_tpu
        if (not (use_tpu and eval_on_tpu) and embedding_config_spec
                and embedding_config_spec.partition_strategy == "mod"):
            raise ValueError("Mod sharding of embedding tables not supported on CPU.")
        if export_saved_model_api_version not in (1, 2):
            raise ValueError("export_saved_model_api_version should be 1 or 2; got "
                             f"{export_saved_model_api_version}.")
        self._init_common(
            model_fn, model_dir, config, dict(params or {}), warm_start_from, use_tpu=use_tpu,
            batch_sizes={ModeKeys.TRAIN: train_batch_size, ModeKeys.EVAL: eval_batch_size,
                         ModeKeys.PREDICT: predict_batch_size},
            eval_on_tpu=eval_on_tpu, export_to_tpu=export_to_tpu, export_to_cpu=export_to_cpu,
            export_api_version=export_saved_model_api_version,
            embedding_config_spec=embedding_config_spec)
        if eval_on_tpu_ignored:  # after `Using config`, as the original
            logging.warning("eval_on_tpu ignored because use_tpu is False.")

    def _check_user_fns(self, input_fn, mode):
        if mode == ModeKeys.TRAIN:
            model_bridge.require_params_arg(self._program.model_fn, "model_fn")
        model_bridge.require_params_arg(input_fn, "input_fn")

    def _check_eval_steps(self, steps):
        _check_eval_steps(steps)

    def _check_spec(self, compiled):
        """model_step checks the spec types TPUEstimator accepts while tracing."""


def export_estimator_savedmodel(estimator, export_dir_base, serving_input_receiver_fn,
                                assets_extra=None, as_text=False, checkpoint_path=None):
    """Exports a trained `estimator` (an Estimator or TPUEstimator) for TPU serving, as the
    original's module helper: a `TPUEstimator(use_tpu=True)` on its model_fn, params and
    model_dir writes the SavedModel (`serve` and `serve, tpu` MetaGraphs). Returns its path."""
    tpu_estimator = TPUEstimator(
        estimator.model_fn, config=RunConfig(model_dir=estimator.model_dir),
        params=estimator.params, use_tpu=True,
        train_batch_size=2048, eval_batch_size=2048)  # required, unused by export
    return tpu_estimator.export_saved_model(export_dir_base, serving_input_receiver_fn,
                                            assets_extra, as_text, checkpoint_path)


def _last_checkpoint_phrase(model_dir):
    latest = checkpoints.latest_checkpoint(model_dir)
    if latest is None:
        return "no checkpoint was written yet."
    return f"the last intact checkpoint is {latest} (a rerun resumes from it)."


def _rows_per_replica_copy(plan):
    """With BROADCAST input only replica 0's rows count (every replica has the same)."""
    return (plan.model_fn_batch_size
            if plan.distribution == batching.Distribution.COPIED else None)


def _check_params(params):
    if params is not None and not isinstance(params, collections.abc.Mapping):
        raise TypeError(
            f"params must be a dict (or None); got {type(params).__name__}: {params!r}. Pass "
            "hyperparameters as a dict, e.g. params={'learning_rate': 0.1} (for an HParams "
            "object, params=hparams.values()).")


def _check_eval_steps(steps):
    if steps is None:
        return
    if not isinstance(steps, int) or isinstance(steps, bool):
        raise TypeError(f"Eval steps must be int, got {type(steps)}")
    if steps <= 0:
        raise ValueError(f"Eval steps must be positive, got {steps}")


_MAX_ROWS = 2**31 - 1


def _check_batch_size(name, value):
    if value is None:
        return
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"{name} must be int, got {type(value)}")
    if value < 1:
        raise ValueError(f"{name} must be positive, got {value}")
    if value > _MAX_ROWS:
        raise ValueError(
            f"{name} ({value}) is larger than a batch TensorFlow can hold: a tensor dimension "
            f"has at most {_MAX_ROWS} (2**31 - 1) rows in its kernels. Use a smaller batch "
            "size.")


def _check_train_steps(steps, max_steps, use_tpu):
    if steps is not None and max_steps is not None:
        raise ValueError("Can not provide both steps and max_steps.")
    if use_tpu and steps is None and max_steps is None:
        raise ValueError("For TPU training, one of `steps` or `max_steps` must be set. "
                         "Cannot be both `None`.")
    for name, value in (("steps", steps), ("max_steps", max_steps)):
        if value is None:
            continue
        if use_tpu and (not isinstance(value, int) or isinstance(value, bool)):
            raise TypeError(f"Train steps must be int, got {type(value)}")
        if value <= 0:
            raise ValueError(f"Must specify {name} > 0, given: {value}")
