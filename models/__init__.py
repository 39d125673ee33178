"""Example programs written against `import tpu_estimator_compat.v1 as tf`."""
