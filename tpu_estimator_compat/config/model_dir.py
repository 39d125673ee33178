"""The estimator's `model_dir` policy: its argument, its config's, or a temporary directory."""
import tempfile

import tensorflow as tf

from tpu_estimator_compat import log as logging
from tpu_estimator_compat.config.run_config import RunConfig, path_to_str


def resolve_model_dir(config, model_dir):
    """Reconciles an estimator's `model_dir` argument with its config, as Estimator did.

    Args:
      config: a `RunConfig`, or None for the default one.
      model_dir: the estimator constructor's `model_dir` (str, PathLike or None).

    Returns:
      A `RunConfig` whose `model_dir` is set: the given one, the config's, or a new
      temporary directory (with a warning) when neither is set.

    Raises:
      ValueError: if both are set and differ, or model_dir is a file.
    """
    if config is None:
        logging.info("Using default config.")
        config = RunConfig()
    if not isinstance(config, RunConfig):
        raise ValueError(f"config must be an instance of `RunConfig`, but provided {config}.")
    model_dir = path_to_str(model_dir)
    if model_dir is not None and config.model_dir is not None and config.model_dir != model_dir:
        raise ValueError(
            "`model_dir` are set both in constructor and `RunConfig`, but with different "
            f"values. In constructor: '{model_dir}', in `RunConfig`: '{config.model_dir}' "
            "Pass it in only one place, or the same value in both.")
    _require_not_a_file(model_dir or config.model_dir)
    if model_dir:
        return config.replace(model_dir=model_dir)
    if config.model_dir is None:
        temp_dir = tempfile.mkdtemp()
        logging.warning("Using temporary folder as model directory: %s", temp_dir)
        return config.replace(model_dir=temp_dir)
    return config


def _require_not_a_file(model_dir):
    if model_dir and tf.io.gfile.exists(model_dir) and not tf.io.gfile.isdir(model_dir):
        raise ValueError(
            f"model_dir {model_dir} is a file, not a directory: checkpoints, summaries and "
            "evaluation results go into it. Pass a directory path (it is created if missing), "
            "e.g. the directory a checkpoint's files are in.")
