"""TF1 / `tf.contrib` APIs TensorFlow 2.21 no longer ships, rebuilt (or tf-slim repaired) with
TF1 semantics: contrib layers, batch norm, initializers, regularizers and variable helpers,
HParams, AsyncCheckpointSaverHook, early stopping, InMemoryEvaluatorHook, the TPU system
calls for a simulated TPU, contrib.learn's downloader. `v1/`'s name tables serve them at
their TF1 paths."""
