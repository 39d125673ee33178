"""When and where a train() call writes checkpoints: RunConfig's schedule or the user's
CheckpointSaverHooks, with their CheckpointSaverListeners.

Checkpoints are written at the start (the initial step), every `save_checkpoints_steps`
(rounded up to loop boundaries) or `save_checkpoints_secs`, and at the end, as the original.
Each has its `.meta` graph (model_fn called once more, in a TF1 graph). The initial
checkpoint's `.meta` is written after the first loop when no CheckpointSaverListener watches
the saves (`write_deferred_meta_graph`): nothing in the process can see it before, and building
it was a quarter of the time to the first step of a deep model. With listeners it is written
with the checkpoint, before their `after_save`, as TF1's CheckpointSaverHook did.
A `CheckpointSaverHook` among the hooks replaces that schedule ("Bypassing TPUEstimator
hook"): its directory, `save_steps`/`save_secs` timer and listeners are used, with this
module's saver (the hook's own `Saver` needs a Session). Listeners get the `SessionStandIn`.
No checkpoint is written from NaN/Inf weights (`NanLossDuringTrainingError` instead), nor
from replicas whose copies of a synchronized variable differ (`ReplicaDriftError`,
engine/replica_sync.py).

With several workers every save is decided by the chief and only the chief writes
(`multi_worker.py`).
"""
import os
import time

import tensorflow as tf

from tpu_estimator_compat import log as logging
from tpu_estimator_compat.host import multi_worker
from tpu_estimator_compat.host.nan_loss import NanLossDuringTrainingError
from tpu_estimator_compat.state import checkpoints
from tpu_estimator_compat.tf_internals import training as tf_training


def checkpoint_savers(engine, config, model_dir, hook_run, saving_listeners, meta_graph,
                      lock=None, replica_sync=None):
    """The call's checkpoint savers: the user's CheckpointSaverHooks if any, else RunConfig's.

    `meta_graph()` gives the serialized MetaGraphDef written beside each checkpoint, or None.
    `lock`: the chief's `sharing.TrainerLock` of model_dir, checked before each save there.
    `replica_sync`: the step's `replica_sync.ReplicaSync`, verified before each save.

    Raises:
      ValueError: saving_listeners were given but nothing saves checkpoints (as Estimator).
    """
    saver_hooks = hook_run.checkpoint_saver_hooks
    schedule = _CheckpointSchedule(config, engine.global_step)
    if saver_hooks:
        if schedule.enabled:
            logging.info("Bypassing TPUEstimator hook")
        return [_HookSaves(engine, hook, config, model_dir, hook_run.session,
                           list(saving_listeners) if index == 0 else [], meta_graph, lock,
                           replica_sync)
                for index, hook in enumerate(saver_hooks)]
    if not schedule.enabled:
        if saving_listeners:
            raise ValueError(
                "There should be a CheckpointSaverHook to use saving_listeners. Please set "
                "one of the RunConfig.save_checkpoints_steps or "
                "RunConfig.save_checkpoints_secs.")
        return []
    saver = _make_saver(engine, model_dir, config.keep_checkpoint_max,
                        config.keep_checkpoint_every_n_hours)
    return [_ConfigSaves(engine, schedule, saver, model_dir, hook_run.session,
                         saving_listeners, model_dir, meta_graph, lock, replica_sync)]


class _CheckpointSchedule:
    """When checkpoints are due: every N steps (at loop ends) or every N seconds."""

    def __init__(self, config, start_step):
        self._every_steps = config.save_checkpoints_steps
        self._every_secs = config.save_checkpoints_secs
        self._last_step = start_step
        self._last_time = time.time()

    @property
    def enabled(self):
        return bool(self._every_steps or self._every_secs)

    def due(self, step):
        if self._every_steps:
            return step >= self._last_step + self._every_steps
        return bool(self._every_secs) and time.time() >= self._last_time + self._every_secs

    def next_due(self):
        """The step at which a save is due (None: saves by time or never)."""
        return self._last_step + self._every_steps if self._every_steps else None

    def saved(self, step):
        self._last_step, self._last_time = step, time.time()


def _make_saver(engine, directory, max_to_keep, keep_checkpoint_every_n_hours):
    if not engine.runtime.is_chief:
        return multi_worker.NonChiefSaver(directory)
    return checkpoints.CheckpointSaver(
        directory, max_to_keep=max_to_keep,
        keep_checkpoint_every_n_hours=keep_checkpoint_every_n_hours)


def _path(model_dir, step):
    return f"{model_dir.rstrip('/')}/{checkpoints.CHECKPOINT_BASENAME}-{step}"


