"""SIGTERM during `train()`: finish the loop in flight, checkpoint, and stop with an error.

Cloud TPU VMs and most schedulers announce preemption with SIGTERM. While training, the
handler only records the signal; the training driver checks it after every loop, saves a
checkpoint at that step and raises `TrainingPreemptedError` (a non-zero exit when uncaught).
Rerunning the program resumes from that checkpoint. TensorFlow's own
`PreemptionCheckpointHandler` is not used because it writes object-based checkpoints; ours
stay TF1 name-based.
"""
import contextlib
import signal
import threading

from tpu_estimator_compat import log as logging


class TrainingPreemptedError(RuntimeError):
    """Training stopped on SIGTERM after saving a checkpoint; rerun to resume."""


class PreemptionWatcher:
    """Records SIGTERM while training runs (main thread only; elsewhere it watches nothing)."""

    def __init__(self):
        self.requested = False

    def handle_signal(self, signum, frame):
        del frame
        if not self.requested:
            logging.warning("Received signal %d: training will save a checkpoint and stop at "
                            "the end of the current loop.", signum)
        self.requested = True


@contextlib.contextmanager
def watch_for_preemption():
    """Within the block SIGTERM sets `watcher.requested`; the previous handler comes back."""
    watcher = PreemptionWatcher()
    if threading.current_thread() is not threading.main_thread():
        yield watcher
        return
    previous = signal.signal(signal.SIGTERM, watcher.handle_signal)
    try:
        yield watcher
    finally:
        signal.signal(signal.SIGTERM, previous)


def preempted_error(step, checkpoint_path):
    where = (f"saved a checkpoint at step {step} ({checkpoint_path})" if checkpoint_path
             else f"stopped at step {step} (checkpointing is disabled: nothing was saved)")
    return TrainingPreemptedError(
        f"Training was preempted (SIGTERM) and {where}. Run the program again with the same "
        "model_dir to resume from there.")
