"""`train_and_evaluate(estimator, train_spec, eval_spec)`: the original's task roles.

| TF_CONFIG task                  | does                                                | returns |
|---------------------------------|-----------------------------------------------------|---------|
| none (no cluster)               | trains, evaluating each new checkpoint (local loop) | results |
| `chief` / `worker` in a cluster | trains only (the `evaluator` task evaluates); with  | None    |
|                                 | `ps` tasks the chief coordinates, workers serve     |         |
| `master` in a cluster           | trains, evaluating each new checkpoint              | None    |
| `evaluator` (index 0)           | evaluates each new checkpoint until the final one   | None    |
| `ps` (parameter-server training)| serves until training reaches `max_steps`           | None    |

The local loop: training runs in one `train()` call and an evaluation follows each new
checkpoint, from a saving listener:

    estimator.train(train_spec.input_fn, max_steps=train_spec.max_steps,
                    hooks=train_spec.hooks,
                    saving_listeners=train_spec.saving_listeners + [evaluate_after_save])
      after_save(step):  skip the checkpoint training started from; else, unless the last
                         evaluation was less than `throttle_secs` ago:
                           evaluate(checkpoint) -> exporters
      end(step):         evaluate the final checkpoint if it was not evaluated yet
    return (the last evaluation's results, the last exporters' results)

So evaluations follow the checkpoint schedule (`save_checkpoints_steps`/`_secs`) and run on
the same estimator: the variables are in memory, nothing is restored, nothing retraced.

The evaluator task (`_run_evaluator`, the usual Cloud TPU set-up: a second job evaluates
while training runs): waits `start_delay_secs`, then evaluates the latest checkpoint when it
is new, runs the exporters after each evaluation, and waits until `throttle_secs` have
passed since the start of the pass; it ends once it has evaluated a checkpoint of step >=
`max_steps` (never without `max_steps`, as in the original). Its evaluation events go to
`eval_dir(name)` and its exports to `model_dir/export/<exporter>`. `LatestExporter` and
`FinalExporter` are provided.
"""
import collections
import os
import time

import tensorflow as tf

from tpu_estimator_compat.config import run_config
from tpu_estimator_compat.state import checkpoints
from tpu_estimator_compat.state import sharing
from tpu_estimator_compat.host import hooks as hooks_lib
from tpu_estimator_compat import log as logging
from tpu_estimator_compat.estimator import Estimator


class TrainSpec(collections.namedtuple(
        "TrainSpec", ["input_fn", "max_steps", "hooks", "saving_listeners"])):
    """What `train_and_evaluate` trains: `input_fn`, up to `max_steps` (None: until the
    input ends), with `hooks` (SessionRunHooks) and `saving_listeners`.

    Raises:
      TypeError, ValueError: with the original's messages.
    """

    __slots__ = ()

    def __new__(cls, input_fn, max_steps=None, hooks=None, saving_listeners=None):
        _check_input_fn(input_fn)
        if max_steps is not None and max_steps <= 0:
            raise ValueError(f"Must specify max_steps > 0, given: {max_steps}")
        return super().__new__(
            cls, input_fn=input_fn, max_steps=max_steps,
            hooks=hooks_lib.validate_hooks(hooks),
            saving_listeners=hooks_lib.validate_saving_listeners(saving_listeners))


class EvalSpec(collections.namedtuple("EvalSpec", [
        "input_fn", "steps", "name", "hooks", "exporters", "start_delay_secs",
        "throttle_secs"])):
    """How `train_and_evaluate` evaluates: `evaluate(input_fn, steps, hooks, name=name)` after
    a new checkpoint at most every `throttle_secs`, then `exporters` (one or a list of
    objects with a `name` and `export(estimator, export_path, checkpoint_path, eval_result,
    is_the_final_export)`).

    Raises:
      TypeError, ValueError: with the original's messages.
    """

    __slots__ = ()

    def __new__(cls, input_fn, steps=100, name=None, hooks=None, exporters=None,
                start_delay_secs=120, throttle_secs=600):
        _check_input_fn(input_fn)
        if steps is not None and steps <= 0:
            raise ValueError(f"Must specify steps > 0, given: {steps}")
        if name is not None and not isinstance(name, str):
            raise TypeError(f"`name` must be string, given: {name}")
        if start_delay_secs < 0:
            raise ValueError(f"Must specify start_delay_secs >= 0, given: {start_delay_secs}")
        if throttle_secs < 0:
            raise ValueError(f"Must specify throttle_secs >= 0, given: {throttle_secs}")
        return super().__new__(
            cls, input_fn=input_fn, steps=steps, name=name, hooks=hooks_lib.validate_hooks(hooks),
            exporters=_validated_exporters(exporters), start_delay_secs=start_delay_secs,
            throttle_secs=throttle_secs)


