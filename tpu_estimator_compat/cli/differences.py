"""The APIs `check` reports as supported with a documented difference: the section of
docs/compatibility.md that documents each, and the difference in one line."""

_KNOWN = "known-differences-from-the-original"
_CONTRIB = "tf1-module-paths-and-contrib-modules"

# v1-relative path -> docs/compatibility.md section (anchor) that documents how it differs.
DIFFERENCES = {
    "contrib.tpu.TPUEstimator": _KNOWN,
    "estimator.Estimator": _KNOWN,
    "estimator.train_and_evaluate": _KNOWN,
    "train.SessionRunHook": _KNOWN,
    "train.CheckpointSaverHook": _KNOWN,
    "train.CheckpointSaverListener": _KNOWN,
    "train.LoggingTensorHook": _KNOWN,
    "train.StopAtStepHook": _KNOWN,
    "train.SummarySaverHook": _KNOWN,
    "train.ProfilerHook": _KNOWN,
    "contrib.tpu.AsyncCheckpointSaverHook": _CONTRIB,
    "contrib.training.HParams": _CONTRIB,
}
# The difference of each DIFFERENCES entry, in one line (the docs section says more).
_HOOKS = ("runs once per device loop with TPU semantics (else every step), with replica 0's "
          "values; before_run's fetches are fixed at tracing")
DIFFERENCE_NOTES = {
    "contrib.tpu.TPUEstimator": "runs on tf.distribute strategies; evaluate(steps=None) "
                                "counts every example once; no graph.pbtxt; TPU embeddings "
                                "without sequence columns",
    "estimator.Estimator": "one device unless RunConfig(train_distribute=...); no graph.pbtxt",
    "estimator.train_and_evaluate": "no `ps` role (training is synchronous); the evaluator "
                                    "ends after the final checkpoint",
    "train.SessionRunHook": _HOOKS,
    "train.CheckpointSaverHook": "not called: its directory, timer and listeners drive the "
                                 "estimator's own saver",
    "train.CheckpointSaverListener": "called by the estimator's own saver",
    "train.LoggingTensorHook": _HOOKS,
    "train.StopAtStepHook": _HOOKS,
    "train.SummarySaverHook": _HOOKS,
    "train.ProfilerHook": _HOOKS,
    "contrib.tpu.AsyncCheckpointSaverHook": "saves synchronously, on the schedule a "
                                            "CheckpointSaverHook would",
    "contrib.training.HParams": "no hparam_def protocol buffers, no indexed assignments "
                                "(parse('a[1]=2'))",
}
