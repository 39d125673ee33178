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
      ModelDirAccessError: a remote model_dir (gs://...) cannot be reached.
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


class ModelDirAccessError(tf.errors.FailedPreconditionError):
    """model_dir's storage (e.g. Google Cloud Storage for gs://) cannot be reached or read."""

    def __init__(self, model_dir, cause):
        self.model_dir = model_dir
        self._cause = cause
        scheme = model_dir.split("://", 1)[0]
        if scheme == "gs":
            where = "on Google Cloud Storage"
            fix = ("Check this machine's network connection to storage.googleapis.com, and "
                   "its Google Cloud credentials: `gcloud auth application-default login`, or "
                   "GOOGLE_APPLICATION_CREDENTIALS naming a service-account key file, with "
                   "permission to read and write the bucket")
        else:
            where = f"on its {scheme}:// file system"
            fix = (f"Check the network connection to that storage and the credentials "
                   f"TensorFlow's {scheme}:// file system uses")
        super().__init__(
            None, None,
            f"Cannot reach model_dir {model_dir} {where}: {cause}. {fix}; or use a local "
            "model_dir.")

    def __reduce__(self):
        return type(self), (self.model_dir, self._cause)


def _require_not_a_file(model_dir):
    if model_dir and "://" in model_dir:
        try:
            is_file = tf.io.gfile.exists(model_dir) and not tf.io.gfile.isdir(model_dir)
        except tf.errors.OpError as error:
            cause = " ".join(str(getattr(error, "message", error)).split())
            raise ModelDirAccessError(model_dir, cause) from None
    else:
        is_file = model_dir and tf.io.gfile.exists(model_dir) and not tf.io.gfile.isdir(
            model_dir)
    if is_file:
        raise ValueError(
            f"model_dir {model_dir} is a file, not a directory: checkpoints, summaries and "
            "evaluation results go into it. Pass a directory path (it is created if missing), "
            "e.g. the directory a checkpoint's files are in.")