def _check_input_fn(input_fn):
    if not callable(input_fn):
        raise TypeError(f"`input_fn` must be callable, given: {input_fn}")


def _validated_exporters(exporters):
    if exporters is None:
        return ()
    if hasattr(exporters, "export"):
        exporters = [exporters]
    try:
        exporters = tuple(exporters)
    except TypeError:
        raise TypeError("`exporters` must be an Exporter, an iterable of Exporter, or `None`, "
                        f"found {exporters}.") from None
    names = set()
    for exporter in exporters:
        if not callable(getattr(exporter, "export", None)):
            raise TypeError("`exporters` must be an Exporter, an iterable of Exporter, or "
                            f"`None`, found {exporter}.")
        name = getattr(exporter, "name", None)
        if not name or not isinstance(name, str):
            raise ValueError(f"An Exporter must have a non-empty string name, got {name!r} "
                             f"({exporter}).")
        if name in names:
            raise ValueError("`exporters` must have unique names. Such a name cannot be "
                             f"`None`. {name} already exists.")
        names.add(name)
    return exporters


def train_and_evaluate(estimator, train_spec, eval_spec):
    """Trains `estimator` and evaluates (and exports) it after its checkpoints, locally.

    Args:
      estimator: an `Estimator` or `TPUEstimator`.
      train_spec: a `TrainSpec`.
      eval_spec: an `EvalSpec`.

    Returns:
      Without a TF_CONFIG cluster, `(eval_result, export_results)`: the last evaluation's
      dict and the list of what each exporter returned then; `(None, None)` when nothing
      was evaluated (e.g. `max_steps` was already reached). In a cluster (and in the
      evaluator task) None, as the original.

    Raises:
      TypeError: an argument of the wrong type.
      ValueError: an `evaluator` task of index > 0 (the original's message).
    """
    if not isinstance(estimator, Estimator):
        raise TypeError(f"`estimator` must have type `tf.estimator.Estimator`. Got: "
                        f"{type(estimator)}")
    if not isinstance(train_spec, TrainSpec):
        raise TypeError(f"`train_spec` must have type `tf.estimator.TrainSpec`. Got: "
                        f"{type(train_spec)}")
    if not isinstance(eval_spec, EvalSpec):
        raise TypeError(f"`eval_spec` must have type `tf.estimator.EvalSpec`. Got: "
                        f"{type(eval_spec)}")
    config = estimator.config
    if config.task_type == "evaluator":
        if config.task_id > 0:
            raise ValueError(
                "For distributed training, there can only be one `evaluator` task (with task "
                f"id 0).  Given task id {config.task_id}")
        _run_evaluator(estimator, train_spec, eval_spec)
        return None
    distributed = bool(run_config.cluster_spec_for(config, getattr(estimator, "_use_tpu", True)))
    if distributed and config.task_type in ("chief", "worker", "ps"):
        logging.info("train_and_evaluate in TF_CONFIG task %s %d: %s; the 'evaluator' task, "
                     "if any, evaluates the checkpoints.", config.task_type, config.task_id,
                     "training only" if config.task_type == "chief" or not
                     config.num_ps_replicas else "serving the chief's parameter-server training")
        estimator.train(train_spec.input_fn, max_steps=train_spec.max_steps,
                        hooks=train_spec.hooks, saving_listeners=train_spec.saving_listeners)
        return None
    results = _train_evaluating_each_checkpoint(estimator, train_spec, eval_spec)
    return None if distributed else results