class _Saves:
    """One series of checkpoints in one train() call: a saver, a directory, listeners.

    start() saves the initial step (unless it is already the latest checkpoint), after_loop()
    saves when due and returns whether a listener's after_save() asked to stop, end() saves
    the final step and ends the listeners. With several workers every save is decided by
    the chief (`_decide`) and only the chief writes and has listeners.
    """

    def __init__(self, engine, saver, directory, session, listeners, model_dir, meta_graph,
                 lock, replica_sync):
        self._engine = engine
        self._replica_sync = replica_sync
        self._meta_graph = meta_graph
        self._saver = saver
        self._directory = directory
        self._session = session
        self._workers = multi_worker.WorkerGroup(engine.runtime)
        self._listeners = list(listeners) if self._workers.is_chief else []
        self._is_model_dir = os.path.abspath(directory) == os.path.abspath(model_dir)
        self._lock = lock if self._is_model_dir else None
        self._deferred_meta = None  # the initial checkpoint's path while its .meta is due

    def _decide(self, due):
        """The chief's `due` on every worker (their clocks and file views may differ)."""
        return self._workers.from_chief(bool(due))[0] > 0

    def start(self, step):
        for listener in self._listeners:
            listener.begin()
        if self._decide(not self._is_latest(step)):
            # No step of this call has run: the replicas' copies are what the variables were
            # created, restored or last verified as, so the check (a program over every
            # replica's variables, slow to build for a deep model) waits for the next save.
            self._save(step, defer_meta=not self._listeners, check_replicas=False)

    def write_deferred_meta_graph(self):
        """Writes the `.meta` of the initial checkpoint if `start` deferred it (and the
        checkpoint is still kept)."""
        path, self._deferred_meta = self._deferred_meta, None
        if path is None:
            return
        meta_graph = self._meta_graph()
        if meta_graph:
            if self._lock is not None:
                self._lock.check()
            self._saver.write_meta_graph(path, meta_graph)

    def end(self, step):
        self.write_deferred_meta_graph()
        if self._decide(self._final_save_due(step) and not self._is_latest(step)):
            self._save(step)
        for listener in self._listeners:
            listener.end(self._session, step)

    def _final_save_due(self, step):
        return True

    def next_stop(self):
        """The step at which a save is due, for loops that end there (None: not by step)."""
        return None

    def _is_latest(self, step):
        return checkpoints.latest_checkpoint(self._directory) == _path(self._directory, step)

    def _save(self, step, defer_meta=False, check_replicas=True):
        self.write_deferred_meta_graph()
        if check_replicas and self._replica_sync is not None:  # every worker (a collective)
            self._replica_sync.verify(step, checkpoints.latest_checkpoint(self._directory))
        named_variables = self._engine.store.named_variables()
        non_finite = checkpoints.non_finite_variables(named_variables)
        if non_finite:  # the same on every worker: the variables are mirrored
            raise NanLossDuringTrainingError(
                step, step, checkpoints.latest_checkpoint(self._directory), non_finite,
                untrained=[name for name in non_finite if not named_variables[name].trainable])
        for listener in self._listeners:
            listener.before_save(self._session, step)
        if self._lock is not None:
            self._lock.check()  # a second trainer took model_dir over: stop before writing
        logging.info("Saving checkpoints for %d into %s.", step,  # the original's words
                     os.path.join(self._directory, "model.ckpt"))
        try:
            with logging.phase("saving checkpoint %d", step):
                path = self._saver.save(
                    self._engine.store.named_variables(), step,
                    meta_graph=None if defer_meta else self._meta_graph())
        except (tf.errors.UnavailableError, tf.errors.AbortedError):
            raise  # a peer holding the values failed (training.py explains), not the disk
        except (tf.errors.OpError, OSError) as error:
            if self._lock is not None:
                self._lock.check()  # its clean-up deleted our temporary files
            # The message names the cause; its TensorFlow traceback adds nothing.
            raise checkpoints.CheckpointWriteError(self._directory, step, error) from None
        if self._is_model_dir:
            self._engine.mark_synced(path)
        if defer_meta and self._workers.is_chief:
            self._deferred_meta = path
        stop = False
        for listener in self._listeners:
            if listener.after_save(self._session, step):
                logging.info("A CheckpointSaverListener requested that training be stopped. "
                             "listener: %s", listener)
                stop = True
        return stop


class _ConfigSaves(_Saves):
    """RunConfig's schedule: every save_checkpoints_steps (at loop ends) or _secs."""

    def __init__(self, engine, schedule, saver, directory, session, listeners, model_dir,
                 meta_graph, lock, replica_sync):
        super().__init__(engine, saver, directory, session, listeners, model_dir, meta_graph,
                         lock, replica_sync)
        self._schedule = schedule

    def next_stop(self):
        return self._schedule.next_due()

    def after_loop(self, step, final):
        if self._decide(self._schedule.due(step) and not final):
            self._schedule.saved(step)
            return self._save(step)
        return False


class _HookSaves(_Saves):
    """A user's CheckpointSaverHook: its directory, timer (save_steps/save_secs, checked at
    loop ends) and listeners, and the retention of its Saver if it was given one."""

    def __init__(self, engine, hook, config, model_dir, session, extra_listeners, meta_graph,
                 lock, replica_sync):
        directory, save_path, user_saver, listeners, self._timer = \
            tf_training.checkpoint_saver_hook_fields(hook)
        basename = os.path.basename(save_path)
        if basename != checkpoints.CHECKPOINT_BASENAME:
            raise NotImplementedError(
                f"CheckpointSaverHook(checkpoint_basename={basename!r}): tpu_estimator_compat "
                f"writes checkpoints named {checkpoints.CHECKPOINT_BASENAME}-<step> only. "
                "Use the default checkpoint_basename.")
        saver = _make_saver(engine, directory, *tf_training.saver_retention(
            user_saver, config.keep_checkpoint_max, config.keep_checkpoint_every_n_hours))
        super().__init__(engine, saver, directory, session,
                         listeners + list(extra_listeners), model_dir, meta_graph, lock,
                         replica_sync)

    def start(self, step):
        super().start(step)
        self._timer.update_last_triggered_step(step)

    def next_stop(self):
        every = tf_training.timer_every_steps(self._timer)
        last = self._timer.last_triggered_step()
        return None if not every or last is None else last + every

    def after_loop(self, step, final):
        del final
        if self._decide(self._timer.should_trigger_for_step(step)):
            self._timer.update_last_triggered_step(step)
            return self._save(step)
        return False

    def _final_save_due(self, step):
        return step != self._timer.last_triggered_step()
