"""The `worker` and `ps` tasks of parameter-server training: servers the chief drives.

In a TF_CONFIG cluster with `ps` tasks, the same program runs in every task, as with the
original; `train()` (and `train_and_evaluate`) in a `worker` or `ps` task starts this task's
`tf.distribute.Server` and serves: the chief's ClusterCoordinator runs the steps on the
workers and keeps the variables on the parameter servers (`engine/parameter_servers.py`).

The task returns once model_dir holds a checkpoint of step >= `max_steps` (the chief's last
one), so that the same program goes on as it did after the original's `train()`; without
`max_steps` it serves until it is stopped, as the original's `ps` tasks did (`server.join()`).
"""
import time

import tensorflow as tf

from tpu_estimator_compat import log as logging
from tpu_estimator_compat.state import sharing

_POLL_SECS = 1.0
_servers = []  # one per process: a task's server lives as long as the process


def serve(config, model_dir, max_steps):
    """Serves as TF_CONFIG's task `config.task_type`/`config.task_id` (see the module
    docstring); returns when training reached `max_steps`."""
    if not _servers:
        _servers.append(tf.distribute.Server(
            config.cluster_spec, job_name=config.task_type, task_index=config.task_id,
            protocol=config.protocol or "grpc", start=True))
        logging.info("Started the %s %d server of parameter-server training (%s); the chief "
                     "drives it.", config.task_type, config.task_id,
                     config.cluster_spec.task_address(config.task_type, config.task_id))
    if max_steps is None:
        logging.info("Serving until stopped (no max_steps).")
        _servers[0].join()
    logging.info("Serving until model_dir %s has a checkpoint of step >= %d.", model_dir,
                 max_steps)
    while (sharing.latest_step(model_dir) or 0) < max_steps:
        time.sleep(_POLL_SECS)
    logging.info("Training reached max_steps=%d: the %s task is done.", max_steps,
                 config.task_type)