def _train_evaluating_each_checkpoint(estimator, train_spec, eval_spec):
    """The local loop (see the module docstring)."""
    config = estimator.config
    logging.info("Running training and evaluation locally (non-distributed).")
    logging.info("Start train and evaluate loop. The evaluate will happen after every "
                 "checkpoint. Checkpoint frequency is determined based on RunConfig arguments: "
                 "save_checkpoints_steps %s or save_checkpoints_secs %s.",
                 config.save_checkpoints_steps, config.save_checkpoints_secs)
    latest = estimator.latest_checkpoint()
    start_step = int(checkpoints.load_variable(latest, "global_step")) if latest else 0
    listener = _EvaluateAfterSave(estimator, eval_spec, train_spec.max_steps, start_step)
    estimator.train(train_spec.input_fn, max_steps=train_spec.max_steps, hooks=train_spec.hooks,
                    saving_listeners=list(train_spec.saving_listeners) + [listener])
    return listener.eval_result, listener.export_results


class _Evaluator:
    """Evaluates a checkpoint, then runs the exporters on the result."""

    def __init__(self, estimator, eval_spec, max_steps):
        self._estimator = estimator
        self._eval_spec = eval_spec
        self._max_steps = max_steps
        self.eval_result = None
        self.export_results = None

    def evaluate_and_export(self, checkpoint):
        spec = self._eval_spec
        self.eval_result = self._estimator.evaluate(
            spec.input_fn, steps=spec.steps, hooks=spec.hooks, checkpoint_path=checkpoint,
            name=spec.name)
        export_dir_base = os.path.join(self._estimator.model_dir, "export")
        self.export_results = [
            exporter.export(estimator=self._estimator,
                            export_path=os.path.join(export_dir_base, exporter.name),
                            checkpoint_path=checkpoint, eval_result=self.eval_result,
                            is_the_final_export=self.reached_max_steps())
            for exporter in spec.exporters]
        return self.eval_result

    def reached_max_steps(self):
        return bool(self._max_steps and self.eval_result is not None
                    and self.eval_result["global_step"] >= self._max_steps)


def _run_evaluator(estimator, train_spec, eval_spec):
    """The `evaluator` task's loop (see the module docstring)."""
    if eval_spec.start_delay_secs:
        logging.info("Waiting %f secs before starting eval.", eval_spec.start_delay_secs)
        time.sleep(eval_spec.start_delay_secs)
    evaluator = _Evaluator(estimator, eval_spec, train_spec.max_steps)
    evaluated = None
    last_warning = {}
    while True:
        start = time.time()
        latest = estimator.latest_checkpoint()
        if latest is None or latest == evaluated:
            _warn_every_10_minutes(last_warning, (
                "Estimator is not trained yet. Will start an evaluation when a checkpoint is "
                "ready." if latest is None else
                "No new checkpoint ready for evaluation. Skip the current evaluation pass as "
                "evaluation results are expected to be same for the same checkpoint."))
        else:
            last_warning.clear()
            try:
                evaluator.evaluate_and_export(latest)
            except sharing.CheckpointDeletedError:
                logging.warning("Checkpoint %s was deleted by the trainer's retention before "
                                "it could be evaluated; evaluating the newest one instead.",
                                latest)
                continue
            evaluated = latest
            if evaluator.reached_max_steps():
                logging.info("Exiting evaluation, global_step=%s >= train max_steps=%s",
                             evaluator.eval_result["global_step"], train_spec.max_steps)
                return
        wait = eval_spec.throttle_secs - (time.time() - start)
        if wait > 0:
            logging.info("Waiting %f secs before starting next eval run.", wait)
            time.sleep(wait)
        elif eval_spec.throttle_secs == 0 and latest == evaluated:
            _warn_every_10_minutes(last_warning, (
                "EvalSpec.throttle_secs is set as 0. This might overload the job before "
                "finding (next) new checkpoint. Please consider to increase it."))


