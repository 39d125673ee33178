"""`TPUEstimator` and `Estimator`: the public facade. Methods validate their arguments, then
delegate the call to `calls.py`, which builds its description (`calls.Call`: runtime, batch
plan, input, compiled program, hooks, loop size) in one place and hands it to the host's
driver of its mode.

`Estimator` holds Estimator's rules; `TPUEstimator` subclasses it (as in TF1) and overrides
the checks of its arguments and user functions; the policies that differ inside a call
(params keys, batch sizes, spec types, steps per loop) follow `EstimatorSetup.tpu_estimator`.
"""
import collections.abc
import copy
import dataclasses
import os

from tpu_estimator_compat import calls
from tpu_estimator_compat import log as logging
from tpu_estimator_compat.api.spec import ModeKeys
from tpu_estimator_compat.config import config_line
from tpu_estimator_compat.config import model_dir as model_dir_lib
from tpu_estimator_compat.config.run_config import RunConfig
from tpu_estimator_compat.config.tpu_config import InputPipelineConfig
from tpu_estimator_compat.engine import input_checks
from tpu_estimator_compat.engine import model_bridge
from tpu_estimator_compat.state import checkpoints
from tpu_estimator_compat.state import sharing
from tpu_estimator_compat.tf1_behaviour import eager_calls
from tpu_estimator_compat.tf1_behaviour import process_patches

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
      params: passed to model_fn and input_fn as given (a deep copy per call): a dict, or any
        object, as the original took (an argparse Namespace, an HParams).
      warm_start_from: a checkpoint or SavedModel path, or `WarmStartSettings`.
    """

    _ADDS_TPU_PARAMS = False

    def __init__(self, model_fn, model_dir=None, config=None, params=None,
                 warm_start_from=None):
        model_bridge.validate_model_fn_signature(model_fn)
        self._init_common(model_fn, model_dir, config, copy.deepcopy(params or {}),
                          warm_start_from)

    def _init_common(self, model_fn, model_dir, config, params, warm_start_from,
                     use_tpu=False, batch_sizes=None, eval_on_tpu=False, export_to_tpu=False,
                     export_to_cpu=True, export_api_version=1, embedding_config_spec=None):
        # The user's code the engine runs is TF1 code: TF1 shapes, hashable variables.
        process_patches.install()
        self._config = model_dir_lib.resolve_model_dir(config, model_dir)
        logging.info("Using config: %s", config_line.using_config(
            self._config, tpu_estimator=self._ADDS_TPU_PARAMS))
        self._use_tpu = bool(use_tpu)
        self._warm_start_from = warm_start_from
        self._setup = calls.EstimatorSetup(
            config=self._config,
            program=model_bridge.UserProgram(model_fn, params, self._config,
                                             adds_tpu_params=self._ADDS_TPU_PARAMS,
                                             embedding_config_spec=embedding_config_spec),
            tpu_estimator=self._ADDS_TPU_PARAMS, use_tpu=self._use_tpu,
            eval_on_tpu=eval_on_tpu, batch_sizes=dict(batch_sizes or dict.fromkeys(
                (ModeKeys.TRAIN, ModeKeys.EVAL, ModeKeys.PREDICT))),
            warm_start_from=warm_start_from, export_to_tpu=export_to_tpu,
            export_to_cpu=export_to_cpu, export_api_version=export_api_version)

    # -- properties -------------------------------------------------------------------------
    @property
    def model_dir(self):
        return self._config.model_dir

    @property
    def config(self):
        return copy.deepcopy(self._config)

    @property
    def params(self):
        return copy.deepcopy(self._setup.program.params)

    @property
    def model_fn(self):
        return self._setup.program.model_fn

    def _in_memory_evaluator(self):
        """This estimator's copy with engines (variables, traces) of its own, so that it
        can evaluate while one of this estimator's calls trains, whose evaluations write no
        'checkpoint_path' summary (InMemoryEvaluatorHook evaluates temporary checkpoints)."""
        twin = copy.copy(self)
        twin._setup = dataclasses.replace(self._setup, engines={},
                                          reports_checkpoint_path=False)
        return twin

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
        calls.train(self._setup, input_fn, hooks, steps, max_steps, saving_listeners)
        return self

    # -- evaluate ---------------------------------------------------------------------------
    @eager_calls.eager
    def evaluate(self, input_fn, steps=None, hooks=None, checkpoint_path=None, name=None):
        """Evaluates the latest checkpoint (or `checkpoint_path`) on `steps` batches, or on
        the whole input when `steps` is None (every path, multi-replica included).

        All steps run in one device loop: `hooks` and the spec's `evaluation_hooks` see one
        before_run/after_run; where hooks run every step (`tpu_config.loop_size`), they see
        one per step.
        """
        self._check_eval_steps(steps)
        input_checks.check_input_fn(input_fn)
        self._check_user_fns(input_fn, ModeKeys.EVAL)
        return calls.evaluate(self._setup, input_fn, steps, hooks, checkpoint_path,
                              self.eval_dir(name))

    # -- predict ----------------------------------------------------------------------------
    @eager_calls.eager_generator
    def predict(self, input_fn, predict_keys=None, hooks=None, checkpoint_path=None,
                yield_single_examples=True):
        """Yields predictions for every input example, in input order (forever from an
        endless input, as the original: `next(estimator.predict(...))` takes the first).

        `hooks` and the spec's `prediction_hooks` run once per device loop.
        """
        input_checks.check_input_fn(input_fn)
        self._check_user_fns(input_fn, ModeKeys.PREDICT)
        yield from calls.predict(self._setup, input_fn, predict_keys, hooks, checkpoint_path,
                                 yield_single_examples)

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
        return calls.export_saved_model(
            self._setup, export_dir_base, serving_input_receiver_fn, assets_extra, as_text,
            checkpoint_path, mode, strip_default_attrs)

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
            model_bridge.require_params_arg(self._setup.program.model_fn, "model_fn")
        model_bridge.require_params_arg(input_fn, "input_fn")

    def _check_eval_steps(self, steps):
        _check_eval_steps(steps)


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
