"""The command line (`python -m tpu_estimator_compat`): `run` a legacy program unmodified,
`check` which TF1 APIs a codebase uses."""