def _warn_every_10_minutes(last_warning, message):
    now = time.time()
    if now - last_warning.get(message, -float("inf")) > 600:
        logging.warning(message)
        last_warning[message] = now


class _EvaluateAfterSave(tf.compat.v1.train.CheckpointSaverListener):
    """Evaluates (and exports) after new checkpoints, throttled; see the module docstring."""

    def __init__(self, estimator, eval_spec, max_steps, start_step):
        self._estimator = estimator
        self._eval_spec = eval_spec
        self._evaluator = _Evaluator(estimator, eval_spec, max_steps)
        self._start_step = start_step
        self._last_eval_time = None
        self._last_evaluated_step = None

    @property
    def eval_result(self):
        return self._evaluator.eval_result

    @property
    def export_results(self):
        return self._evaluator.export_results

    def after_save(self, session, global_step_value):
        del session
        if global_step_value == self._start_step:  # nothing trained since this checkpoint
            return False
        throttle = self._eval_spec.throttle_secs
        if self._last_eval_time is not None and time.time() - self._last_eval_time < throttle:
            logging.info("Skip the current checkpoint eval due to throttle secs (%s secs).",
                         throttle)
            return False
        self._evaluate(global_step_value)
        return False

    def end(self, session, global_step_value):
        del session
        if (global_step_value != self._last_evaluated_step
                and global_step_value != self._start_step):
            self._evaluate(global_step_value)

    def _evaluate(self, global_step_value):
        self._last_eval_time = time.time()
        self._last_evaluated_step = global_step_value
        self._evaluator.evaluate_and_export(self._estimator.latest_checkpoint())


class Exporter:
    """The exporter interface of `EvalSpec.exporters` (any object with these two works)."""

    @property
    def name(self):
        raise NotImplementedError

    def export(self, estimator, export_path, checkpoint_path, eval_result,
               is_the_final_export):
        """Exports the model; returns what train_and_evaluate reports (e.g. the path)."""
        raise NotImplementedError


class _SavedModelExporter(Exporter):
    def __init__(self, name, serving_input_receiver_fn, assets_extra=None, as_text=False):
        if not name:
            raise ValueError(f"An Exporter must have a non-empty name, got {name!r}.")
        self._name = name
        self._serving_input_receiver_fn = serving_input_receiver_fn
        self._assets_extra = assets_extra
        self._as_text = as_text

    @property
    def name(self):
        return self._name

    def _export(self, estimator, export_path, checkpoint_path):
        return estimator.export_saved_model(
            export_path, self._serving_input_receiver_fn, assets_extra=self._assets_extra,
            as_text=self._as_text, checkpoint_path=checkpoint_path)


class FinalExporter(_SavedModelExporter):
    """Exports a SavedModel once, after the final evaluation (under `export/<name>/`)."""

    def export(self, estimator, export_path, checkpoint_path, eval_result,
               is_the_final_export):
        if not is_the_final_export:
            return None
        logging.info("Performing the final export in the end of training.")
        return self._export(estimator, export_path, checkpoint_path)


class LatestExporter(_SavedModelExporter):
    """Exports a SavedModel after every evaluation, keeping the newest `exports_to_keep`."""

    def __init__(self, name, serving_input_receiver_fn, assets_extra=None, as_text=False,
                 exports_to_keep=5):
        super().__init__(name, serving_input_receiver_fn, assets_extra, as_text)
        if exports_to_keep is not None and exports_to_keep <= 0:
            raise ValueError("`exports_to_keep`, if provided, must be a positive number. Got "
                             f"{exports_to_keep}")
        self._exports_to_keep = exports_to_keep

    def export(self, estimator, export_path, checkpoint_path, eval_result,
               is_the_final_export):
        path = self._export(estimator, export_path, checkpoint_path)
        if self._exports_to_keep is not None:
            versions = sorted(int(entry.rstrip("/"))
                              for entry in tf.io.gfile.listdir(export_path)
                              if entry.rstrip("/").isdigit())
            for version in versions[:-self._exports_to_keep]:
                tf.io.gfile.rmtree(os.path.join(export_path, str(version)))
        return path

