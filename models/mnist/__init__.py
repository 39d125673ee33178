"""MNIST on TPUEstimator, as the Cloud TPU guides describe it (see `mnist_tpu.py`)."""
